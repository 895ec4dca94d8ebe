//! The validator next to n8n's own judgement, on the real workflow corpus.
//!
//! Every corpus workflow is created in n8n and then activated (and removed again). n8n's
//! verdict: **rejected** when the create is refused or the activation fails for a reason that
//! is the workflow's (an unknown node type or version, a broken node); **accepted** otherwise.
//! Activation failures that are about this test instance, not the workflow, count as
//! accepted and are tallied apart: missing credentials (the corpus ships none), a trigger that
//! must reach the internet, and workflows whose only trigger is a Manual one (runnable, but
//! not activatable). n8n checks neither parameters nor connections on create, so a validator
//! finding on a workflow n8n accepts is expected: the table shows how often per rule.
//!
//! The validator runs with the instance's own node types (`/types/nodes.json`, what the
//! builder uses with `catalogue from-n8n`) and, for comparison, with the shipped catalogue
//! (`$AGENTGRAPH_N8N_CATALOGUE`, a newer n8n release: its newer node versions are unknown to
//! the instance). The test fails on any workflow n8n rejects while the validator, with the
//! instance's node types, finds no error, unless it is listed in `KNOWN_LIMITS` with the
//! reason. The tables are written to `<target>/tmp/n8n-corpus-verdicts.md`.

use agentgraph_n8n::client::{ClientError, N8nClient, Session};
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::validate::{validate, Severity, RULES};
use agentgraph_std_tools::workflow::Workflow;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Workflows n8n rejects that the validator passes, each with why the validator cannot know.
const KNOWN_LIMITS: &[(&str, &str)] = &[];

#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    Accepted,
    /// Accepted, but activation failed for a reason outside the workflow.
    NotActivatable(&'static str),
    Rejected(String),
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if p.is_dir() {
            if name != "_invalid-json" {
                walk(&p, out);
            }
        } else if name.ends_with(".json") && name != "manifest.json" {
            out.push(p);
        }
    }
}

/// Why an activation failed when the reason is this instance's, not the workflow's.
fn environmental(message: &str, workflow: &Value) -> Option<&'static str> {
    let m = message.to_ascii_lowercase();
    if m.contains("no node to start the workflow") {
        Some("manual trigger only")
    } else if m.contains("credential") {
        Some("credentials")
    } else if [
        "connection cannot be established",
        "enotfound",
        "getaddrinfo",
        "econnrefused",
        "eai_again",
        "timeout",
        "network",
    ]
    .iter()
    .any(|s| m.contains(s))
    {
        Some("needs the internet")
    } else if trigger_with_credentials(workflow) {
        // An app trigger registers itself with its service on activation, with credentials
        // this instance does not have; n8n's message then comes from inside the node.
        Some("credentials")
    } else {
        None
    }
}

/// Whether an enabled trigger node of `workflow` uses credentials.
fn trigger_with_credentials(workflow: &Value) -> bool {
    workflow["nodes"].as_array().into_iter().flatten().any(|n| {
        n["type"].as_str().is_some_and(|t| t.ends_with("Trigger"))
            && !n["disabled"].as_bool().unwrap_or(false)
            && n["credentials"].as_object().is_some_and(|c| !c.is_empty())
    })
}

async fn n8n_verdict(client: &N8nClient, workflow: &Value) -> Verdict {
    let created = match client.create_workflow(workflow).await {
        Ok(c) => c,
        Err(e @ ClientError::Rejected { .. }) => return Verdict::Rejected(format!("create: {e}")),
        Err(e) => panic!("n8n failed on create: {e}"),
    };
    let id = created["id"].as_str().expect("an id").to_string();
    let verdict = match client.activate_workflow(&id).await {
        Ok(_) => {
            let _ = client.deactivate_workflow(&id).await;
            Verdict::Accepted
        }
        Err(ClientError::Rejected { message, .. }) => match environmental(&message, workflow) {
            Some(why) => Verdict::NotActivatable(why),
            None => Verdict::Rejected(format!("activate: {message}")),
        },
        Err(e) => panic!("n8n failed on activate: {e}"),
    };
    client.delete_workflow(&id).await.expect("delete");
    verdict
}

#[tokio::test]
async fn the_validator_next_to_n8n_on_the_corpus() {
    let Some(client) = super::client() else {
        return;
    };
    let Some(corpus) = agentgraph_test_support::n8n_workflows() else {
        return;
    };
    let Some(cat_dir) = agentgraph_test_support::n8n_catalogue() else {
        return;
    };
    let shipped = Catalogue::load_n8n_dir(&cat_dir).expect("the real catalogue loads");
    let n8n = agentgraph_test_support::require_n8n().expect("instance");
    let session = Session::login(&n8n.url, &n8n.email, &n8n.password)
        .await
        .expect("login");
    let types = session.node_types().await.expect("node types");
    let types_file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("n8n-instance-nodes.json");
    std::fs::write(&types_file, types.to_string()).expect("write the node types");
    let instance =
        Catalogue::load_node_types_export(&types_file).expect("the instance's types load");
    let mut files = Vec::new();
    walk(&corpus, &mut files);
    assert_eq!(files.len(), 340, "workflow files in the corpus");

    let mut totals: BTreeMap<String, usize> = BTreeMap::new();
    let mut judged: Vec<(String, Workflow, Verdict)> = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&corpus).unwrap_or(f).display().to_string();
        let text = std::fs::read_to_string(f).expect("readable");
        let wf = Workflow::from_json_str(&text).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let json: Value = serde_json::from_str(&text).expect("JSON");
        let verdict = n8n_verdict(&client, &json).await;
        let key = match &verdict {
            Verdict::Accepted => "accepted, activated".to_string(),
            Verdict::NotActivatable(why) => format!("accepted, not activatable here: {why}"),
            Verdict::Rejected(_) => "rejected".to_string(),
        };
        *totals.entry(key).or_default() += 1;
        judged.push((rel, wf, verdict));
    }
    let mut table = String::from("| n8n's verdict | workflows |\n|---|---:|\n");
    for (k, n) in &totals {
        table.push_str(&format!("| {k} | {n} |\n"));
    }
    let (instance_table, unexplained) = compare(&judged, &instance);
    let (shipped_table, _) = compare(&judged, &shipped);
    table.push_str(&format!(
        "\n## Validator with the instance's node types\n\n{instance_table}\n\
         ## Validator with the shipped catalogue (a newer n8n release)\n\n{shipped_table}"
    ));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("n8n-corpus-verdicts.md");
    std::fs::write(&out, &table).expect("write the table");
    println!("{table}\n(written to {})", out.display());
    assert!(
        unexplained.is_empty(),
        "n8n rejects these workflows but the validator (with the instance's node types) finds \
         no error (fix the validator or list them in KNOWN_LIMITS with the reason): \
         {unexplained:#?}"
    );
}

/// The per-rule table of the validator with `catalogue` next to n8n's verdicts, and the
/// workflows n8n rejects with no validator error that `KNOWN_LIMITS` does not explain.
fn compare(
    judged: &[(String, Workflow, Verdict)],
    catalogue: &Catalogue,
) -> (String, Vec<(String, String)>) {
    // rule -> (flagged and n8n accepted, flagged and n8n rejected)
    let mut per_rule: BTreeMap<&'static str, (usize, usize)> = BTreeMap::new();
    let mut we_pass_n8n_rejects: Vec<(String, String)> = Vec::new();
    let (mut both_reject, mut we_fail_n8n_accepts) = (0, 0);
    for (rel, wf, verdict) in judged {
        let report = validate(wf, catalogue);
        let rejected = matches!(verdict, Verdict::Rejected(_));
        let mut codes: Vec<&'static str> = report.findings.iter().map(|f| f.code).collect();
        codes.sort();
        codes.dedup();
        for code in codes {
            let e = per_rule.entry(code).or_default();
            if rejected {
                e.1 += 1
            } else {
                e.0 += 1
            }
        }
        let errors = report
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count();
        match (verdict, errors) {
            (Verdict::Rejected(why), 0) => we_pass_n8n_rejects.push((rel.clone(), why.clone())),
            (Verdict::Rejected(_), _) => both_reject += 1,
            (_, n) if n > 0 => we_fail_n8n_accepts += 1,
            _ => {}
        }
    }
    let mut table = format!(
        "Both reject: {both_reject}. Validator errors on workflows n8n accepts: \
         {we_fail_n8n_accepts}. n8n rejects, validator finds no error: {}.\n\n\
         | rule | severity | flagged, n8n accepted | flagged, n8n rejected |\n|---|---|---:|---:|\n",
        we_pass_n8n_rejects.len()
    );
    for r in RULES {
        if let Some((a, j)) = per_rule.get(r.code) {
            table.push_str(&format!("| {} | {:?} | {a} | {j} |\n", r.code, r.severity));
        }
    }
    for (f, why) in &we_pass_n8n_rejects {
        table.push_str(&format!(
            "\nn8n rejects, validator finds no error: {f}: {why}\n"
        ));
    }
    let unexplained = we_pass_n8n_rejects
        .into_iter()
        .filter(|(f, _)| !KNOWN_LIMITS.iter().any(|(k, _)| k == f))
        .collect();
    (table, unexplained)
}
