//! Cases for agents that act on an n8n instance (Instance AI's orchestrator) rather than build
//! a workflow: workflows created in the instance before the run, the questions the agent asks
//! answered as the case says, and what the answer must say and the instance must show after.
//!
//! A case line with an `instance` block:
//!
//! ```json
//! {"id": "run-hello", "prompt": "Run my workflow hello with name=world …", "source": "…",
//!  "instance": {"setup": [{"name": "hello", "nodes": […], "connections": {…}}],
//!               "answer": ["Hello, world!"], "tools": ["run_workflow"],
//!               "active": {"hello": false}}}
//! ```
//!
//! Every string `{{unique}}` inside `setup` is replaced by a fresh id (webhook paths and ids
//! that never collide). Workflows of the same name are deleted before the setup ones are
//! created, and the setup ones (and any of the same names the agent created) after the case.

use agentgraph_n8n::client::{N8nClient, WorkflowQuery};
use agentgraph_runtime::Interrupt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

use crate::cases::TypeSpec;
use crate::meter::Meter;
use crate::score::{ChecklistScore, Item};

/// What an instance case sets up, answers and checks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstanceCase {
    /// Workflows created in the instance before the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<Value>,
    /// Text the final answer must contain, case-insensitively (each entry: a text or
    /// alternatives).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answer: Vec<TypeSpec>,
    /// Tools that must have succeeded at least once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Workflows (by name) and whether each must be active when the run ends.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub active: BTreeMap<String, bool>,
    /// Whether confirmations, plan reviews and web hosts are approved (default: yes).
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub approve: bool,
    /// The reply to a question the agent asks the user (`ask_user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

/// What the reply is when a case names none.
pub const DEFAULT_REPLY: &str = "I have nothing to add: use your judgement and go on.";

impl InstanceCase {
    /// The answer to one pending question, as the chat would send it after the case's reply.
    pub fn answer_to(&self, i: &Interrupt) -> Value {
        match i.value["kind"].as_str() {
            Some("confirm" | "domain_access") => json!({"approved": self.approve}),
            Some("plan_review") if self.approve => json!({"approved": true}),
            Some("plan_review") => json!({"approved": false, "feedback": "No, do not do that."}),
            _ => json!(self.reply.as_deref().unwrap_or(DEFAULT_REPLY)),
        }
    }

    /// The names of the setup workflows.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .setup
            .iter()
            .filter_map(|w| w["name"].as_str().map(str::to_string))
            .collect();
        names.extend(self.active.keys().cloned());
        names.sort();
        names.dedup();
        names
    }
}

/// The scores of an instance case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InstanceScore {
    /// The items (answer, tools, active) and how many are met.
    #[serde(flatten)]
    pub checks: ChecklistScore,
    /// The kinds of the questions answered during the run, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answered: Vec<String>,
    /// Why the setup or the checks in n8n failed, if they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl InstanceScore {
    /// Whether there are items and every one holds.
    pub fn all_pass(&self) -> bool {
        self.checks.total > 0 && self.checks.all_pass()
    }

    fn from_items(items: Vec<Item>) -> Self {
        InstanceScore {
            checks: ChecklistScore::of(items),
            ..Default::default()
        }
    }

    /// A score for a case whose setup failed: every item failed, with why.
    pub fn failed_setup(case: &InstanceCase, why: String) -> Self {
        let mut s = Self::from_items(items(case, "", &Meter::default(), &BTreeMap::new()));
        s.error = Some(why);
        s
    }
}

/// The items of `case` for an answer, the tools a run used and the instance's active flags.
pub fn items(
    case: &InstanceCase,
    answer: &str,
    meter: &Meter,
    active: &BTreeMap<String, bool>,
) -> Vec<Item> {
    let said = answer.to_lowercase();
    let mut out: Vec<Item> = case
        .answer
        .iter()
        .map(|want| Item {
            item: format!("answer {}", want.alternatives().join("|")),
            pass: want
                .alternatives()
                .iter()
                .any(|alt| said.contains(&alt.to_lowercase())),
        })
        .collect();
    out.extend(case.tools.iter().map(|t| Item {
        item: format!("tool {t}"),
        pass: meter.tools_ok.get(t).is_some_and(|n| *n > 0),
    }));
    out.extend(case.active.iter().map(|(name, want)| Item {
        item: format!("{} {name}", if *want { "active" } else { "inactive" }),
        pass: active.get(name) == Some(want),
    }));
    out
}

/// Replaces every `{{unique}}` inside string values of `v` with a fresh id.
fn with_unique_ids(v: &Value) -> Value {
    match v {
        Value::String(s) if s.contains("{{unique}}") => {
            let mut out = s.clone();
            while out.contains("{{unique}}") {
                let id = uuid::Uuid::new_v4().to_string();
                out = out.replacen("{{unique}}", &id, 1);
            }
            Value::String(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(with_unique_ids).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), with_unique_ids(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The workflows named `name`.
async fn named(client: &N8nClient, name: &str) -> Result<Vec<Value>, String> {
    let query = WorkflowQuery {
        name: Some(name.to_string()),
        ..Default::default()
    };
    client
        .list_workflows(&query)
        .await
        .map_err(|e| format!("cannot list the workflows named {name:?}: {e}"))
}

/// Deletes every workflow named like one of the case's.
pub async fn clear(client: &N8nClient, case: &InstanceCase) -> Result<(), String> {
    for name in case.names() {
        for wf in named(client, &name).await? {
            if let Some(id) = wf["id"].as_str() {
                client
                    .delete_workflow(id)
                    .await
                    .map_err(|e| format!("cannot delete workflow {id} ({name:?}): {e}"))?;
            }
        }
    }
    Ok(())
}

/// Clears the case's names, then creates its setup workflows.
pub async fn set_up(client: &N8nClient, case: &InstanceCase) -> Result<(), String> {
    clear(client, case).await?;
    for wf in &case.setup {
        let name = wf["name"].as_str().unwrap_or("(unnamed)");
        client
            .create_workflow(&with_unique_ids(wf))
            .await
            .map_err(|e| format!("cannot create setup workflow {name:?}: {e}"))?;
    }
    Ok(())
}

/// Whether each workflow the case names is active (a name with no workflow is left out).
pub async fn active_flags(
    client: &N8nClient,
    case: &InstanceCase,
) -> Result<BTreeMap<String, bool>, String> {
    let mut out = BTreeMap::new();
    for name in case.active.keys() {
        if let Some(wf) = named(client, name).await?.first() {
            out.insert(name.clone(), wf["active"].as_bool().unwrap_or(false));
        }
    }
    Ok(out)
}

/// Scores a finished run: the answer, the tools it used, the instance's state now.
pub async fn score(
    client: &N8nClient,
    case: &InstanceCase,
    answer: &str,
    meter: &Meter,
    answered: Vec<String>,
) -> InstanceScore {
    let (active, error) = match active_flags(client, case).await {
        Ok(a) => (a, None),
        Err(e) => (BTreeMap::new(), Some(e)),
    };
    let mut s = InstanceScore::from_items(items(case, answer, meter, &active));
    s.answered = answered;
    s.error = error;
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(v: Value) -> InstanceCase {
        serde_json::from_value(v).unwrap()
    }

    fn asked(kind: &str) -> Interrupt {
        Interrupt {
            id: "i".into(),
            value: json!({"kind": kind, "question": "Which one?"}),
            node: "tools".into(),
            ns: vec![],
        }
    }

    #[test]
    fn questions_are_answered_as_the_case_says() {
        let approve = case(json!({}));
        assert_eq!(
            approve.answer_to(&asked("confirm")),
            json!({"approved": true})
        );
        assert_eq!(
            approve.answer_to(&asked("plan_review")),
            json!({"approved": true})
        );
        assert_eq!(approve.answer_to(&asked("question")), json!(DEFAULT_REPLY));
        let deny = case(json!({"approve": false, "reply": "the second"}));
        assert_eq!(
            deny.answer_to(&asked("domain_access")),
            json!({"approved": false})
        );
        assert_eq!(deny.answer_to(&asked("plan_review"))["approved"], false);
        assert_eq!(deny.answer_to(&asked("question")), json!("the second"));
    }

    #[test]
    fn items_check_the_answer_tools_and_active_flags() {
        let c = case(json!({
            "answer": ["Hello, world!", ["two runs", "2 runs"]],
            "tools": ["run_workflow", "list_workflows"],
            "active": {"hook": true, "other": false}
        }));
        let mut meter = Meter::default();
        meter.tools_ok.insert("run_workflow".into(), 1);
        let active = BTreeMap::from([("hook".to_string(), true)]);
        let got = items(&c, "It said HELLO, WORLD! after 2 runs.", &meter, &active);
        let pass: Vec<(&str, bool)> = got.iter().map(|i| (i.item.as_str(), i.pass)).collect();
        assert_eq!(
            pass,
            [
                ("answer Hello, world!", true),
                ("answer two runs|2 runs", true),
                ("tool run_workflow", true),
                ("tool list_workflows", false),
                ("active hook", true),
                // No workflow of that name is left: not "inactive as asked".
                ("inactive other", false),
            ]
        );
        let s = InstanceScore::from_items(got);
        assert_eq!((s.checks.passed, s.checks.total), (4, 6));
        assert!(!s.all_pass());
    }

    #[test]
    fn unique_placeholders_get_fresh_ids_each() {
        let v = with_unique_ids(&json!({"a": "p-{{unique}}", "b": ["{{unique}}"], "n": 1}));
        let a = v["a"].as_str().unwrap();
        let b = v["b"][0].as_str().unwrap();
        assert!(a.starts_with("p-") && a.len() == 2 + 36, "{a}");
        assert_eq!(b.len(), 36);
        assert_ne!(&a[2..], b);
        assert_eq!(v["n"], 1);
    }
}
