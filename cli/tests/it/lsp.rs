//! `agentgraph lsp` driven over stdio as an editor drives it: diagnostics as the text changes,
//! hover, definition, completion, formatting and a clean shutdown. Expected positions come from
//! this file's texts (UTF-16 units, as the protocol counts them).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

const BROKEN: &str = r#"use "child.ag" as child
graph demo {
  state {
    count: int = 0
    answer: string? reduce replace
  }
  prompt hi = "Grüße 😀 {{ count }}"
  node bump {   set { count: count + 1 } }
  node ask: interrupt { value: "Ça va? 😀", write: answr }
  node sub: subgraph child
  START -> bump
  bump -> ask -> sub -> END
}
"#;

const CHILD: &str = "graph child {\n  state { count: int = 0 }\n  node inc { set { count: count + 1 } }\n  START -> inc -> END\n}\n";

/// The LSP position (line, UTF-16 column) of the first `needle` after `after` in `text`.
fn pos(text: &str, after: &str, needle: &str) -> (u64, u64) {
    let from = text.find(after).unwrap_or_else(|| panic!("no {after:?}"));
    let at = from
        + text[from..]
            .find(needle)
            .unwrap_or_else(|| panic!("no {needle:?}"));
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = text[..at].matches('\n').count() as u64;
    let col = text[line_start..at].encode_utf16().count() as u64;
    (line, col)
}

fn position(p: (u64, u64)) -> Value {
    json!({"line": p.0, "character": p.1})
}

struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: u64,
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
            .arg("lsp")
            .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn agentgraph lsp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, incoming) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("Content-Length: ") {
                        len = v.parse().unwrap_or(0);
                    }
                }
                let mut buf = vec![0; len];
                if r.read_exact(&mut buf).is_err() {
                    return;
                }
                let Ok(v) = serde_json::from_slice::<Value>(&buf) else {
                    return;
                };
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        Client {
            child,
            stdin,
            incoming,
            next_id: 1,
        }
    }

    fn send(&mut self, msg: Value) {
        let text = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{text}", text.len()).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn recv(&self) -> Value {
        self.incoming
            .recv_timeout(Duration::from_secs(60))
            .expect("a message from the server")
    }

    /// Sends a request and returns its result (messages in between are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let msg = self.recv();
            if msg["id"] == json!(id) {
                assert!(msg.get("error").is_none(), "{method}: {msg}");
                return msg["result"].clone();
            }
        }
    }

    /// The next diagnostics published for `uri`.
    fn diagnostics(&self, uri: &str) -> Vec<Value> {
        loop {
            let msg = self.recv();
            if msg["method"] == "textDocument/publishDiagnostics" && msg["params"]["uri"] == uri {
                return msg["params"]["diagnostics"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
            }
        }
    }
}

#[test]
fn an_editor_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir_path = std::fs::canonicalize(dir.path()).expect("canonical");
    std::fs::write(dir_path.join("child.ag"), CHILD).expect("write child");
    let main_path = dir_path.join("main.ag");
    std::fs::write(&main_path, BROKEN).expect("write main");
    let uri = format!("file://{}", main_path.display());
    let child_uri = format!("file://{}", dir_path.join("child.ag").display());

    let mut c = Client::start();
    let init = c.request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    assert_eq!(init["capabilities"]["documentFormattingProvider"], true);
    c.notify("initialized", json!({}));

    // A malformed message gets an error answer; the server carries on.
    c.send(json!({"jsonrpc": "2.0", "id": 99, "method": "textDocument/hover", "params": 7}));
    let bad = c.recv();
    assert_eq!(bad["id"], 99);
    assert!(bad["error"].is_object(), "{bad}");

    // So does a payload that is not JSON at all.
    write!(c.stdin, "Content-Length: 5\r\n\r\n{{oops").expect("write");
    c.stdin.flush().expect("flush");
    let bad = c.recv();
    assert_eq!(bad["error"]["code"], -32700, "{bad}");

    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "agentgraph", "version": 1, "text": BROKEN}}),
    );
    let ds = c.diagnostics(&uri);
    assert_eq!(ds.len(), 1, "{ds:?}");
    let start = pos(BROKEN, "node ask", "answr");
    assert_eq!(start, (8, 51), "the emoji counts two units");
    assert_eq!(ds[0]["code"], "E0205");
    assert_eq!(ds[0]["severity"], 1);
    assert_eq!(ds[0]["range"]["start"], position(start));
    assert_eq!(ds[0]["range"]["end"], position((start.0, start.1 + 5)));
    assert!(
        ds[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("did you mean `answer`")),
        "the hint is in the message: {}",
        ds[0]["message"]
    );

    let fixed = BROKEN.replace("answr", "answer");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    assert_eq!(c.diagnostics(&uri), Vec::<Value>::new());

    // Hover on the channel `answer` where `ask` writes it.
    let at = pos(&fixed, "write: ", "answer");
    let hover = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": position((at.0, at.1 + 2))}),
    );
    let text = hover["contents"]["value"].as_str().unwrap_or_default();
    assert!(text.contains("answer: string?"), "{text}");
    assert!(text.contains("reducer: replace"), "{text}");
    assert_eq!(hover["range"]["start"], position(at));

    // Hover on a node kind: the registry's doc line.
    let kind = pos(&fixed, "node ask", "interrupt");
    let hover = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": position(kind)}),
    );
    let text = hover["contents"]["value"].as_str().unwrap_or_default();
    assert!(text.contains("asks a human"), "{text}");

    // Definition of the node `ask` from the edge.
    let use_at = pos(&fixed, "bump -> ", "ask");
    let def = c.request(
        "textDocument/definition",
        json!({"textDocument": {"uri": uri}, "position": position(use_at)}),
    );
    assert_eq!(def["uri"], uri.as_str());
    let decl = pos(&fixed, "node ", "ask");
    assert_eq!(def["range"]["start"], position(decl));
    assert_eq!(def["range"]["end"], position((decl.0, decl.1 + 3)));

    // Definition of the `use`d graph from the subgraph's alias: the file.
    let alias = pos(&fixed, "subgraph ", "child");
    let def = c.request(
        "textDocument/definition",
        json!({"textDocument": {"uri": uri}, "position": position(alias)}),
    );
    assert_eq!(def["uri"], child_uri.as_str());

    // Completion inside the interrupt node's body: its entries and the channels.
    let inside = pos(&fixed, "node ask", "write");
    let items = c.request(
        "textDocument/completion",
        json!({"textDocument": {"uri": uri}, "position": position(inside)}),
    );
    let labels: Vec<&str> = items
        .as_array()
        .map(|a| a.iter().filter_map(|i| i["label"].as_str()).collect())
        .unwrap_or_default();
    for want in [
        "value", "write", "retry", "count", "answer", "bump", "len", "graph",
    ] {
        assert!(labels.contains(&want), "{want} missing from {labels:?}");
    }

    // Formatting: one edit over the whole text; `bump`'s nested block goes on its own line.
    let edits = c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": true}}),
    );
    let edits = edits.as_array().cloned().unwrap_or_default();
    assert_eq!(edits.len(), 1, "{edits:?}");
    assert_eq!(edits[0]["range"]["start"], position((0, 0)));
    let lines = fixed.matches('\n').count() as u64;
    assert_eq!(edits[0]["range"]["end"], position((lines, 0)));
    let new_text = edits[0]["newText"].as_str().unwrap_or_default();
    assert!(
        new_text.contains("  node bump {\n    set { count: count + 1 }\n  }\n"),
        "{new_text}"
    );

    // A syntax error: no edits.
    let broken = fixed.replace("START -> bump", "START -> -> bump");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": broken}]}),
    );
    assert!(!c.diagnostics(&uri).is_empty());
    let edits = c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": true}}),
    );
    assert_eq!(edits, json!([]));

    assert_eq!(c.request("shutdown", Value::Null), Value::Null);
    c.notify("exit", Value::Null);
    let status = c.child.wait().expect("wait");
    assert!(status.success(), "{status}");
}
