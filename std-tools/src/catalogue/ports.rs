//! Port resolution: static lists map directly; `={{ … }}` expressions are evaluated with an
//! embedded QuickJS engine against `$parameter` (node parameters over property defaults) and
//! `$nodeVersion`.

use std::cell::{Cell, RefCell};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::display::parameters_with_defaults;
use super::types::{NodeTypeDescription, PortsSpec};

/// One input or output port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Port {
    /// Connection type: `main`, `ai_tool`, `ai_languageModel`, …
    pub kind: String,
    /// Label, when the description gives a non-empty one.
    pub display_name: Option<String>,
    /// Whether a connection is required.
    pub required: bool,
    /// Maximum number of connections.
    pub max_connections: Option<u32>,
}

impl Port {
    /// A plain port of the given kind.
    pub fn new(kind: impl Into<String>) -> Self {
        Port {
            kind: kind.into(),
            display_name: None,
            required: false,
            max_connections: None,
        }
    }
}

/// The resolved ports of a node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ports {
    /// Inputs in order.
    pub inputs: Vec<Port>,
    /// Outputs in order.
    pub outputs: Vec<Port>,
}

impl Ports {
    /// Distinct input kinds in order of appearance.
    pub fn input_kinds(&self) -> Vec<&str> {
        distinct(&self.inputs)
    }
    /// Distinct output kinds in order of appearance.
    pub fn output_kinds(&self) -> Vec<&str> {
        distinct(&self.outputs)
    }
    /// Whether some input has this kind.
    pub fn has_input(&self, kind: &str) -> bool {
        self.inputs.iter().any(|p| p.kind == kind)
    }
    /// Whether some output has this kind.
    pub fn has_output(&self, kind: &str) -> bool {
        self.outputs.iter().any(|p| p.kind == kind)
    }
}

fn distinct(ports: &[Port]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for p in ports {
        if !out.contains(&p.kind.as_str()) {
            out.push(&p.kind);
        }
    }
    out
}

/// Why ports could not be resolved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PortError {
    /// The expression threw, timed out or did not parse.
    #[error("node type {node_type}: evaluating the {side} expression failed: {message}")]
    Evaluation {
        /// Node type.
        node_type: String,
        /// `inputs` or `outputs`.
        side: &'static str,
        /// Engine message.
        message: String,
    },
    /// The expression (or list) gave something that is not a list of ports.
    #[error("node type {node_type}: {side} is not a list of ports: {found}")]
    Shape {
        /// Node type.
        node_type: String,
        /// `inputs` or `outputs`.
        side: &'static str,
        /// What was found (truncated JSON).
        found: String,
    },
    /// The JavaScript engine could not be started.
    #[error("JavaScript engine unavailable: {0}")]
    Engine(String),
}

/// Resolves the ports of `desc` for a node with these `parameters` at `version`.
///
/// As n8n does (`getNodeInputs` / `getNodeOutputs`), an expression that throws (e.g. the
/// LangChain Code node reading `$parameter.inputs.input` before any input is configured) or
/// gives `null`/`undefined` yields an empty list for that side; use [`resolve_ports_strict`]
/// to get the error instead. Engine failures, time-outs and non-list results are errors.
pub fn resolve_ports(
    desc: &NodeTypeDescription,
    parameters: &Value,
    version: f64,
) -> Result<Ports, PortError> {
    resolve(desc, parameters, version, false)
}

/// Like [`resolve_ports`] but an expression that throws is an error
/// ([`PortError::Evaluation`]).
pub fn resolve_ports_strict(
    desc: &NodeTypeDescription,
    parameters: &Value,
    version: f64,
) -> Result<Ports, PortError> {
    resolve(desc, parameters, version, true)
}

fn resolve(
    desc: &NodeTypeDescription,
    parameters: &Value,
    version: f64,
    strict: bool,
) -> Result<Ports, PortError> {
    let needs_params = desc.inputs.is_expression() || desc.outputs.is_expression();
    let params_json = if needs_params {
        let merged = parameters_with_defaults(desc, parameters, version);
        serde_json::to_string(&Value::Object(merged))
            .map_err(|e| PortError::Engine(e.to_string()))?
    } else {
        String::new()
    };
    let inputs = resolve_side(desc, &desc.inputs, "inputs", &params_json, version, strict)?;
    let outputs = resolve_side(
        desc,
        &desc.outputs,
        "outputs",
        &params_json,
        version,
        strict,
    )?;
    Ok(Ports { inputs, outputs })
}

fn resolve_side(
    desc: &NodeTypeDescription,
    spec: &PortsSpec,
    side: &'static str,
    params_json: &str,
    version: f64,
    strict: bool,
) -> Result<Vec<Port>, PortError> {
    match spec {
        PortsSpec::List(items) => ports_from_list(items).map_err(|found| PortError::Shape {
            node_type: desc.name.clone(),
            side,
            found,
        }),
        PortsSpec::Expression(expr) => {
            let value = match evaluate_cached(expr, params_json, version) {
                Ok(v) => v,
                Err(EvalError::Engine(m)) => return Err(PortError::Engine(m)),
                Err(EvalError::Script(message)) if strict => {
                    return Err(PortError::Evaluation {
                        node_type: desc.name.clone(),
                        side,
                        message,
                    })
                }
                Err(EvalError::Script(message)) => {
                    tracing::debug!(node_type = %desc.name, side, %message, "port expression threw; no ports");
                    return Ok(Vec::new());
                }
            };
            match &value {
                Value::Array(items) => ports_from_list(items),
                Value::Null => Ok(Vec::new()),
                other => Err(truncate(other.to_string())),
            }
            .map_err(|found| PortError::Shape {
                node_type: desc.name.clone(),
                side,
                found,
            })
        }
    }
}

fn truncate(mut s: String) -> String {
    if s.len() > 200 {
        let mut cut = 200;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

/// Maps a list of `"main"` strings / `{type, displayName, required, maxConnections}` objects.
fn ports_from_list(items: &[Value]) -> Result<Vec<Port>, String> {
    items
        .iter()
        .map(|item| match item {
            Value::String(kind) => Ok(Port::new(kind.clone())),
            Value::Object(o) => {
                let kind = o
                    .get("type")
                    .and_then(Value::as_str)
                    .ok_or_else(|| truncate(item.to_string()))?;
                let display_name = o
                    .get("displayName")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string);
                let required = o.get("required").and_then(Value::as_bool).unwrap_or(false);
                let max_connections = o
                    .get("maxConnections")
                    .and_then(Value::as_u64)
                    .map(|n| n.min(u32::MAX as u64) as u32);
                Ok(Port {
                    kind: kind.to_string(),
                    display_name,
                    required,
                    max_connections,
                })
            }
            other => Err(truncate(other.to_string())),
        })
        .collect()
}

enum EvalError {
    Engine(String),
    Script(String),
}

/// Strips `=` and one `{{ … }}` pair around the JavaScript.
fn expression_body(expr: &str) -> &str {
    let s = expr.trim();
    let s = s.strip_prefix('=').unwrap_or(s).trim();
    match s.strip_prefix("{{").and_then(|r| r.strip_suffix("}}")) {
        Some(inner) => inner.trim(),
        None => s,
    }
}

const CACHE_LIMIT: usize = 4096;
const EVAL_TIMEOUT: Duration = Duration::from_millis(500);

struct Engine {
    // Field order: the context must drop before the runtime.
    context: rquickjs::Context,
    _runtime: rquickjs::Runtime,
    deadline: Rc<Cell<Instant>>,
}

impl Engine {
    fn new() -> Result<Engine, String> {
        let runtime = rquickjs::Runtime::new().map_err(|e| e.to_string())?;
        runtime.set_memory_limit(64 * 1024 * 1024);
        runtime.set_max_stack_size(1024 * 1024);
        let deadline = Rc::new(Cell::new(Instant::now() + EVAL_TIMEOUT));
        let d = deadline.clone();
        runtime.set_interrupt_handler(Some(Box::new(move || Instant::now() > d.get())));
        let context = rquickjs::Context::full(&runtime).map_err(|e| e.to_string())?;
        Ok(Engine {
            context,
            _runtime: runtime,
            deadline,
        })
    }

    fn eval(&self, body: &str, params_json: &str, version: f64) -> Result<Value, EvalError> {
        let version_js = if version.is_finite() {
            format!("{version}")
        } else {
            "undefined".to_string()
        };
        let params_js = if params_json.is_empty() {
            "{}"
        } else {
            params_json
        };
        let script = format!(
            "(function ($parameter, $nodeVersion) {{ return JSON.stringify(({body}\n)); }})({params_js}, {version_js})"
        );
        self.deadline.set(Instant::now() + EVAL_TIMEOUT);
        let out: Result<Option<String>, String> = self.context.with(|ctx| {
            let res: rquickjs::Result<Option<String>> = ctx.eval(script);
            res.map_err(|e| rquickjs::CaughtError::from_error(&ctx, e).to_string())
        });
        match out {
            Ok(Some(json)) => {
                serde_json::from_str(&json).map_err(|e| EvalError::Script(e.to_string()))
            }
            Ok(None) => Ok(Value::Null),
            Err(m) => Err(EvalError::Script(m)),
        }
    }
}

type CacheKey = (u64, u64, String);

thread_local! {
    static ENGINE: RefCell<Option<Result<Rc<Engine>, String>>> = const { RefCell::new(None) };
    static CACHE: RefCell<HashMap<CacheKey, Value>> = RefCell::new(HashMap::new());
}

fn engine() -> Result<Rc<Engine>, String> {
    ENGINE.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(Engine::new().map(Rc::new));
        }
        match slot.as_ref() {
            Some(r) => r.clone(),
            None => Err("engine not initialised".to_string()),
        }
    })
}

fn evaluate_cached(expr: &str, params_json: &str, version: f64) -> Result<Value, EvalError> {
    let mut h = DefaultHasher::new();
    expr.hash(&mut h);
    let key: CacheKey = (h.finish(), version.to_bits(), params_json.to_string());
    if let Some(v) = CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return Ok(v);
    }
    let engine = engine().map_err(EvalError::Engine)?;
    let value = engine.eval(expression_body(expr), params_json, version)?;
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= CACHE_LIMIT {
            c.clear();
        }
        c.insert(key, value.clone());
    });
    Ok(value)
}

/// Evaluates an n8n `={{ … }}` expression with `$parameter` and `$nodeVersion` set and
/// returns its JSON value (`undefined` → `null`). Useful for subtitles and tests.
pub fn evaluate_expression(expr: &str, parameters: &Value, version: f64) -> Result<Value, String> {
    let params_json = serde_json::to_string(parameters).map_err(|e| e.to_string())?;
    evaluate_cached(expr, &params_json, version).map_err(|e| match e {
        EvalError::Engine(m) | EvalError::Script(m) => m,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_expression_wrapper() {
        assert_eq!(expression_body("={{ ['main'] }}"), "['main']");
        assert_eq!(expression_body("=['main']"), "['main']");
    }

    #[test]
    fn evaluates_and_times_out() {
        let v = evaluate_expression(
            "={{ $parameter.n * 2 }}",
            &serde_json::json!({"n": 21}),
            1.0,
        );
        assert_eq!(v, Ok(serde_json::json!(42)));
        let v = evaluate_expression("={{ $nodeVersion }}", &serde_json::json!({}), 1.5);
        assert_eq!(v, Ok(serde_json::json!(1.5)));
        assert!(evaluate_expression(
            "={{ (() => { while (true) {} })() }}",
            &serde_json::json!({}),
            1.0
        )
        .is_err());
        assert!(evaluate_expression("={{ nope( }}", &serde_json::json!({}), 1.0).is_err());
    }
}
