//! Streaming: one event type; the modes (`values`, `updates`, `messages`, `custom`, `debug`) are
//! views over it.
//!
//! Buffering policy: events go through a bounded channel (`RunConfig::stream_buffer`, default
//! 1024). When the consumer falls behind and the buffer is full, the producing task waits
//! (back-pressure): nothing is dropped and memory stays bounded. When the consumer goes away (the
//! receiver is dropped), events are discarded and the run goes on to its end.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use tokio::sync::{mpsc, Mutex};

/// A stream mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The whole state after the input and after each step.
    Values,
    /// Each task's writes, as `{node: writes}`.
    Updates,
    /// LLM token chunks as they arrive.
    Messages,
    /// Whatever nodes and tools emit (progress).
    Custom,
    /// Task start/end and checkpoint records.
    Debug,
}

impl Mode {
    /// Every mode.
    pub const ALL: [Mode; 5] = [
        Mode::Values,
        Mode::Updates,
        Mode::Messages,
        Mode::Custom,
        Mode::Debug,
    ];

    fn bit(self) -> u8 {
        1 << (self as u8)
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Values => "values",
            Mode::Updates => "updates",
            Mode::Messages => "messages",
            Mode::Custom => "custom",
            Mode::Debug => "debug",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown stream mode name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown stream mode `{0}`; expected values, updates, messages, custom or debug")]
pub struct BadMode(pub String);

impl FromStr for Mode {
    type Err = BadMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str() == s.trim())
            .ok_or_else(|| BadMode(s.to_string()))
    }
}

/// A set of modes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Modes(u8);

impl Modes {
    /// No mode: nothing is produced.
    pub const NONE: Modes = Modes(0);

    /// The set of the given modes.
    pub fn of(modes: &[Mode]) -> Self {
        Modes(modes.iter().fold(0, |acc, m| acc | m.bit()))
    }

    /// Every mode.
    pub fn all() -> Self {
        Self::of(&Mode::ALL)
    }

    /// Whether `mode` is in the set.
    pub fn contains(self, mode: Mode) -> bool {
        self.0 & mode.bit() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Parses `values,updates`.
    pub fn parse(list: &str) -> Result<Self, BadMode> {
        let modes: Result<Vec<Mode>, _> = list
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(str::parse)
            .collect();
        Ok(Self::of(&modes?))
    }
}

/// What happened, by mode.
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// The output-schema state.
    Values(Value),
    /// One task's writes (`{channel: value}`), or `{"__interrupt__": [...]}`.
    Updates(Value),
    /// An LLM chunk (`{id, delta, ...}`).
    Messages(Value),
    /// A node or tool payload, e.g. `{tool, status, title}`.
    Custom(Value),
    /// A debug record.
    Debug(DebugEvent),
}

impl EventKind {
    /// The mode this event belongs to.
    pub fn mode(&self) -> Mode {
        match self {
            EventKind::Values(_) => Mode::Values,
            EventKind::Updates(_) => Mode::Updates,
            EventKind::Messages(_) => Mode::Messages,
            EventKind::Custom(_) => Mode::Custom,
            EventKind::Debug(_) => Mode::Debug,
        }
    }
}

/// Debug records: task lifecycle and checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DebugEvent {
    /// A task started.
    TaskStart {
        /// Super-step number.
        step: i64,
        /// Deterministic task id.
        task_id: String,
    },
    /// A task finished (`error` set when it failed or was interrupted).
    TaskEnd {
        /// Super-step number.
        step: i64,
        /// Deterministic task id.
        task_id: String,
        /// Why it did not succeed.
        error: Option<String>,
        /// Whether the result came from a saved pending write instead of a run.
        cached: bool,
    },
    /// A checkpoint was written.
    Checkpoint {
        /// Super-step number.
        step: i64,
        /// The new checkpoint.
        checkpoint_id: String,
        /// Nodes planned for the next step.
        next: Vec<String>,
    },
}

/// One stream event: `{"seq", "ns", "mode", "node", "data"}` when serialized.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Rises by one per thread.
    pub seq: u64,
    /// Subgraph path (`["builder:3f2a…"]`), empty for the root graph.
    pub ns: Vec<String>,
    /// The node that produced it, if any.
    pub node: Option<String>,
    /// The payload.
    pub kind: EventKind,
}

impl Event {
    /// The event's mode.
    pub fn mode(&self) -> Mode {
        self.kind.mode()
    }

    /// The payload as JSON.
    pub fn data(&self) -> Value {
        match &self.kind {
            EventKind::Values(v)
            | EventKind::Updates(v)
            | EventKind::Messages(v)
            | EventKind::Custom(v) => v.clone(),
            EventKind::Debug(d) => serde_json::to_value(d).unwrap_or(Value::Null),
        }
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("seq", &self.seq)?;
        m.serialize_entry("ns", &self.ns)?;
        m.serialize_entry("mode", self.mode().as_str())?;
        m.serialize_entry("node", &self.node)?;
        m.serialize_entry("data", &self.data())?;
        m.end()
    }
}

/// Sends events of the enabled modes, numbering them. Cheap to clone.
#[derive(Clone)]
pub struct Emitter {
    inner: Option<Arc<EmitterInner>>,
    ns: Vec<String>,
}

struct EmitterInner {
    modes: Modes,
    tx: mpsc::Sender<Event>,
    seq: Mutex<u64>,
}

impl Emitter {
    /// An emitter that drops everything.
    pub fn disabled() -> Self {
        Emitter {
            inner: None,
            ns: Vec::new(),
        }
    }

    /// An emitter for `modes` whose first event gets `first_seq`.
    pub(crate) fn new(modes: Modes, tx: mpsc::Sender<Event>, first_seq: u64) -> Self {
        if modes.is_empty() {
            return Self::disabled();
        }
        Emitter {
            inner: Some(Arc::new(EmitterInner {
                modes,
                tx,
                seq: Mutex::new(first_seq),
            })),
            ns: Vec::new(),
        }
    }

    /// The same stream, for a subgraph task at `segment` (`node:task_id`).
    pub(crate) fn child(&self, segment: String) -> Self {
        let mut ns = self.ns.clone();
        ns.push(segment);
        Emitter {
            inner: self.inner.clone(),
            ns,
        }
    }

    /// Whether events of `mode` are wanted (check before building an expensive payload).
    pub fn enabled(&self, mode: Mode) -> bool {
        self.inner.as_ref().is_some_and(|i| i.modes.contains(mode))
    }

    /// The next sequence number that will be assigned.
    pub(crate) async fn next_seq(&self) -> Option<u64> {
        match &self.inner {
            Some(i) => Some(*i.seq.lock().await),
            None => None,
        }
    }

    /// Sends an event if its mode is enabled; waits while the buffer is full.
    pub async fn emit(&self, node: Option<&str>, kind: EventKind) {
        let Some(inner) = &self.inner else { return };
        if !inner.modes.contains(kind.mode()) {
            return;
        }
        let mut seq = inner.seq.lock().await;
        let event = Event {
            seq: *seq,
            ns: self.ns.clone(),
            node: node.map(str::to_owned),
            kind,
        };
        if inner.tx.send(event).await.is_ok() {
            *seq += 1;
        }
    }
}
