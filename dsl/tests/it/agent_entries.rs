//! The `llm` and `tool_executor` entries for context overflow and repeated calls.

use agentgraph_dsl::{Project, Registry};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn compile(entries: &str, tool_entries: &str) -> Result<(), String> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../graphs/examples/scripts/chat.json"
    );
    let text = format!(
        r#"graph g {{
  state {{
    messages: messages
    summary: string?
    repeats: int = 0
  }}
  model main = scripted {{ script: "{script}" }}
  prompt keep = "Keep the node names."
  tools none = []
  node agent: llm {{ model: main, messages: messages {entries} }}
  node tools: tool_executor {{ tools: none {tool_entries} }}
  START -> agent -> tools -> END
}}
"#
    );
    let root = PathBuf::from("/virtual/agent.ag");
    let files = BTreeMap::from([(root.clone(), text)]);
    let project = Project::from_files(&root, &files).map_err(|e| format!("{e:?}"))?;
    let mut reg = Registry::default();
    agentgraph_dsl::agents::register(&mut reg, Default::default());
    project
        .compile(&reg)
        .map(|_| ())
        .map_err(|d| format!("{d:?}"))
}

#[test]
fn overflow_and_repeat_entries_compile() {
    compile(
        r#", on_overflow: "compact", summary: summary, compact_instructions: keep"#,
        ", repeat_limit: 3, repeats: repeats",
    )
    .expect("compiles");
    compile(r#", on_overflow: "fail""#, ", repeat_limit: 0").expect("compiles");
}

#[test]
fn a_bad_overflow_policy_is_refused() {
    let err = compile(r#", on_overflow: "retry""#, "").expect_err("refused");
    assert!(
        err.contains("`on_overflow` is \\\"compact\\\" or \\\"fail\\\""),
        "{err}"
    );
    let err = compile("", r#", repeat_limit: "two""#).expect_err("refused");
    assert!(
        err.contains("`repeat_limit` is a non-negative integer"),
        "{err}"
    );
}

#[test]
fn deferred_tool_entries_compile_and_are_checked() {
    compile(
        r#", core_tools: ["plan", "delegate"], loaded_tools: summary"#,
        "",
    )
    .expect("compiles");
    compile(r#", core_tools: []"#, "").expect("the default loaded-tools channel");
    let err = compile(r#", core_tools: "plan""#, "").expect_err("refused");
    assert!(
        err.contains("`core_tools` is a list of tool names"),
        "{err}"
    );
    let err = compile(", loaded_tools: summary", "").expect_err("refused");
    assert!(
        err.contains("`loaded_tools` goes with `core_tools`"),
        "{err}"
    );
}
