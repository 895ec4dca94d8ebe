//! Which messages an observation takes: the oldest ones, once the conversation is estimated
//! over a threshold, cut into chunks the observer reads one at a time; and the write that
//! leaves the rest of the conversation.

use crate::models::budget::{cut_index, estimate_messages};
use agentgraph_runtime::messages::{remove, REMOVE_ALL};
use serde_json::Value;
use std::ops::Range;

/// What one observation step does to a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservationPlan {
    /// Ranges of the conversation, in order, each read by one observer call.
    pub chunks: Vec<Range<usize>>,
    /// The latest human message when it falls in the observed part: it stays verbatim (the
    /// task at hand), before the recent messages.
    pub pinned: Option<usize>,
    /// The first recent message (kept verbatim).
    pub cut: usize,
}

impl ObservationPlan {
    /// Decides whether `messages` need observing: only when they are estimated over
    /// `threshold` tokens and more than the last `keep_last` messages exist (moved earlier so
    /// that a kept tool result keeps the AI message that called it). The observed part is cut
    /// into chunks of about `chunk_tokens` estimated tokens at message boundaries (a message
    /// larger than that is a chunk alone).
    pub fn new(
        messages: &[Value],
        threshold: usize,
        keep_last: usize,
        chunk_tokens: usize,
    ) -> Option<ObservationPlan> {
        if estimate_messages(messages) <= threshold {
            return None;
        }
        let cut = cut_index(messages, keep_last);
        let pinned = messages[..cut].iter().rposition(is_human);
        let observed: Vec<usize> = (0..cut).filter(|i| Some(*i) != pinned).collect();
        if observed.is_empty() {
            return None;
        }
        let mut chunks = Vec::new();
        let mut start: Option<usize> = None;
        let mut size = 0;
        for (i, m) in messages[..cut].iter().enumerate() {
            let tokens = estimate_messages(std::slice::from_ref(m));
            if let Some(s) = start {
                if size + tokens > chunk_tokens.max(1) {
                    chunks.push(s..i);
                    start = None;
                    size = 0;
                }
            }
            start.get_or_insert(i);
            size += tokens;
        }
        if let Some(s) = start {
            chunks.push(s..cut);
        }
        Some(ObservationPlan {
            chunks,
            pinned,
            cut,
        })
    }

    /// The messages of a chunk the observer reads (the pinned human message is not observed).
    pub fn chunk<'a>(&self, messages: &'a [Value], chunk: &Range<usize>) -> Vec<&'a Value> {
        chunk
            .clone()
            .filter(|i| Some(*i) != self.pinned)
            .map(|i| &messages[i])
            .collect()
    }

    /// The write for an `add_messages` channel that leaves the pinned human message (if any)
    /// and the recent messages: clears the conversation and adds them back, in order.
    pub fn messages_write(&self, messages: &[Value]) -> Value {
        let mut out = vec![remove(REMOVE_ALL)];
        out.extend(self.pinned.map(|i| messages[i].clone()));
        out.extend(messages[self.cut..].iter().cloned());
        Value::Array(out)
    }
}

fn is_human(m: &Value) -> bool {
    matches!(
        m.get("type")
            .or_else(|| m.get("role"))
            .and_then(Value::as_str),
        Some("human" | "user")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(kind: &str, id: &str, chars: usize) -> Value {
        json!({"type": kind, "id": id, "content": "x".repeat(chars)})
    }

    #[test]
    fn under_the_threshold_nothing_is_observed() {
        let m = vec![
            text("human", "h", 100),
            text("ai", "a1", 100),
            text("ai", "a2", 100),
        ];
        // 300 characters are 120 estimated tokens.
        assert_eq!(ObservationPlan::new(&m, 120, 1, 1000), None);
        assert!(ObservationPlan::new(&m, 119, 1, 1000).is_some());
    }

    #[test]
    fn the_oldest_messages_are_chunked_and_the_last_question_stays() {
        // Each message: 250 characters = 100 estimated tokens.
        let mut m = vec![text("human", "h1", 250)];
        for i in 0..6 {
            m.push(text("ai", &format!("a{i}"), 250));
        }
        m.push(text("human", "h2", 250));
        m.push(text("ai", "a6", 250));
        m.push(text("ai", "a7", 250));
        let plan = ObservationPlan::new(&m, 500, 2, 250).expect("over the threshold");
        assert_eq!(plan.cut, 8);
        assert_eq!(plan.pinned, Some(7));
        assert_eq!(plan.chunks, vec![0..2, 2..4, 4..6, 6..8]);
        let last: Vec<&str> = plan
            .chunk(&m, &plan.chunks[3])
            .iter()
            .filter_map(|v| v["id"].as_str())
            .collect();
        assert_eq!(last, ["a5"]);
        let write = plan.messages_write(&m);
        let ids: Vec<&str> = write.as_array().expect("array")[1..]
            .iter()
            .filter_map(|v| v["id"].as_str())
            .collect();
        assert_eq!(ids, ["h2", "a6", "a7"]);
    }

    #[test]
    fn a_lone_question_is_not_observed() {
        let m = vec![text("human", "h", 1000), text("ai", "a", 10)];
        assert_eq!(ObservationPlan::new(&m, 10, 1, 100), None);
    }
}
