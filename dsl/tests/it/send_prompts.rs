//! LangGraph's map-reduce over model calls: `send` starts one `llm` task per subject, and each
//! task's prompt template and `tool_choice` expression see that task's payload.

use agentgraph_dsl::diagnostic::codes;
use agentgraph_dsl::{Project, Registry};
use agentgraph_runtime::{Input, RunConfig};
use serde_json::{json, Value};
use std::path::Path;

/// Answers given only to a request holding the prompt rendered for their subject.
const SCRIPT: &str = r#"{"responses": [
  {"node": "joke", "match": "a joke about cats.", "text": "cats: a joke"},
  {"node": "joke", "match": "a joke about dogs.", "text": "dogs: a joke"},
  {"node": "joke", "match": "a joke about owls.", "text": "owls: a joke"}
]}"#;

/// The map-reduce graph; `prompts` is the `llm` node's prompt entry.
fn graph(prompts: &str, extra: &str) -> String {
    format!(
        r#"graph jokes {{
  state {{
    subjects: list<string> = []
    messages: messages
    jokes: int = 0
  }}
  model m = scripted {{ script: "jokes.json" }}
  prompt joke = "Write a joke about {{{{ subject }}}}."
  node joke: llm {{
    model: m
    {prompts}
    tool_choice: choose(len(subject) > 0, "auto", "none")
  }}
  node count {{ set {{ jokes: len(messages) }} }}
  START -> send joke for s in subjects {{ subject: s }}
  joke -> count -> END
  {extra}
}}
"#
    )
}

fn registry() -> Registry {
    let mut reg = Registry::default();
    agentgraph_dsl::agents::register(&mut reg, Default::default());
    reg
}

fn project(dir: &Path, text: &str) -> Project {
    std::fs::write(dir.join("jokes.json"), SCRIPT).unwrap();
    std::fs::write(dir.join("jokes.ag"), text).unwrap();
    Project::load(dir.join("jokes.ag")).unwrap()
}

async fn run(prompts: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let project = project(dir.path(), &graph(prompts, ""));
    let reg = registry();
    let diags = project.check(&reg);
    for d in &diags {
        eprintln!("{}", project.render(d, false, 100));
    }
    assert!(diags.is_empty(), "the graph checks clean");
    let g = project.compile(&reg).unwrap_or_else(|_| panic!("compiles"));
    let out = g
        .invoke(
            Input::values(json!({"subjects": ["cats", "dogs", "owls"]})),
            RunConfig::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("the run failed: {e}"));
    out.values
}

/// The answers in the conversation, sorted (push tasks write in send order, but the script's
/// `match` answers may be taken in any order).
fn answers(values: &Value) -> Vec<String> {
    let mut texts: Vec<String> = values["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    texts.sort();
    texts
}

#[tokio::test]
async fn each_task_system_prompt_holds_its_subject() {
    let values = run("system: [joke]").await;
    assert_eq!(
        answers(&values),
        ["cats: a joke", "dogs: a joke", "owls: a joke"]
    );
    assert_eq!(values["jokes"], json!(3));
}

#[tokio::test]
async fn each_task_context_message_holds_its_subject() {
    let values = run("context: [joke]").await;
    assert_eq!(
        answers(&values),
        ["cats: a joke", "dogs: a joke", "owls: a joke"]
    );
}

#[test]
fn a_prompt_naming_a_key_some_user_does_not_receive_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "node plain: llm { model: m, system: [joke] }\n  count -> plain";
    let project = project(dir.path(), &graph("system: [joke]", extra));
    let diags = project.check(&registry());
    let unknown: Vec<_> = diags.iter().filter(|d| d.is(codes::UNKNOWN_NAME)).collect();
    assert_eq!(unknown.len(), 1, "{diags:?}");
    assert!(unknown[0].message.contains("`subject`"), "{diags:?}");
}
