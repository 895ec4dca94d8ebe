//! The diagram as JSON, for programs that lay it out and draw it themselves (the server's
//! studio does, in the browser). The same items and edges as the Mermaid and DOT output:
//!
//! ```text
//! {"name": "approval", "graph": BLOCK}
//! BLOCK = {"start": id, "end": id, "items": [ITEM…], "edges": [EDGE…]}
//! ITEM  = {"type": "node", "id", "name", "label": [line…],
//!          "shape": "start"|"end"|"plain"|"marked"|"hexagon"|"join", "writes"?: channel}
//!       | {"type": "cluster", "id", "name", "label": [line…], "graph": BLOCK}
//! EDGE  = {"from": id, "to": id, "kind": "static"|"wait"|"route"|"send", "label"?: text}
//! ```
//!
//! `name` is the node's name in its graph (what a run's events call it); ids are unique across
//! the whole diagram, a subgraph's prefixed with its node's id. An edge to or from a cluster
//! names the cluster. `writes` is the channel an `interrupt`-kind node writes its answer to.

use super::{Block, EdgeKind, Item, Shape};
use serde_json::{json, Map, Value};

/// The diagram `name`/`block` as the JSON above.
pub(super) fn to_value(name: &str, block: &Block) -> Value {
    json!({ "name": name, "graph": block_value(block) })
}

fn shape_name(shape: Shape) -> &'static str {
    match shape {
        Shape::Start => "start",
        Shape::End => "end",
        Shape::Plain => "plain",
        Shape::Marked => "marked",
        Shape::Hexagon => "hexagon",
        Shape::Join => "join",
    }
}

fn kind_name(kind: EdgeKind) -> &'static str {
    match kind {
        EdgeKind::Static => "static",
        EdgeKind::Wait => "wait",
        EdgeKind::Route => "route",
        EdgeKind::Send => "send",
    }
}

fn block_value(b: &Block) -> Value {
    let items: Vec<Value> = b
        .items
        .iter()
        .map(|item| match item {
            Item::Node(id, lines, shape) => {
                let mut o = Map::new();
                o.insert("type".into(), json!("node"));
                o.insert("id".into(), json!(id));
                o.insert(
                    "name".into(),
                    json!(lines.first().cloned().unwrap_or_default()),
                );
                o.insert("label".into(), json!(lines));
                o.insert("shape".into(), json!(shape_name(*shape)));
                if let Some(ch) = b.writes.get(id) {
                    o.insert("writes".into(), json!(ch));
                }
                Value::Object(o)
            }
            Item::Cluster(id, lines, child) => json!({
                "type": "cluster",
                "id": id,
                "name": lines.first().cloned().unwrap_or_default(),
                "label": lines,
                "graph": block_value(child),
            }),
        })
        .collect();
    let edges: Vec<Value> = b
        .edges
        .iter()
        .map(|e| {
            let mut o = Map::new();
            o.insert("from".into(), json!(e.from.id));
            o.insert("to".into(), json!(e.to.id));
            o.insert("kind".into(), json!(kind_name(e.kind)));
            if let Some(l) = &e.label {
                o.insert("label".into(), json!(l));
            }
            Value::Object(o)
        })
        .collect();
    json!({ "start": b.ends.0, "end": b.ends.1, "items": items, "edges": edges })
}

#[cfg(test)]
mod tests {
    use crate::project::Project;

    fn structure(text: &str) -> serde_json::Value {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("g.ag");
        std::fs::write(&path, text).expect("write");
        let project = Project::load(&path).expect("load");
        super::super::structure(&project).expect("structure")
    }

    #[test]
    fn nodes_edges_and_the_interrupt_channel() {
        let v = structure(
            "graph approval {\n  state {\n    decision: string = \"\"\n  }\n  node review: interrupt {\n    value: \"ok?\"\n    write: decision\n  }\n  node publish {\n    set { decision: \"done\" }\n  }\n  START -> review\n  review -> route {\n    decision == \"yes\" => publish\n    else => END\n  }\n  publish -> END\n}\n",
        );
        assert_eq!(v["name"], "approval");
        let items = v["graph"]["items"].as_array().expect("items");
        let names: Vec<&str> = items.iter().filter_map(|i| i["name"].as_str()).collect();
        assert_eq!(names, ["START", "review", "publish", "END"]);
        assert_eq!(items[1]["shape"], "hexagon");
        assert_eq!(items[1]["writes"], "decision");
        assert!(items[2].get("writes").is_none());
        let edges = v["graph"]["edges"].as_array().expect("edges");
        assert_eq!(edges.len(), 4, "{edges:?}");
        assert_eq!(edges[1]["kind"], "route");
        assert_eq!(edges[1]["label"], "decision == \"yes\"");
        assert_eq!(edges[2]["label"], "else");
    }
}
