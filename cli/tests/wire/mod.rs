//! A loopback model provider that replays a scripted-model script (docs/scripted-model.md)
//! over the real streaming wire formats: OpenAI Chat Completions (`data:` chunks with
//! `choices[0].delta`, tool-call deltas by index, `[DONE]`) and Anthropic Messages (named
//! events, `text_delta` and `input_json_delta` pieces).
//!
//! The mock cannot know which node calls, so responses are served in script order, and a
//! response with `match` goes only to a request whose body contains its text (consecutive
//! `match` responses in any order, as the scripted model does). Instead of the `node` check,
//! every request is held to what the real APIs demand (the tools a response calls were
//! offered, tool results answer the calls before them, roles alternate, …); what breaks a
//! rule is recorded as a violation, and every request is recorded for later assertions.

#![allow(dead_code)] // builder_wire.rs uses what it needs

use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

mod protocol;
pub mod recorded;
pub use protocol::{anthropic_protocol, openai_protocol};

/// The provider wire format the mock speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    Anthropic,
}

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub headers: BTreeMap<String, String>,
    pub body: Value,
    /// The script response it got (0-based), if any.
    pub served: Option<usize>,
}

/// A tool call the mock streamed: the script's name and arguments and the id it gave.
#[derive(Debug, Clone)]
pub struct Issued {
    pub response: usize,
    pub id: String,
    pub name: String,
    pub args: Value,
}

#[derive(Default)]
struct State {
    used: BTreeSet<usize>,
    requests: Vec<Recorded>,
    issued: Vec<Issued>,
    violations: Vec<String>,
}

/// What the mock saw, shared with the test.
#[derive(Clone)]
pub struct Replay {
    wire: Wire,
    label: String,
    responses: Arc<Vec<Value>>,
    state: Arc<Mutex<State>>,
}

impl Replay {
    /// Starts a loopback server replaying the script at `script` in the `wire` format.
    pub async fn start(wire: Wire, script: &std::path::Path) -> (MockServer, Replay) {
        let value: Value = serde_json::from_str(
            &std::fs::read_to_string(script)
                .unwrap_or_else(|e| panic!("{}: {e}", script.display())),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
        let responses = value["responses"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no `responses` array", script.display()))
            .clone();
        let replay = Replay {
            wire,
            label: script.display().to_string(),
            responses: Arc::new(responses),
            state: Arc::default(),
        };
        let server = MockServer::start().await;
        let endpoint = match wire {
            Wire::OpenAi => "/v1/chat/completions",
            Wire::Anthropic => "/v1/messages",
        };
        Mock::given(method("POST"))
            .and(path(endpoint))
            .respond_with(replay.clone())
            .mount(&server)
            .await;
        (server, replay)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state().requests.clone()
    }

    pub fn issued(&self) -> Vec<Issued> {
        self.state().issued.clone()
    }

    pub fn violations(&self) -> Vec<String> {
        self.state().violations.clone()
    }

    /// The script responses never served (1-based, as the scripted model counts).
    pub fn unused(&self) -> Vec<usize> {
        let st = self.state();
        (0..self.responses.len())
            .filter(|i| !st.used.contains(i))
            .map(|i| i + 1)
            .collect()
    }

    pub fn script_len(&self) -> usize {
        self.responses.len()
    }

    /// Script response `i` (0-based).
    pub fn response(&self, i: usize) -> &Value {
        &self.responses[i]
    }

    /// The usage streamed with response `i`: the script's, else made up from `i` (so that
    /// usage accounting over the wire can be checked), cache writes only where the wire has
    /// them.
    pub fn usage_of(&self, i: usize) -> Value {
        let r = &self.responses[i];
        if r["usage"].is_object() {
            return r["usage"].clone();
        }
        let i = i as u64;
        json!({"input_tokens": 1000 + 10 * i, "output_tokens": 20 + i,
               "cache_read_tokens": 300 + i,
               "cache_creation_tokens": if self.wire == Wire::Anthropic { 40 } else { 0 }})
    }

    /// Picks the script response for a request (see the module docs).
    fn choose(&self, st: &State, raw: &str) -> Result<usize, String> {
        let n = self.responses.len();
        let Some(i) = (0..n).find(|i| !st.used.contains(i)) else {
            return Err(format!(
                "script {} ran out: all {n} responses were used",
                self.label
            ));
        };
        if self.responses[i].get("match").is_none() {
            return Ok(i);
        }
        (i..n)
            .take_while(|j| self.responses[*j].get("match").is_some())
            .filter(|j| !st.used.contains(j))
            .find(|j| {
                self.responses[*j]["match"]
                    .as_str()
                    .is_some_and(|m| raw.contains(m))
            })
            .ok_or_else(|| {
                format!(
                    "no pending `match` response of script {} from #{} on matches the request",
                    self.label,
                    i + 1
                )
            })
    }
}

impl Respond for Replay {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let raw = String::from_utf8_lossy(&req.body).into_owned();
        let headers = req
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    v.to_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        let body: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
        let mut st = self.state();
        let n = st.requests.len() + 1;
        st.requests.push(Recorded {
            headers,
            body: body.clone(),
            served: None,
        });
        let problems = match self.wire {
            Wire::OpenAi => openai_protocol(&body),
            Wire::Anthropic => anthropic_protocol(&body),
        };
        for p in problems {
            st.violations.push(format!("request {n}: {p}"));
        }
        let i = match self.choose(&st, &raw) {
            Ok(i) => i,
            Err(e) => {
                st.violations.push(format!("request {n}: {e}"));
                return error(self.wire, &e);
            }
        };
        st.used.insert(i);
        st.requests.last_mut().unwrap().served = Some(i);
        let r = &self.responses[i];
        let offered = offered_tools(self.wire, &body);
        let calls: Vec<Issued> = r["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(j, c)| {
                let prefix = match self.wire {
                    Wire::OpenAi => "call",
                    Wire::Anthropic => "toolu",
                };
                Issued {
                    response: i,
                    id: c["id"]
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("{prefix}_{}_{}", i + 1, j + 1)),
                    name: c["name"].as_str().unwrap_or_default().to_string(),
                    args: match &c["args"] {
                        Value::Null => json!({}),
                        a => a.clone(),
                    },
                }
            })
            .collect();
        for c in &calls {
            if !offered.contains(&c.name) {
                st.violations.push(format!(
                    "request {n}: script response #{} (for node `{}`) calls `{}`, but the \
                     request offered only {offered:?}",
                    i + 1,
                    r["node"].as_str().unwrap_or("?"),
                    c.name
                ));
            }
        }
        st.issued.extend(calls.iter().cloned());
        let text = r["text"].as_str().unwrap_or_default();
        let stop = r["stop_reason"].as_str();
        let usage = &self.usage_of(i);
        let sse = match self.wire {
            Wire::OpenAi => openai_stream(i, text, &calls, stop, usage),
            Wire::Anthropic => anthropic_stream(i, text, &calls, stop, usage),
        };
        ResponseTemplate::new(200)
            .insert_header("cache-control", "no-cache")
            .set_body_raw(sse, "text/event-stream")
    }
}

/// A 400 the provider clients do not retry, with the reason in the provider's error shape.
fn error(wire: Wire, message: &str) -> ResponseTemplate {
    let body = match wire {
        Wire::OpenAi => json!({"error": {"message": message, "type": "invalid_request_error"}}),
        Wire::Anthropic => json!({"type": "error",
            "error": {"type": "invalid_request_error", "message": message}}),
    };
    ResponseTemplate::new(400).set_body_json(body)
}

/// The names of the tools a request offers.
pub fn offered_tools(wire: Wire, body: &Value) -> Vec<String> {
    let pointer = match wire {
        Wire::OpenAi => "/function/name",
        Wire::Anthropic => "/name",
    };
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.pointer(pointer).and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// `text` in pieces of at most `size` characters (never splitting a character).
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

/// Arguments stream in about four pieces, at least one.
fn arg_pieces(args: &Value) -> Vec<String> {
    let s = args.to_string();
    pieces(&s, s.chars().count().div_ceil(4).max(1))
}

fn data(events: &[Value]) -> String {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

fn openai_stream(
    i: usize,
    text: &str,
    calls: &[Issued],
    stop: Option<&str>,
    usage: &Value,
) -> String {
    let id = format!("chatcmpl-{}", i + 1);
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000,
               "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_test",
               "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
               "usage": null})
    };
    // As OpenAI does: the role comes with the first piece of text, or with the first tool
    // call when there is no text.
    let mut events = Vec::new();
    if !text.is_empty() || calls.is_empty() {
        events.push(chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            None,
        ));
    }
    for p in pieces(text, 12) {
        events.push(chunk(json!({"content": p}), None));
    }
    for (j, c) in calls.iter().enumerate() {
        let mut delta = json!({"tool_calls": [{"index": j, "id": c.id, "type": "function",
                   "function": {"name": c.name, "arguments": ""}}]});
        if j == 0 && text.is_empty() {
            delta["role"] = json!("assistant");
            delta["content"] = Value::Null;
            delta["refusal"] = Value::Null;
        }
        events.push(chunk(delta, None));
        for p in arg_pieces(&c.args) {
            events.push(chunk(
                json!({"tool_calls": [{"index": j, "function": {"arguments": p}}]}),
                None,
            ));
        }
    }
    let finish = match stop {
        Some("max_tokens") => "length",
        Some("end_turn") | Some("stop_sequence") => "stop",
        Some("tool_use") => "tool_calls",
        Some(other) => other,
        None if calls.is_empty() => "stop",
        None => "tool_calls",
    };
    events.push(chunk(json!({}), Some(finish)));
    let field = |k: &str| usage[k].as_u64().unwrap_or(0);
    let cached = field("cache_read_tokens");
    let prompt = field("input_tokens") + cached;
    let completion = field("output_tokens");
    events.push(
        json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": "gpt-4o-2024-08-06", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": cached}}}),
    );
    let mut out = data(&events);
    out.push_str("data: [DONE]\n\n");
    out
}

fn anthropic_stream(
    i: usize,
    text: &str,
    calls: &[Issued],
    stop: Option<&str>,
    usage: &Value,
) -> String {
    let field = |k: &str| usage[k].as_u64().unwrap_or(0);
    let mut events: Vec<(&str, Value)> = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": format!("msg_{}", i + 1),
            "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": field("input_tokens"), "output_tokens": 1,
                      "cache_read_input_tokens": field("cache_read_tokens"),
                      "cache_creation_input_tokens": field("cache_creation_tokens")}}}),
        ),
        ("ping", json!({"type": "ping"})),
    ];
    let mut index = 0;
    if !text.is_empty() {
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "text", "text": ""}}),
        ));
        for p in pieces(text, 12) {
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "text_delta", "text": p}}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for c in calls {
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": c.id, "name": c.name, "input": {}}}),
        ));
        // The API opens each tool input with an empty piece.
        let mut parts = vec![String::new()];
        parts.extend(arg_pieces(&c.args));
        for p in parts {
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "input_json_delta", "partial_json": p}}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let stop = stop.unwrap_or(if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    });
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": field("output_tokens")}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    events
        .iter()
        .map(|(name, d)| format!("event: {name}\ndata: {d}\n\n"))
        .collect()
}
