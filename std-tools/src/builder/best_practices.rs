//! `get_best_practices`: technique documents for building n8n workflows.
//!
//! Each technique (a recurring kind of workflow: chatbot, scraping, RAG, …) has a markdown
//! document written by the agentgraph team, embedded in the crate: the recommended nodes by
//! full type name, the usual structure and connections (including the `ai_*` sub-node
//! connections), pitfalls, and the parameters that change a node's ports. The discovery agent
//! fetches the documents for the techniques it recognises in the user's request; the tool
//! returns one `<best_practices technique="…">` block per technique.

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Value};

/// A workflow technique and its best-practice document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Technique {
    /// Stable id, used in tool arguments (`chatbot`, `knowledge_base`, …).
    pub id: &'static str,
    /// One-line description, used in the tool's description so the model can pick techniques.
    pub summary: &'static str,
    /// The markdown document.
    pub document: &'static str,
}

macro_rules! technique {
    ($id:literal, $summary:literal) => {
        Technique {
            id: $id,
            summary: $summary,
            document: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/data/best-practices/",
                $id,
                ".md"
            )),
        }
    };
}

const TECHNIQUES: &[Technique] = &[
    technique!(
        "chatbot",
        "conversational assistants: chat trigger, AI agent, chat model, memory, tools"
    ),
    technique!(
        "scraping_and_research",
        "fetching web pages or APIs, extracting content, researching topics"
    ),
    technique!(
        "content_generation",
        "writing text, posts, emails or images with language models"
    ),
    technique!(
        "data_extraction",
        "pulling structured fields out of unstructured text, emails or pages"
    ),
    technique!(
        "document_processing",
        "reading PDFs, office files and images: download, extract, split, summarise"
    ),
    technique!(
        "form_input",
        "collecting user input with n8n forms and processing submissions"
    ),
    technique!(
        "notification",
        "sending alerts and messages (email, Slack, Telegram, …) when something happens"
    ),
    technique!(
        "scheduling",
        "running workflows on a timetable: cron, intervals, recurring reports"
    ),
    technique!(
        "triage",
        "classifying and routing items (tickets, emails, leads) to different branches"
    ),
    technique!(
        "data_transformation",
        "reshaping, filtering, merging, aggregating and converting data between systems"
    ),
    technique!(
        "knowledge_base",
        "RAG: indexing documents in a vector store and answering questions over them"
    ),
    technique!(
        "human_in_the_loop",
        "pausing for a person to approve, reject, edit or answer before continuing"
    ),
];

/// Every technique, in a stable order.
pub fn techniques() -> &'static [Technique] {
    TECHNIQUES
}

/// The ids of every technique, in the order of [`techniques`].
pub fn technique_ids() -> Vec<&'static str> {
    TECHNIQUES.iter().map(|t| t.id).collect()
}

/// The document of technique `id`, or `None` when there is no such technique.
pub fn document(id: &str) -> Option<&'static str> {
    TECHNIQUES.iter().find(|t| t.id == id).map(|t| t.document)
}

/// The `<best_practices technique="…">` block of one technique.
pub fn render(technique: &Technique) -> String {
    format!(
        "<best_practices technique=\"{}\">\n{}\n</best_practices>",
        technique.id,
        technique.document.trim_end()
    )
}

/// The blocks of several techniques, separated by blank lines. Unknown ids give an
/// `UNKNOWN_TECHNIQUE` error that lists the valid ones; repeated ids are rendered once.
pub fn render_all<S: AsRef<str>>(ids: &[S]) -> Result<String, ToolError> {
    let resolved = resolve(ids)?;
    Ok(resolved
        .iter()
        .map(|t| render(t))
        .collect::<Vec<_>>()
        .join("\n\n"))
}

/// Looks up ids, in order and without repeats; every unknown id is named in the error.
pub(crate) fn resolve<S: AsRef<str>>(ids: &[S]) -> Result<Vec<&'static Technique>, ToolError> {
    let mut found: Vec<&'static Technique> = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    for id in ids {
        let id = id.as_ref().trim();
        match TECHNIQUES.iter().find(|t| t.id == id) {
            Some(t) => {
                if !found.iter().any(|f| f.id == t.id) {
                    found.push(t);
                }
            }
            None => unknown.push(format!("`{id}`")),
        }
    }
    if !unknown.is_empty() {
        return Err(ToolError::new(
            "UNKNOWN_TECHNIQUE",
            format!(
                "unknown technique{} {}; use one or more of: {}",
                if unknown.len() == 1 { "" } else { "s" },
                unknown.join(", "),
                technique_ids().join(", ")
            ),
        ));
    }
    Ok(found)
}

/// How many techniques one call may ask for, unless the `max_techniques` setting says otherwise.
/// Three documents are about 2 000 tokens; all twelve would fill a small model's context.
pub const DEFAULT_MAX_TECHNIQUES: usize = 3;

fn max_techniques(ctx: &ToolContext) -> usize {
    ctx.settings()
        .get("max_techniques")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_MAX_TECHNIQUES)
}

/// The `get_best_practices` tool.
///
/// Arguments: `{"techniques": ["chatbot", …]}`. Returns one `<best_practices>` block per
/// technique. Errors: `INVALID_INPUT` (no `techniques` list), `NO_TECHNIQUES` (empty list),
/// `UNKNOWN_TECHNIQUE` (lists the valid ids), `TOO_MANY_TECHNIQUES` (more than the
/// `max_techniques` setting, default [`DEFAULT_MAX_TECHNIQUES`]).
///
/// When a record channel is set (with [`GetBestPractices::with_record_channel`] or the
/// `record_channel` tool setting, which wins), the tool also writes the list of fetched
/// technique ids to that channel (an `append` channel collects them across calls).
#[derive(Debug, Clone)]
pub struct GetBestPractices {
    record_channel: Option<String>,
    description: String,
}

impl Default for GetBestPractices {
    fn default() -> Self {
        Self::new()
    }
}

impl GetBestPractices {
    /// The tool, recording nothing in state.
    pub fn new() -> Self {
        let list = TECHNIQUES
            .iter()
            .map(|t| format!("- {}: {}", t.id, t.summary))
            .collect::<Vec<_>>()
            .join("\n");
        GetBestPractices {
            record_channel: None,
            description: format!(
                "Get best-practice guidance for building n8n workflows of the given kinds \
                 (techniques): recommended nodes by full type name, how to structure and \
                 connect them (including AI sub-node connections), parameters that change a \
                 node's inputs/outputs, and common pitfalls. Call it first, with the one to \
                 three techniques the user's request involves most.\nTechniques:\n{list}"
            ),
        }
    }

    /// Also writes the fetched technique ids to `channel`.
    pub fn with_record_channel(mut self, channel: impl Into<String>) -> Self {
        self.record_channel = Some(channel.into());
        self
    }

    fn record_channel<'a>(&'a self, ctx: &'a ToolContext) -> Option<&'a str> {
        match ctx.settings().get("record_channel").and_then(Value::as_str) {
            Some(c) if !c.is_empty() => Some(c),
            _ => self.record_channel.as_deref(),
        }
    }
}

#[async_trait]
impl Tool for GetBestPractices {
    fn name(&self) -> &str {
        "get_best_practices"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "techniques": {
                    "type": "array",
                    "description": "The workflow techniques the request involves most (one to three).",
                    "items": {"type": "string", "enum": technique_ids()},
                    "minItems": 1
                }
            },
            "required": ["techniques"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let ids: Vec<String> = match args.get("techniques") {
            Some(Value::Array(items)) => {
                let mut ids = Vec::with_capacity(items.len());
                for item in items {
                    match item.as_str() {
                        Some(s) => ids.push(s.to_string()),
                        None => {
                            return Err(ToolError::new(
                                "INVALID_INPUT",
                                format!(
                                    "every technique must be a string id, got {item}; valid \
                                     ids: {}",
                                    technique_ids().join(", ")
                                ),
                            ))
                        }
                    }
                }
                ids
            }
            // A lone string is accepted for direct calls.
            Some(Value::String(s)) if !s.trim().is_empty() => vec![s.clone()],
            Some(Value::String(_)) => Vec::new(),
            _ => {
                return Err(ToolError::new(
                    "INVALID_INPUT",
                    format!(
                        "`techniques` must be a list of technique ids, e.g. {{\"techniques\": \
                         [\"chatbot\"]}}; valid ids: {}",
                        technique_ids().join(", ")
                    ),
                ))
            }
        };
        if ids.is_empty() {
            return Err(ToolError::new(
                "NO_TECHNIQUES",
                format!(
                    "give at least one technique; valid ids: {}",
                    technique_ids().join(", ")
                ),
            ));
        }
        let resolved = resolve(&ids)?;
        let max = max_techniques(ctx);
        if resolved.len() > max {
            return Err(ToolError::new(
                "TOO_MANY_TECHNIQUES",
                format!(
                    "{} techniques asked for; ask for at most {max} at a time: the ones that fit \
                     the request best (each document is long, and all of them would crowd the \
                     conversation)",
                    resolved.len()
                ),
            ));
        }
        let text = resolved
            .iter()
            .map(|t| render(t))
            .collect::<Vec<_>>()
            .join("\n\n");
        let mut out = ToolOutput::text(text);
        if let Some(channel) = self.record_channel(ctx) {
            let fetched: Vec<Value> = resolved.iter().map(|t| json!(t.id)).collect();
            out = out.write(channel, Value::Array(fetched));
        }
        Ok(out)
    }
}
