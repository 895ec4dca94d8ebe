//! The server over in-memory pipes: hover and definition of every kind of name, completion of
//! kinds, and unsaved documents preferred to the disk.

use agentgraph_dsl::{Registry, RegistryFactory};
use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const MAIN: &str = r#"use "helper.ag" as helper
graph g {
  state { n: int = 0, reply: string? }
  model main = scripted { script: "s.json" }
  prompt sys = file("sys.md")
  prompt greet = """
    Hello {{ n }}
  """
  tools kit = []
  node bump { set { n: len([1]) + n } }
  node talk: helper
  START -> bump -> END
}
"#;

struct Session {
    client: Connection,
    server: Option<std::thread::JoinHandle<bool>>,
    next: i32,
}

impl Session {
    fn start() -> Session {
        let (server, client) = Connection::memory();
        let factory: RegistryFactory = Arc::new(Registry::default);
        let handle = std::thread::spawn(move || agentgraph_lsp::serve(&server, &factory).is_ok());
        let mut s = Session {
            client,
            server: Some(handle),
            next: 1,
        };
        s.request("initialize", json!({"capabilities": {}}));
        s.notify("initialized", json!({}));
        s
    }

    fn notify(&self, method: &str, params: Value) {
        let n = Notification::new(method.to_string(), params);
        self.client
            .sender
            .send(Message::Notification(n))
            .expect("send");
    }

    fn recv(&self) -> Message {
        self.client
            .receiver
            .recv_timeout(Duration::from_secs(30))
            .expect("a message")
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = RequestId::from(self.next);
        self.next += 1;
        let req = Request::new(id.clone(), method.to_string(), params);
        self.client
            .sender
            .send(Message::Request(req))
            .expect("send");
        loop {
            if let Message::Response(r) = self.recv() {
                if r.id == id {
                    assert!(r.error.is_none(), "{method}: {:?}", r.error);
                    return r.result.unwrap_or(Value::Null);
                }
            }
        }
    }

    fn diagnostics(&self, uri: &str) -> Vec<Value> {
        loop {
            if let Message::Notification(n) = self.recv() {
                if n.method == "textDocument/publishDiagnostics" && n.params["uri"] == uri {
                    return n.params["diagnostics"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                }
            }
        }
    }

    fn open(&self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "agentgraph", "version": 1, "text": text}}),
        );
    }

    fn finish(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let ok = self.server.take().map(|h| h.join().unwrap_or(false));
        assert_eq!(ok, Some(true));
    }
}

/// The position of the `nth` (0-based) occurrence of `needle`, plus `shift` columns.
fn at(text: &str, needle: &str, nth: usize, shift: u32) -> Value {
    let offset = text
        .match_indices(needle)
        .nth(nth)
        .map(|(i, _)| i)
        .unwrap_or_else(|| panic!("no {needle:?} #{nth}"));
    let line = text[..offset].matches('\n').count();
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let col = text[start..offset].encode_utf16().count() as u32 + shift;
    json!({"line": line, "character": col})
}

fn hover(s: &mut Session, uri: &str, position: Value) -> String {
    let h = s.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": position}),
    );
    h["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn names_hover_and_jump_and_open_documents_win() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(dir.path()).expect("canonical");
    std::fs::write(root.join("sys.md"), "You help.").expect("write");
    let main_uri = format!("file://{}/main.ag", root.display());
    let helper_uri = format!("file://{}/helper.ag", root.display());
    let text = MAIN.replace("node talk: helper", "node talk: subgraph helper");

    let mut s = Session::start();
    // helper.ag exists only as an unsaved document.
    s.open(
        &helper_uri,
        "graph helper {\n  state { n: int = 0 }\n  node inc { set { n: n + 1 } }\n  START -> inc -> END\n}\n",
    );
    assert_eq!(s.diagnostics(&helper_uri), Vec::<Value>::new());
    s.open(&main_uri, &text);
    let ds = s.diagnostics(&main_uri);
    assert!(
        ds.iter().all(|d| d["severity"] != 1),
        "no error, the used file is open: {ds:?}"
    );

    let h = hover(&mut s, &main_uri, at(&text, "main", 0, 1));
    assert!(h.contains("(model)") && h.contains("scripted"), "{h}");
    let h = hover(&mut s, &main_uri, at(&text, "greet", 0, 0));
    assert!(h.contains("Hello {{ n }}"), "{h}");
    let h = hover(&mut s, &main_uri, at(&text, "kit", 0, 0));
    assert!(h.contains("(tool set)"), "{h}");
    let h = hover(&mut s, &main_uri, at(&text, "len(", 0, 1));
    assert!(h.contains("(function)"), "{h}");
    let h = hover(&mut s, &main_uri, at(&text, "bump", 1, 0));
    assert!(h.contains("node bump: set"), "{h}");
    let h = hover(&mut s, &main_uri, at(&text, "+ n", 0, 2));
    assert!(h.contains("n: int = 0") && h.contains("replace"), "{h}");

    let def = |s: &mut Session, position: Value| {
        s.request(
            "textDocument/definition",
            json!({"textDocument": {"uri": main_uri}, "position": position}),
        )
    };
    let d = def(&mut s, at(&text, "helper", 2, 1));
    assert_eq!(d["uri"], helper_uri.as_str(), "the alias goes to the file");
    let d = def(&mut s, at(&text, "helper.ag", 0, 2));
    assert_eq!(d["uri"], helper_uri.as_str(), "so does the path");
    let d = def(&mut s, at(&text, "sys.md", 0, 1));
    assert_eq!(d["uri"], format!("file://{}/sys.md", root.display()));
    let d = def(&mut s, at(&text, "+ n", 0, 2));
    assert_eq!(d["range"]["start"], at(&text, "n: int", 0, 0));

    // After `node x:` only kinds.
    let typing = text.replace("node bump {", "node fresh: \n  node bump {");
    s.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": main_uri, "version": 2}, "contentChanges": [{"text": typing}]}),
    );
    let items = s.request(
        "textDocument/completion",
        json!({"textDocument": {"uri": main_uri}, "position": at(&typing, "fresh: ", 0, 7)}),
    );
    let labels: Vec<&str> = items
        .as_array()
        .map(|a| a.iter().filter_map(|i| i["label"].as_str()).collect())
        .unwrap_or_default();
    assert!(labels.contains(&"interrupt") && labels.contains(&"subgraph"));
    assert!(!labels.contains(&"n"), "{labels:?}");

    // An unknown method is an error answer, not a crash.
    let req = Request::new(RequestId::from(500), "x/unknown".into(), Value::Null);
    s.client.sender.send(Message::Request(req)).expect("send");
    loop {
        if let Message::Response(r) = s.recv() {
            assert!(r.error.is_some());
            break;
        }
    }
    // An error in the open helper shows at the reference to it.
    s.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": helper_uri, "version": 2}, "contentChanges": [{"text":
            "graph helper {\n  state { n: int = 0 }\n  node inc { set { n: nn + 1 } }\n  START -> inc -> END\n}\n"}]}),
    );
    let ds = s.diagnostics(&main_uri);
    let at_use = ds
        .iter()
        .find(|d| d["range"]["start"] == at(&text, "\"helper.ag\"", 0, 0))
        .unwrap_or_else(|| panic!("{ds:?}"));
    assert_eq!(at_use["severity"], 1);
    assert!(
        at_use["message"]
            .as_str()
            .is_some_and(|m| m.contains("line 3")),
        "{at_use}"
    );

    s.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": helper_uri, "version": 3}, "contentChanges": [{"text":
            "graph helper {\n  state { n: int = 0 }\n  node inc { set { n: n + 1 } }\n  START -> inc -> END\n}\n"}]}),
    );
    s.diagnostics(&main_uri);

    // Back to the text without errors, then closing the unsaved helper leaves a file that is
    // nowhere on disk.
    s.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": main_uri, "version": 3}, "contentChanges": [{"text": text}]}),
    );
    let ds = s.diagnostics(&main_uri);
    assert!(ds.iter().all(|d| d["severity"] != 1), "{ds:?}");
    s.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": helper_uri}}),
    );
    let ds = s.diagnostics(&main_uri);
    assert!(ds.iter().any(|d| d["severity"] == 1), "{ds:?}");
    s.finish();
}
