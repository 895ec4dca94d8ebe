//! What a node returns: writes to channels plus routing (a command: goto, send, to parent).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The pseudo-node a route returns to finish a branch.
pub const END: &str = "__end__";
/// The pseudo-node runs start from.
pub const START: &str = "__start__";

/// A push task: run `node` once with `payload` as its input (fan-out / map-reduce).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Send {
    /// The node to run.
    pub node: String,
    /// What the task sees as its input instead of the state.
    pub payload: Value,
}

/// One routing target: a node, a push task, or the end.
#[derive(Debug, Clone, PartialEq)]
pub enum Goto {
    /// Run this node in the next step.
    Node(String),
    /// Run a push task in the next step.
    Send(Send),
    /// Nothing to run (finish this branch).
    End,
}

impl From<&str> for Goto {
    fn from(s: &str) -> Self {
        if s == END || s == "END" {
            Goto::End
        } else {
            Goto::Node(s.to_string())
        }
    }
}

impl From<String> for Goto {
    fn from(s: String) -> Self {
        Goto::from(s.as_str())
    }
}

impl From<Send> for Goto {
    fn from(s: Send) -> Self {
        Goto::Send(s)
    }
}

/// A node's result: channel writes, extra targets on top of the static edges, and whether the
/// whole command is addressed to the parent graph.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Update {
    /// Channel writes in the order the node made them.
    pub writes: Vec<(String, Value)>,
    /// Targets added to the node's static edges and routes.
    pub goto: Vec<Goto>,
    /// Apply writes and goto in the parent graph (LangGraph's `Command(graph=PARENT)`).
    pub to_parent: bool,
}

impl Update {
    /// No writes, no targets.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a write to `channel`.
    pub fn set(mut self, channel: impl Into<String>, value: Value) -> Self {
        self.writes.push((channel.into(), value));
        self
    }

    /// Adds a target node (or `END`).
    pub fn goto(mut self, target: impl Into<Goto>) -> Self {
        self.goto.push(target.into());
        self
    }

    /// Adds a push task.
    pub fn send(mut self, node: impl Into<String>, payload: Value) -> Self {
        self.goto.push(Goto::Send(Send {
            node: node.into(),
            payload,
        }));
        self
    }

    /// Addresses the writes and targets to the parent graph.
    pub fn to_parent(mut self) -> Self {
        self.to_parent = true;
        self
    }

    /// Builds an update from a JSON object of channel writes (`null` means no writes).
    pub fn from_object(value: Value) -> Result<Self, String> {
        match value {
            Value::Null => Ok(Update::new()),
            Value::Object(map) => Ok(Update {
                writes: map.into_iter().collect(),
                ..Update::new()
            }),
            other => Err(format!("expected an object of channel writes, got {other}")),
        }
    }
}
