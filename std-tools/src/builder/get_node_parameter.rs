//! `get_node_parameter`: reads one parameter value of a node, for values the workflow JSON
//! shown to the model omits (`<value omitted - use get_node_parameter tool>`).
//!
//! Arguments: `{"nodeId", "path"}` with lodash-style paths: `url`,
//! `headerParameters.parameters[0].value`, `options["key.with.dots"]` (a leading `parameters.`
//! is accepted). Answers `Parameter "path" of node "X":` and the value (strings verbatim, other
//! values as pretty JSON), capped at [`MAX_PARAMETER_VALUE_LENGTH`] characters.

use super::state::{codes, current_workflow, depends_on_batch, find_node, req_str};
use crate::catalogue::Catalogue;
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Longest value returned, in characters.
pub const MAX_PARAMETER_VALUE_LENGTH: usize = 30_000;

/// One step of a parameter path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    /// An object key (or, on an array, an index written as digits).
    Key(String),
    /// An array index (`[0]`).
    Index(usize),
}

/// Parses `a.b[0].c` / `a["x.y"]` into segments; `None` when it is malformed.
pub fn parse_path(path: &str) -> Option<Vec<PathSegment>> {
    let chars: Vec<char> = path.trim().chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut key = String::new();
    let mut after_bracket = false;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                if key.is_empty() && !after_bracket {
                    return None;
                }
                if !key.is_empty() {
                    out.push(PathSegment::Key(std::mem::take(&mut key)));
                }
                after_bracket = false;
                i += 1;
                if i == chars.len() {
                    return None;
                }
            }
            '[' => {
                if !key.is_empty() {
                    out.push(PathSegment::Key(std::mem::take(&mut key)));
                }
                let close = chars[i..].iter().position(|&c| c == ']')? + i;
                let inner: String = chars[i + 1..close].iter().collect();
                let inner = inner.trim();
                let quoted = inner.len() >= 2
                    && ((inner.starts_with('"') && inner.ends_with('"'))
                        || (inner.starts_with('\'') && inner.ends_with('\'')));
                if quoted {
                    out.push(PathSegment::Key(inner[1..inner.len() - 1].to_string()));
                } else {
                    out.push(PathSegment::Index(inner.parse().ok()?));
                }
                after_bracket = true;
                i = close + 1;
            }
            ']' => return None,
            c => {
                if after_bracket {
                    return None;
                }
                key.push(c);
                i += 1;
            }
        }
    }
    if !key.is_empty() {
        out.push(PathSegment::Key(key));
    }
    if out.is_empty() {
        None
    } else {
        Some(out)
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let keys: Vec<&str> = m.keys().map(String::as_str).take(30).collect();
            format!("an object with keys [{}]", keys.join(", "))
        }
        Value::Array(a) => format!("an array of {} item(s)", a.len()),
        Value::String(_) => "a string".into(),
        Value::Number(_) => "a number".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Null => "null".into(),
    }
}

/// The value at `segments` in `parameters`, or a message saying where the walk stopped.
pub fn lookup<'a>(
    parameters: &'a Map<String, Value>,
    segments: &[PathSegment],
) -> Result<&'a Value, String> {
    let mut cur: Option<&Value> = None;
    let mut walked = String::new();
    for seg in segments {
        let next = match (cur, seg) {
            (None, PathSegment::Key(k)) => parameters.get(k),
            (None, PathSegment::Index(_)) => None,
            (Some(Value::Object(m)), PathSegment::Key(k)) => m.get(k),
            (Some(Value::Array(a)), PathSegment::Index(i)) => a.get(*i),
            (Some(Value::Array(a)), PathSegment::Key(k)) => {
                k.parse::<usize>().ok().and_then(|i| a.get(i))
            }
            _ => None,
        };
        let Some(next) = next else {
            let here = match cur {
                None => {
                    let keys: Vec<&str> = parameters.keys().map(String::as_str).take(30).collect();
                    format!("the node's parameters have keys [{}]", keys.join(", "))
                }
                Some(v) => format!("`{walked}` is {}", describe(v)),
            };
            return Err(here);
        };
        match seg {
            PathSegment::Key(k) if walked.is_empty() => walked.push_str(k),
            PathSegment::Key(k) => {
                walked.push('.');
                walked.push_str(k);
            }
            PathSegment::Index(i) => walked.push_str(&format!("[{i}]")),
        }
        cur = Some(next);
    }
    cur.ok_or_else(|| "empty path".to_string())
}

/// The `get_node_parameter` tool.
#[derive(Debug, Clone)]
pub struct GetNodeParameter {
    #[allow(dead_code)]
    catalogue: Arc<Catalogue>,
}

impl GetNodeParameter {
    /// The tool (the catalogue is kept for symmetry with the other builder tools).
    pub fn new(catalogue: Arc<Catalogue>) -> Self {
        GetNodeParameter { catalogue }
    }
}

#[async_trait]
impl Tool for GetNodeParameter {
    fn name(&self) -> &str {
        "get_node_parameter"
    }

    fn description(&self) -> &str {
        "Get the full value of one parameter of a node, e.g. when the workflow shows \
         `<value omitted - use get_node_parameter tool>`. Path syntax: `url`, \
         `headerParameters.parameters[0].value`, `options.includeOtherFields`. Values longer \
         than 30000 characters are refused: ask for a deeper path."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "nodeId": {"type": "string", "description": "ID of the node."},
                "path": {"type": "string", "description": "Path of the parameter, e.g. headerParameters.parameters[0].value."}
            },
            "required": ["nodeId", "path"]
        })
    }

    fn rerun_after_batch(&self, error: &ToolError) -> bool {
        depends_on_batch(error)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let key = req_str(&args, "nodeId")?;
        let path = req_str(&args, "path")?;
        let mut segments = parse_path(path).ok_or_else(|| {
            ToolError::new(
                codes::INVALID_PATH,
                format!(
                    "path \"{path}\" is not valid; use dots between keys and [n] for array \
                     items, e.g. `headerParameters.parameters[0].value`"
                ),
            )
        })?;
        let wf = current_workflow(ctx)?;
        let node = find_node(&wf, key, "nodeId")?;
        if segments.len() > 1
            && segments[0] == PathSegment::Key("parameters".into())
            && !node.parameters.contains_key("parameters")
        {
            segments.remove(0);
        }
        let value = lookup(&node.parameters, &segments).map_err(|where_| {
            ToolError::new(
                codes::PARAMETER_NOT_FOUND,
                format!(
                    "node \"{}\" has no parameter at path \"{path}\": {where_}",
                    node.name
                ),
            )
        })?;
        let formatted = match value {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        };
        let len = formatted.chars().count();
        if len > MAX_PARAMETER_VALUE_LENGTH {
            return Err(ToolError::new(
                codes::PARAMETER_TOO_LARGE,
                format!(
                    "Parameter value at path \"{path}\" exceeds maximum length of \
                     {MAX_PARAMETER_VALUE_LENGTH} characters ({len}); request a deeper path \
                     (e.g. \"{path}[0]\" or \"{path}.someKey\")"
                ),
            ));
        }
        Ok(ToolOutput::text(format!(
            "Parameter \"{path}\" of node \"{}\":\n{formatted}",
            node.name
        )))
    }
}
