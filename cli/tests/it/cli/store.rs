//! The graph's store and node cache under `agentgraph run`: both live in the `--db` sled
//! database, so with no extra flag a user's conversation (an `llm` node's memory on the
//! store) carries across threads and across processes, and a cached node is reused by the
//! next run with the same input.

use super::*;

const CHAT: &str = r#"graph chat {
  state {
    messages: messages
    user: string = ""
  }
  model main = scripted { script: "chat.json" }
  node agent: llm {
    model: main
    messages: messages
    memory: { store: "store", namespace: ["users", user] }
  }
  START -> agent -> END
}
"#;

/// The first answer needs the question of the first thread; the second needs that answer in
/// the request, which only the memory puts there.
const SCRIPT: &str = r#"{"responses": [
  {"node": "agent", "match": "Noted, Ada", "text": "You are Ada"},
  {"node": "agent", "match": "call me Ada", "text": "Noted, Ada"}
]}"#;

fn last_answer(o: &Out) -> String {
    let out = last_json(&o.stdout);
    let messages = out["values"]["messages"]
        .as_array()
        .or_else(|| out["messages"].as_array())
        .cloned()
        .unwrap_or_default();
    messages
        .last()
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_users_memory_carries_across_threads_and_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("chat.ag"), CHAT).expect("write");
    std::fs::write(dir.path().join("chat.json"), SCRIPT).expect("write");
    let graph = dir.path().join("chat.ag").display().to_string();
    let db = dir.path().join("db");
    let ask = |thread: &str, text: &str| {
        let input = json!({"user": "ada", "messages": [{"type": "human", "content": text}]});
        ag(
            &db,
            &[
                "run",
                &graph,
                "--thread",
                thread,
                "--json",
                "--input",
                &input.to_string(),
            ],
        )
    };
    let first = ask("t1", "please call me Ada");
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(last_answer(&first), "Noted, Ada", "{}", first.stdout);
    let second = ask("t2", "what is my name?");
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(last_answer(&second), "You are Ada", "{}", second.stdout);
}

const LOOKUP: &str = r#"graph lookup {
  state {
    query: string = ""
    answer: string = ""
  }
  node fetch {
    set { answer: "found " + query }
    cache { ttl: 10m }
  }
  START -> fetch -> END
}
"#;

#[test]
fn a_cached_node_is_reused_by_the_next_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("lookup.ag"), LOOKUP).expect("write");
    let graph = dir.path().join("lookup.ag").display().to_string();
    let db = dir.path().join("db");
    let run = |thread: &str, q: &str| {
        let input = json!({ "query": q }).to_string();
        let o = ag(
            &db,
            &[
                "run", &graph, "--thread", thread, "--stream", "updates", "--input", &input,
            ],
        );
        assert_eq!(o.code, 0, "{}", o.stderr);
        o.stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|v| v.to_string().contains(r#""cached":true"#))
    };
    assert!(!run("a", "tea"), "the first run computes");
    assert!(run("b", "tea"), "the same input is reused");
    assert!(!run("c", "milk"), "another input misses");
}
