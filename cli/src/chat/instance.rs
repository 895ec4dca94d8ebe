//! Instance AI in the chat (`--graph instance-ai`): the questions its tools ask
//! (confirmations, plan reviews, web hosts, `ask_user`) answered at the prompt, the plan and
//! the background tasks shown after each turn, and `/tasks` (the thread's live tasks now).

use agentgraph_agents::orchestration::background::registry;
use agentgraph_runtime::Interrupt;
use serde_json::{json, Value};
use std::path::Path;

/// The name `--graph` and `/graph` take.
pub(crate) const NAME: &str = "instance-ai";
/// The shipped file, under `graphs/`.
pub(crate) const FILE: &str = "instance-ai/orchestrator.ag";

/// Whether a recorded graph is Instance AI's orchestrator.
pub(super) fn is_instance(record: &Path) -> bool {
    record.ends_with(FILE)
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// What to print for a pending question, ending with what to type.
pub(super) fn question(i: &Interrupt) -> String {
    let v = &i.value;
    match v["kind"].as_str() {
        Some("confirm") => {
            let mut out = text(&v["message"]);
            for c in v["changes"].as_array().into_iter().flatten() {
                out.push_str(&format!("\n  - {}", text(c)));
            }
            out.push_str("\nconfirm? [y/N]");
            out
        }
        Some("plan_review") => {
            let mut out = text(&v["message"]);
            for (n, t) in v["tasks"].as_array().into_iter().flatten().enumerate() {
                let deps: Vec<String> = t["deps"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(text)
                    .collect();
                out.push_str(&format!(
                    "\n  {}. {} [{}] {}{}",
                    n + 1,
                    text(&t["id"]),
                    text(&t["kind"]),
                    text(&t["title"]),
                    if deps.is_empty() {
                        String::new()
                    } else {
                        format!(" (after {})", deps.join(", "))
                    }
                ));
            }
            out.push_str("\napprove? [y, or what to change]");
            out
        }
        Some("domain_access") => format!("{}\nallow? [y/N]", text(&v["message"])),
        Some("question") => {
            let mut out = text(&v["question"]);
            let options: Vec<String> = v["options"]
                .as_array()
                .into_iter()
                .flatten()
                .map(text)
                .collect();
            if !options.is_empty() {
                out.push_str(&format!(" ({})", options.join(" / ")));
            }
            out
        }
        _ => format!("the graph asks: {v}"),
    }
}

fn yes(line: &str) -> bool {
    matches!(
        line.trim().to_lowercase().as_str(),
        "y" | "yes" | "ok" | "approve" | "approved" | "confirm" | "run" | "allow"
    )
}

/// The answer `line` gives to a pending question.
pub(super) fn answer(i: &Interrupt, line: &str) -> Value {
    match i.value["kind"].as_str() {
        Some("confirm" | "domain_access") => json!({"approved": yes(line)}),
        Some("plan_review") if yes(line) => json!({"approved": true}),
        Some("plan_review") => json!({"approved": false, "feedback": line.trim()}),
        _ => json!(line.trim()),
    }
}

/// The plan's tasks with their statuses, when the thread has a plan.
pub(super) fn plan_lines(values: &Value) -> Option<String> {
    let tasks = values["plan"]["tasks"].as_array()?;
    if tasks.is_empty() {
        return None;
    }
    let mut out = String::from("plan:");
    for t in tasks {
        out.push_str(&format!(
            "\n  [{}] {} {}",
            text(&t["status"]),
            text(&t["id"]),
            text(&t["title"])
        ));
    }
    Some(out)
}

/// The background tasks as the orchestrator last saw them, when there are any.
pub(super) fn tasks_block(values: &Value) -> Option<String> {
    let block = values["background_status"].as_str()?.trim();
    (!block.is_empty() && !block.starts_with("No background tasks")).then(|| block.to_string())
}

/// `/tasks`: the thread's tasks this process runs or ran, now.
pub(super) fn live_tasks(thread: &str) -> String {
    let list = registry().list(thread);
    if list.is_empty() {
        return "no background task runs in this session (their last status is in the \
                thread's background_tasks)"
            .into();
    }
    let mut out = String::from("background tasks:");
    for t in list {
        out.push_str(&format!("\n  {} [{}]", t.id, t.state.as_str()));
        if let Some(r) = t.result.as_deref().filter(|r| !r.is_empty()) {
            let r: String = r.chars().take(200).collect();
            out.push_str(&format!(" {r}"));
        }
    }
    out
}

impl super::Session<'_> {
    /// Whether the session runs Instance AI.
    pub(super) fn is_instance(&self) -> bool {
        is_instance(&self.graph_name)
    }

    /// The plan and the background tasks after a turn.
    pub(super) fn show_instance(&self, values: &Value) {
        for (event, block) in [("plan", plan_lines(values)), ("tasks", tasks_block(values))] {
            if let Some(b) = block {
                self.say(json!({"event": event, "text": b}), || format!("\n{b}"));
            }
        }
    }

    /// Asks the pending questions at the prompt, then resumes the turn with the answers, until
    /// the thread waits for nothing (or the input ends: the questions stay pending).
    pub(super) async fn answer_questions(&mut self, input: &mut super::input::Input) -> bool {
        while !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            let mut answers = std::collections::BTreeMap::new();
            for i in &pending {
                self.say(
                    json!({"event": "question", "id": i.id, "value": i.value}),
                    || format!("\n{}", question(i)),
                );
                let prompt = super::input::ChatPrompt {
                    graph: self.short_name(),
                    color: self.look.color,
                };
                match input.read(&prompt).await {
                    super::input::Read::Line(l) => {
                        answers.insert(i.id.clone(), answer(i, &l));
                    }
                    _ => {
                        self.pending = pending;
                        return false;
                    }
                }
            }
            let resume = agentgraph_runtime::Resume::ById(answers);
            if !self.turn(agentgraph_server::Opening::Answer(resume)).await {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(value: Value) -> Interrupt {
        Interrupt {
            id: "i".into(),
            value,
            node: "tools".into(),
            ns: Vec::new(),
        }
    }

    #[test]
    fn a_confirmation_shows_its_changes_and_only_a_clear_yes_approves() {
        let i = asked(json!({"kind": "confirm", "message": "Activate \"hello\"?",
                             "changes": ["active: false -> true"]}));
        assert_eq!(
            question(&i),
            "Activate \"hello\"?\n  - active: false -> true\nconfirm? [y/N]"
        );
        assert_eq!(answer(&i, " Yes "), json!({"approved": true}));
        assert_eq!(answer(&i, "no"), json!({"approved": false}));
        assert_eq!(answer(&i, ""), json!({"approved": false}));
    }

    #[test]
    fn a_plan_review_lists_the_tasks_and_takes_feedback() {
        let i = asked(
            json!({"kind": "plan_review", "message": "Approve this plan?",
            "tasks": [{"id": "a", "kind": "research", "title": "Read docs", "deps": []},
                      {"id": "b", "kind": "delegate", "title": "Check", "deps": ["a"]}]}),
        );
        assert_eq!(
            question(&i),
            "Approve this plan?\n  1. a [research] Read docs\n  2. b [delegate] Check (after a)\
             \napprove? [y, or what to change]"
        );
        assert_eq!(answer(&i, "y"), json!({"approved": true}));
        assert_eq!(
            answer(&i, "skip the docs"),
            json!({"approved": false, "feedback": "skip the docs"})
        );
    }

    #[test]
    fn a_plan_and_a_task_block_are_shown_only_when_there_are_some() {
        let v = json!({"plan": {"tasks": [{"id": "a", "title": "Read", "status": "succeeded"}]},
                       "background_status": "No background tasks in this thread."});
        assert_eq!(
            plan_lines(&v).as_deref(),
            Some("plan:\n  [succeeded] a Read")
        );
        assert_eq!(tasks_block(&v), None);
        assert_eq!(plan_lines(&json!({})), None);
    }
}
