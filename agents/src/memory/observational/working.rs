//! Working memory: what the agent keeps about a user across threads (who they are, their
//! preferences, their instance's conventions). It is user-scoped: one item of the graph's
//! long-term store under the principal's namespace (`[<principal>, "working_memory"]`, key
//! `current`), where the principal is the run setting `principal` — which the server sets to
//! the authenticated caller's namespace, overriding whatever the request said — or
//! [`LOCAL_PRINCIPAL`] when the run names none (a local CLI run). Messages, observations and
//! plans stay in the thread.
//!
//! [`UpdateWorkingMemoryTool`] writes it; the `observe` node loads it into a thread channel
//! at each step, from which the `llm` node shows it to the model.

use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::store::{Store, StoreError};
use agentgraph_runtime::TaskContext;
use serde_json::{json, Value};
use std::sync::Arc;

/// The run setting naming whose working memory a run reads and writes.
pub const PRINCIPAL_SETTING: &str = "principal";
/// The principal of a run that names none.
pub const LOCAL_PRINCIPAL: &str = "local";
/// The tool's name.
pub const UPDATE_WORKING_MEMORY: &str = "update_working_memory";
/// The default thread channel the working memory is shown through.
pub const WORKING_MEMORY: &str = "working_memory";
/// The longest working memory kept, in characters.
pub const MAX_WORKING_MEMORY_CHARS: usize = 4_000;

const KEY: &str = "current";

/// The principal a task acts for (see the module docs).
pub fn principal(ctx: &TaskContext) -> String {
    ctx.configurable()
        .get(PRINCIPAL_SETTING)
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .unwrap_or(LOCAL_PRINCIPAL)
        .to_string()
}

/// The store namespace of a principal's working memory.
pub fn namespace(principal: &str) -> Vec<String> {
    vec![principal.to_string(), WORKING_MEMORY.to_string()]
}

/// The working memory of `principal` (`None`: nothing kept yet).
pub async fn load(store: &dyn Store, principal: &str) -> Result<Option<String>, StoreError> {
    Ok(store
        .get(&namespace(principal), KEY)
        .await?
        .and_then(|item| {
            item.value
                .get("memory")
                .and_then(Value::as_str)
                .map(str::to_owned)
        }))
}

/// Replaces the working memory of `principal`.
pub async fn save(store: &dyn Store, principal: &str, memory: &str) -> Result<(), StoreError> {
    store
        .put(&namespace(principal), KEY, json!({"memory": memory}), None)
        .await
}

fn store_of(ctx: &ToolContext) -> Result<&Arc<dyn Store>, ToolError> {
    ctx.store().ok_or_else(|| {
        ToolError::new(
            "NO_STORE",
            "working memory lives in the graph's long-term store, and this graph has none",
        )
    })
}

/// `update_working_memory {memory}`: replaces what the agent remembers about the user across
/// conversations. The new text is also written to the thread's working-memory channel (setting
/// `channel`, default [`WORKING_MEMORY`]) when the graph declares it, so the next model call
/// of this thread sees it at once.
pub struct UpdateWorkingMemoryTool;

#[async_trait::async_trait]
impl Tool for UpdateWorkingMemoryTool {
    fn name(&self) -> &str {
        UPDATE_WORKING_MEMORY
    }

    fn description(&self) -> &str {
        "Replace what you remember about this user across conversations: who they are, their \
         preferences, the conventions of their instance. Pass the whole memory (short markdown \
         lines), not only the change. Never store secrets or details of one task."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"memory": {
                "type": "string",
                "description": "The whole working memory, as short markdown lines.",
                "maxLength": MAX_WORKING_MEMORY_CHARS,
            }},
            "required": ["memory"],
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let memory = args
            .get("memory")
            .and_then(Value::as_str)
            .map(str::trim)
            .ok_or_else(|| ToolError::new("INVALID_ARGUMENTS", "`memory` is a string"))?;
        if memory.chars().count() > MAX_WORKING_MEMORY_CHARS {
            return Err(ToolError::new(
                "TOO_LONG",
                format!(
                    "the working memory holds at most {MAX_WORKING_MEMORY_CHARS} characters; \
                     keep only what matters across conversations"
                ),
            ));
        }
        let store = store_of(ctx)?;
        save(store.as_ref(), &principal(ctx), memory)
            .await
            .map_err(|e| ToolError::new("STORE", format!("saving the working memory: {e}")))?;
        let channel = ctx
            .settings()
            .get("channel")
            .and_then(Value::as_str)
            .unwrap_or(WORKING_MEMORY)
            .to_string();
        let mut out = ToolOutput::text("Working memory saved.");
        if ctx.state().schema().index_of(&channel).is_some() {
            out = out.write(channel, Value::String(memory.to_string()));
        }
        Ok(out)
    }
}
