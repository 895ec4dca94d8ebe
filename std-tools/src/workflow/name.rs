//! The name of a new workflow: the naming model's answer when it is usable, else a short name
//! derived from the request.
//!
//! A small model asked for a name may answer with the whole request, a paragraph, or a line
//! with stray spaces and quotes; such a name would follow the workflow everywhere (n8n's list,
//! the chat). [`workflow_name`] keeps the answer only when it looks like a name.

/// The longest name kept from the model, in characters.
pub const MAX_NAME_CHARS: usize = 60;

/// The most words kept from the model (it is asked for 2 to 6).
pub const MAX_NAME_WORDS: usize = 8;

/// The name used when neither the answer nor the request gives one.
pub const DEFAULT_NAME: &str = "New Workflow";

/// Words left out of a name derived from the request.
const FILLER: &[&str] = &[
    "a", "an", "the", "my", "me", "i", "to", "and", "or", "with", "of", "for", "in", "on", "at",
    "by", "from", "into", "please", "can", "could", "you", "create", "build", "make", "set", "up",
    "workflow", "that", "which", "it", "is", "are", "us", "our", "your", "some", "want", "would",
    "like", "need", "new", "n8n", "then", "when", "every", "each", "all",
];

/// The most words a derived name keeps.
const DERIVED_WORDS: usize = 4;

/// The workflow's name: `answer` trimmed of spaces and quotes when it is usable (one line, at
/// most [`MAX_NAME_CHARS`] characters and [`MAX_NAME_WORDS`] words, not the request itself),
/// else a name derived from
/// `request`: its first few meaningful words in Title Case, or [`DEFAULT_NAME`].
pub fn workflow_name(answer: Option<&str>, request: &str) -> String {
    if let Some(name) = answer.and_then(|a| usable(a, request)) {
        return name;
    }
    derived(request)
}

fn usable(answer: &str, request: &str) -> Option<String> {
    let trimmed = answer
        .trim()
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | '*' | '#'))
        .trim();
    let squash = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let ok = !trimmed.is_empty()
        && !trimmed.contains(['\n', '\r'])
        && trimmed.chars().count() <= MAX_NAME_CHARS
        && trimmed.split_whitespace().count() <= MAX_NAME_WORDS
        && squash(trimmed) != squash(request);
    ok.then(|| trimmed.to_string())
}

fn derived(request: &str) -> String {
    let words: Vec<String> = request
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !FILLER.contains(&w.to_lowercase().as_str()))
        .take(DERIVED_WORDS)
        .map(|w| {
            let mut chars = w.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        })
        .collect();
    let mut name = String::new();
    for w in words {
        let next = if name.is_empty() {
            w
        } else {
            format!("{name} {w}")
        };
        if next.chars().count() > MAX_NAME_CHARS {
            break;
        }
        name = next;
    }
    if name.is_empty() {
        DEFAULT_NAME.to_string()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUEST: &str =
        "Every morning at 7, get the weather forecast for Berlin and email it to me";

    #[test]
    fn a_short_answer_is_kept_trimmed() {
        assert_eq!(
            workflow_name(Some("  \"Daily Weather Email\" "), REQUEST),
            "Daily Weather Email"
        );
    }

    #[test]
    fn unusable_answers_give_a_name_from_the_request() {
        let from_request = "Morning 7 Get Weather";
        let report = "The weather in Berlin today is mostly sunny with a high of 21 degrees \
                      and a light breeze from the west; tomorrow brings clouds.";
        let sentence = "Get the forecast for Berlin and mail it at 7";
        for bad in [
            report,
            REQUEST,
            sentence,
            "Weather\nEmail",
            "",
            "   ",
            "\"\"",
        ] {
            assert_eq!(workflow_name(Some(bad), REQUEST), from_request, "{bad:?}");
        }
        assert_eq!(workflow_name(None, REQUEST), from_request);
        assert_eq!(
            workflow_name(Some(&REQUEST.to_uppercase()), REQUEST),
            from_request
        );
    }

    #[test]
    fn a_request_without_words_gives_the_default() {
        assert_eq!(
            workflow_name(None, "please, build a workflow!"),
            DEFAULT_NAME
        );
    }

    #[test]
    fn a_derived_name_stays_short() {
        let long = "Supercalifragilisticexpialidocious ".repeat(4);
        assert!(workflow_name(None, &long).chars().count() <= MAX_NAME_CHARS);
    }
}
