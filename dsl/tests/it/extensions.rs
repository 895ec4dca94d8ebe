//! Filters and functions an embedding application registers: the checker knows them, compiled
//! graphs call them, and unregistered ones are still refused.

use agentgraph_dsl::diagnostic::codes;
use agentgraph_dsl::extensions::Function;
use agentgraph_dsl::types::Ty;
use agentgraph_dsl::{Project, Registry};
use agentgraph_runtime::{Input, RunConfig};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

fn project(text: &str) -> Project {
    let root = PathBuf::from("/virtual/ext.ag");
    let files = BTreeMap::from([(root.clone(), text.to_string())]);
    Project::from_files(&root, &files).expect("the snapshot has its root")
}

fn registry() -> Registry {
    let mut reg = Registry::default();
    reg.register_filter("shout", "upper-cases and adds `!`", |v| {
        let text = v.as_str().ok_or("shout takes a string")?;
        Ok(Value::String(format!("{}!", text.to_uppercase())))
    });
    // A built-in name: the built-in wins.
    reg.register_filter("upper", "never used", |_| Ok(json!("shadowed")));
    reg.register_function(
        "twice",
        Function {
            min: 1,
            max: 1,
            returns: Ty::Int,
            doc: "the number times two".into(),
            call: Arc::new(|args| {
                let n = args[0].as_i64().ok_or("twice takes an int")?;
                n.checked_mul(2).map(Value::from).ok_or("too large".into())
            }),
        },
    );
    reg
}

const GRAPH: &str = r#"graph ext {
  state {
    name: string = "ada"
    n: int = 21
    greeting: string = ""
    doubled: int = 0
  }
  node greet { set { greeting: "{{ name | shout }} {{ name | upper }}", doubled: twice(n) } }
  START -> greet -> END
}
"#;

#[tokio::test]
async fn registered_filters_and_functions_check_and_run() {
    let p = project(GRAPH);
    let reg = registry();
    let compiled = p
        .check_and_compile(&reg)
        .unwrap_or_else(|ds| panic!("compiles: {ds:?}"));
    assert!(compiled.warnings.is_empty(), "{:?}", compiled.warnings);
    let out = compiled
        .graph
        .invoke(Input::values(json!({})), RunConfig::default())
        .await
        .expect("runs");
    assert_eq!(out.values["greeting"], json!("ADA! ADA"));
    assert_eq!(out.values["doubled"], json!(42));
}

#[test]
fn without_registration_they_are_unknown() {
    let found: Vec<&str> = project(GRAPH)
        .check(&Registry::default())
        .iter()
        .map(|d| d.code)
        .collect();
    assert_eq!(
        found,
        [codes::BAD_TEMPLATE.id, codes::BAD_CALL.id],
        "unknown filter, unknown function"
    );
}

#[test]
fn registered_functions_have_their_arity_and_type_checked() {
    let p = project(
        r#"graph ext {
  state { n: int = 1  s: string = "" }
  node bad { set { n: twice(n, n), s: twice(n) } }
  START -> bad -> END
}
"#,
    );
    let ds = p.check(&registry());
    let found: Vec<(&str, &str)> = ds.iter().map(|d| (d.code, d.message.as_str())).collect();
    assert_eq!(
        found,
        [
            (codes::BAD_CALL.id, "`twice` takes 1 argument(s), got 2"),
            (codes::TYPE_MISMATCH.id, "`s` is a string, this is an int"),
        ]
    );
}

#[test]
fn unknown_filters_are_suggested_from_registered_ones_too() {
    let p = project(
        r#"graph ext {
  state { s: string = "" }
  node a { set { s: "{{ s | shuot }}" } }
  START -> a -> END
}
"#,
    );
    let ds = p.check(&registry());
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0].help.as_deref(), Some("did you mean `shout`?"));
}
