//! The graph's long-term store from agents: an `llm` node's memory on it (one conversation per
//! user, shared by that user's threads) and tools reaching it through their context.

use crate::common;

use agentgraph_agents::memory::{NamespaceFn, StoreMemorySpec};
use agentgraph_agents::models;
use agentgraph_agents::nodes::{LlmNode, ToolExecutorNode};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::store::{ns, InMemoryStore, SearchQuery, Store};
use agentgraph_runtime::*;
use async_trait::async_trait;
use common::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// A model that records what it was sent and answers "answer N".
struct Recorder(Mutex<Vec<Vec<Value>>>);

#[async_trait]
impl models::ChatModel for Recorder {
    fn name(&self) -> String {
        "recorder".into()
    }
    async fn complete(
        &self,
        req: &models::ModelRequest,
        _ctx: &models::CallContext,
    ) -> Result<models::ModelResponse, models::ModelError> {
        let mut sent = self.0.lock().expect("lock");
        sent.push(req.messages.clone());
        Ok(models::ModelResponse {
            text: format!("answer {}", sent.len()),
            ..Default::default()
        })
    }
}

fn by_user() -> NamespaceFn {
    Arc::new(|ctx: &TaskContext| {
        Ok(vec![
            "users".to_string(),
            ctx.state().str("user").to_string(),
        ])
    })
}

fn chat_graph(model: Arc<Recorder>) -> CompiledGraph {
    let llm = LlmNode::new(model).store_memory(StoreMemorySpec {
        namespace: by_user(),
        window: None,
    });
    GraphBuilder::new("chat")
        .channel(message_list("messages"))
        .channel(ChannelSpec::new("user", ValueType::String))
        .node("agent", Arc::new(llm))
        .chain(&[START, "agent", END])
        .compile()
        .expect("compiles")
        .with_checkpointer(Arc::new(MemoryCheckpointer::new()))
}

fn ask(user: &str, id: &str, text: &str) -> Input {
    Input::values(json!({"user": user, "messages": [{"type": "human", "id": id, "content": text}]}))
}

fn contents(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn a_users_conversation_follows_them_across_threads() {
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let model = Arc::new(Recorder(Mutex::default()));
    let graph = chat_graph(model.clone()).with_store(store.clone());
    graph
        .invoke(ask("ada", "q1", "my name is Ada"), RunConfig::thread("a-1"))
        .await
        .expect("first thread");
    graph
        .invoke(
            ask("ada", "q2", "what is my name?"),
            RunConfig::thread("a-2"),
        )
        .await
        .expect("second thread");
    graph
        .invoke(ask("bob", "q3", "hello"), RunConfig::thread("b-1"))
        .await
        .expect("another user");
    let sent = model.0.lock().expect("lock").clone();
    assert_eq!(contents(&sent[0]), ["my name is Ada"]);
    assert_eq!(
        contents(&sent[1]),
        ["my name is Ada", "answer 1", "what is my name?"],
        "the second thread starts with the first thread's exchange"
    );
    assert_eq!(
        contents(&sent[2]),
        ["hello"],
        "another user's memory is apart"
    );
    let kept = store
        .search(&SearchQuery::prefix(&["users", "ada"]))
        .await
        .expect("search");
    assert_eq!(kept.len(), 4);
}

#[tokio::test]
async fn memory_on_a_store_needs_the_graph_to_have_one() {
    let model = Arc::new(Recorder(Mutex::default()));
    let err = chat_graph(model)
        .invoke(ask("ada", "q1", "hi"), RunConfig::thread("t"))
        .await
        .expect_err("no store");
    assert!(
        matches!(&err, RunError::NodeFailed { code: Some(c), .. } if c == "NO_STORE"),
        "{err}"
    );
}

/// A tool that saves a note in the store.
struct SaveNote;

#[async_trait]
impl Tool for SaveNote {
    fn name(&self) -> &str {
        "save_note"
    }
    fn description(&self) -> &str {
        "saves a note"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]})
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let store = ctx
            .store()
            .ok_or_else(|| ToolError::new("NO_STORE", "no store"))?;
        let note = args["note"].as_str().unwrap_or_default().to_string();
        store
            .put(
                &ns(&["notes"]),
                &note,
                json!({"thread": ctx.thread_id()}),
                None,
            )
            .await
            .map_err(|e| ToolError::new("STORE", e.to_string()))?;
        Ok(ToolOutput::text("saved"))
    }
}

#[tokio::test]
async fn tools_reach_the_graphs_store() {
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let tools = ToolExecutorNode::new([Arc::new(SaveNote) as Arc<dyn Tool>]);
    let graph = GraphBuilder::new("notes")
        .channel(message_list("messages"))
        .node("tools", Arc::new(tools))
        .chain(&[START, "tools", END])
        .compile()
        .expect("compiles")
        .with_store(store.clone());
    let call = json!({"type": "ai", "id": "a", "content": "", "tool_calls": [
        {"id": "c1", "name": "save_note", "args": {"note": "buy milk"}}]});
    let out = graph
        .invoke(
            Input::values(json!({"messages": [call]})),
            RunConfig::thread("t-notes"),
        )
        .await
        .expect("runs");
    assert_eq!(out.values["messages"][1]["content"], json!("saved"));
    let item = store
        .get(&ns(&["notes"]), "buy milk")
        .await
        .expect("get")
        .expect("the tool saved it");
    assert_eq!(item.value, json!({"thread": "t-notes"}));
}
