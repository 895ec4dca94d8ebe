//! Closing JSON that the output limit cut off: the ways a prefix of a JSON document can be
//! finished into a document, longest first.
//!
//! A structured answer cut by `max_tokens` often holds everything that was asked for, with a
//! free-text field running on at the end (a supervisor's `reason` after a complete `next`).
//! [`closings`] gives the candidates; the caller keeps the first one its schema accepts, so a
//! cut that lost a required field is still a failure.
//!
//! Written here rather than taken from a crate: the crates that complete partial JSON are small
//! single-author projects, and this needs only a scan of one string with a stack.

use serde_json::Value;

/// Where a container is open.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Open {
    /// An object; `true` while the next string is a key.
    Object(bool),
    Array,
}

/// The text up to `end`, closed by the containers open there.
fn closed(text: &str, end: usize, stack: &[Open], close_string: bool) -> String {
    let mut out = String::with_capacity(end + stack.len() + 1);
    out.push_str(&text[..end]);
    if close_string {
        out.push('"');
    }
    for open in stack.iter().rev() {
        out.push(match open {
            Open::Object(_) => '}',
            Open::Array => ']',
        });
    }
    out
}

/// The documents `text` (a JSON prefix, whitespace allowed around it) can be finished into,
/// longest first: the open string value closed where it was cut (when the cut fell inside a
/// string value), then the text up to the last complete value or opening bracket. Empty when
/// the text is not the start of an object or array, or is malformed before the cut.
pub fn closings(text: &str) -> Vec<Value> {
    let Some(scan) = scan(text) else {
        return Vec::new();
    };
    let mut out: Vec<Value> = scan.cut_string.into_iter().collect();
    push_new(&mut out, scan.last_complete);
    out
}

/// The closings of a cut *tool call* (arguments the output limit cut), longest first: the text
/// up to the last complete value, then, for each list open at the cut (innermost first), the
/// text up to that list's last complete item. A cut string is never closed: a tool given half a
/// file name or half a node type does something else than what was asked, while a list of
/// items without its unfinished last one (a model repeating one item until the limit) is the
/// call the model was making. The caller keeps the first closing the tool's schema accepts.
pub fn call_closings(text: &str) -> Vec<Value> {
    let Some(scan) = scan(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    push_new(&mut out, scan.last_complete);
    for item in scan.list_items {
        push_new(&mut out, Some(item));
    }
    out
}

fn push_new(out: &mut Vec<Value>, v: Option<Value>) {
    if let Some(v) = v {
        if !out.contains(&v) {
            out.push(v);
        }
    }
}

/// What a JSON prefix can be closed into.
struct Scan {
    /// The open string value closed where it was cut.
    cut_string: Option<Value>,
    /// The text up to the last complete value or opening bracket.
    last_complete: Option<Value>,
    /// For each list open at the cut, innermost first: the text up to its last complete item.
    list_items: Vec<Value>,
}

/// Scans `text`; `None` when it is not the start of an object or array, or is malformed.
fn scan(text: &str) -> Option<Scan> {
    let trimmed = text.trim_start();
    let offset = text.len() - trimmed.len();
    let text = &text[offset..];
    let mut stack: Vec<Open> = Vec::new();
    // The last place the document could end: (byte index, containers open there).
    let mut last_safe: Option<(usize, Vec<Open>)> = None;
    // Inside a string: (whether it is a value, not a key; the previous char was a backslash).
    let mut string: Option<(bool, bool)> = None;
    // Inside a number or literal, which ends at the next delimiter.
    let mut scalar = false;
    // For each open list, by depth: where its last complete item ends (or just after `[`).
    let mut item_ends: Vec<Option<(usize, Vec<Open>)>> = Vec::new();
    for (i, c) in text.char_indices() {
        if let Some((is_value, escaped)) = string.as_mut() {
            if *escaped {
                *escaped = false;
            } else if c == '\\' {
                *escaped = true;
            } else if c == '"' {
                let is_value = *is_value;
                string = None;
                if is_value {
                    last_safe = Some((i + 1, stack.clone()));
                }
            }
            continue;
        }
        if scalar {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+') {
                continue;
            }
            scalar = false;
            last_safe = Some((i, stack.clone()));
        }
        match c {
            '{' | '[' => {
                if i > 0 && stack.is_empty() {
                    return None;
                }
                stack.push(if c == '{' {
                    Open::Object(true)
                } else {
                    Open::Array
                });
                last_safe = Some((i + 1, stack.clone()));
                item_ends.resize(stack.len(), None);
                if c == '[' {
                    item_ends[stack.len() - 1] = Some((i + 1, stack.clone()));
                }
            }
            '}' | ']' => {
                match (stack.pop(), c) {
                    (Some(Open::Object(_)), '}') | (Some(Open::Array), ']') => {}
                    _ => return None,
                }
                last_safe = Some((i + 1, stack.clone()));
                if stack.is_empty() {
                    // A complete document: nothing was cut.
                    return Some(Scan {
                        cut_string: None,
                        last_complete: serde_json::from_str(&text[..=i]).ok(),
                        list_items: Vec::new(),
                    });
                }
            }
            '"' => {
                if stack.is_empty() {
                    return None;
                }
                let is_value = !matches!(stack.last(), Some(Open::Object(true)));
                string = Some((is_value, false));
            }
            ':' => match stack.last_mut() {
                Some(Open::Object(key_next)) if *key_next => *key_next = false,
                _ => return None,
            },
            ',' => match stack.last_mut() {
                Some(Open::Object(key_next)) => *key_next = true,
                Some(Open::Array) => item_ends[stack.len() - 1] = Some((i, stack.clone())),
                None => {}
            },
            c if c.is_whitespace() => {}
            c if c.is_ascii_alphanumeric() || c == '-' => {
                if matches!(stack.last(), None | Some(Open::Object(true))) {
                    return None;
                }
                scalar = true;
            }
            _ => return None,
        }
    }
    let mut cut_string = None;
    if let Some((true, escaped)) = string {
        // Cut inside a string value: keep what was written, without a dangling escape.
        let mut end = text.len();
        if escaped {
            end -= 1;
        }
        let unicode = text[..end].rfind("\\u").filter(|&at| end - at < 6);
        if let Some(at) = unicode {
            end = at;
        }
        cut_string = serde_json::from_str(&closed(text, end, &stack, true)).ok();
    }
    let last_complete = last_safe
        .and_then(|(end, open)| serde_json::from_str(&closed(text, end, &open, false)).ok());
    let list_items = stack
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, open)| **open == Open::Array)
        .filter_map(|(depth, _)| item_ends.get(depth).cloned().flatten())
        .filter_map(|(end, open)| serde_json::from_str(&closed(text, end, &open, false)).ok())
        .collect();
    Some(Scan {
        cut_string,
        last_complete,
        list_items,
    })
}

#[cfg(test)]
mod tests {
    use super::{call_closings, closings};
    use serde_json::json;

    #[test]
    fn a_string_value_cut_midway_is_closed_where_it_stopped() {
        let got = closings(r#"{"next": "responder", "reason": "The workflow"#);
        assert_eq!(
            got,
            vec![
                json!({"next": "responder", "reason": "The workflow"}),
                json!({"next": "responder"}),
            ]
        );
    }

    #[test]
    fn a_cut_key_or_scalar_falls_back_to_the_last_complete_value() {
        assert_eq!(closings(r#"{"a": 1, "b"#), vec![json!({"a": 1})]);
        assert_eq!(closings(r#"{"a": 1, "b": tr"#), vec![json!({"a": 1})]);
        assert_eq!(
            closings(r#"{"a": [1, 2, {"c": "#),
            vec![json!({"a": [1, 2, {}]})]
        );
        assert_eq!(closings(r#"{"a": 12"#), vec![json!({})]);
    }

    #[test]
    fn escapes_inside_the_cut_string_are_not_split() {
        assert_eq!(closings(r#"{"a": "x\"#), vec![json!({"a": "x"}), json!({})]);
        assert_eq!(
            closings(r#"{"a": "x\u00"#),
            vec![json!({"a": "x"}), json!({})]
        );
        assert_eq!(
            closings(r#"{"a": "say \"hi\" and"#),
            vec![json!({"a": "say \"hi\" and"}), json!({})]
        );
    }

    #[test]
    fn a_complete_document_is_itself_and_text_is_not_json() {
        assert_eq!(closings(r#" {"a": [true]} "#), vec![json!({"a": [true]})]);
        assert!(closings("Sure! Here is").is_empty());
        assert!(closings(r#"{"a" 1"#).is_empty());
        assert!(closings("").is_empty());
    }

    #[test]
    fn a_cut_call_never_closes_a_string_and_drops_unfinished_list_items() {
        // A file's content cut midway is not a call to make.
        assert_eq!(
            call_closings(r#"{"path": "a.txt", "content": "hello wor"#),
            vec![json!({"path": "a.txt"})]
        );
        // Innermost list first, then the outer one.
        let cut =
            r#"{"nodes": [{"name": "a", "params": [1, 2]}, {"name": "b", "params": [3, {"x": "#;
        assert_eq!(
            call_closings(cut),
            vec![
                json!({"nodes": [{"name": "a", "params": [1, 2]}, {"name": "b", "params": [3, {}]}]}),
                json!({"nodes": [{"name": "a", "params": [1, 2]}, {"name": "b", "params": [3]}]}),
                json!({"nodes": [{"name": "a", "params": [1, 2]}]}),
            ]
        );
        // A list cut before its first item closes empty.
        assert_eq!(
            call_closings(r#"{"q": [{"a"#),
            vec![json!({"q": [{}]}), json!({"q": []})]
        );
        // A closed list is not open at the cut: only the open ones give closings.
        assert_eq!(
            call_closings(r#"{"done": [1, 2], "next": {"k": tr"#),
            vec![json!({"done": [1, 2], "next": {}})]
        );
        assert_eq!(call_closings(r#"{"a": [1]}"#), vec![json!({"a": [1]})]);
        assert!(call_closings("Sure").is_empty());
    }
}
