//! Corpus test: every published workflow of the corpus (`$AGENTGRAPH_N8N_WORKFLOWS`) validates
//! against the real n8n catalogue (`$AGENTGRAPH_N8N_CATALOGUE`; and the built-in one) without a
//! panic, and the per-rule finding counts match the numbers recorded below. The broken files
//! give a clear, located error each. Skips without the data (a failure under `CI=true`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::validate::{validate, Report, RULES};
use agentgraph_std_tools::workflow::{Workflow, WorkflowError};

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

/// Findings per rule code over the whole corpus, recorded from a run and checked by hand
/// (sorted by code; codes with no finding are absent). Notes from the review:
/// * no NO_TRIGGER: the one workflow without a catalogue trigger (a community
///   `n8n-nodes-fiwano.fiwanoTrigger`) counts as triggered because its unknown type is named
///   `…Trigger`; its types are NODE_TYPE_NOT_FOUND (8 findings: community nodes and the
///   removed `n8n-nodes-base.start`).
/// * NODE_VERSION_NOT_FOUND: `n8n-nodes-base.openAi` at typeVersion 1.8/2 (only 1 and 1.1 exist).
/// * OUTPUT_INDEX_OUT_OF_RANGE: a Code node connected from output 1 (error outputs of
///   `onError: continueErrorOutput` nodes are counted and not reported).
/// * UNSUPPORTED_CONNECTION_TYPE: a schedule trigger connected into the IMAP trigger.
/// * INVALID_OPTION_VALUE: Code nodes with `language: "python"` (this catalogue only has
///   `javaScript`/`pythonNative`) and an Airtable v1 `operation: "search"`.
/// * EXPRESSION_MISSING_NODE: `$('HTML')`, `$('Webhook')`, … after renames; jQuery `$('title')`
///   in plain (non-expression) request bodies is not counted.
/// * HARDCODED_CREDENTIAL: real-looking keys (a 32-hex `key` query parameter, `sk-…`) and
///   placeholders such as `Bearer YOUR_OPENAI_API_KEY` (the design puts a secret in the
///   workflow either way); `=Bearer {{ $json.token }}` is not counted.
/// * 16 workflows have non-sticky nodes without any connection: 12 give UNREACHABLE_NODE
///   ("no connections at all") or SUB_NODE_NOT_CONNECTED, 2 only lone triggers
///   (TRIGGER_NOT_CONNECTED), and in 2 the lone nodes are disabled (never reported).
/// * UNKNOWN_PARAMETER: 23 genuine stale or misplaced keys in 9 workflows (invented IMAP
///   `operation`/`limit`, Airtable v1 `filterByFormula` outside `additionalOptions`, HTTP
///   Request 4.2 pagination settings one level too high, a v1 option on v4.2, …).
/// * no FROM_AI_OUTSIDE_TOOL: the three sticky notes mentioning `$fromAI(` are never executed
///   and are skipped.
const RECORDED: &[(&str, usize)] = &[
    ("AGENT_NO_SYSTEM_PROMPT", 30),
    ("AGENT_STATIC_PROMPT", 4),
    ("EXPRESSION_MISSING_NODE", 5),
    ("HARDCODED_CREDENTIAL", 23),
    ("INVALID_OPTION_VALUE", 11),
    ("MISSING_REQUIRED_PARAMETER", 56),
    ("NODE_TYPE_NOT_FOUND", 8),
    ("NODE_VERSION_NOT_FOUND", 11),
    ("OUTPUT_INDEX_OUT_OF_RANGE", 1),
    ("RESPOND_NODE_WITHOUT_RESPONSE_MODE", 1),
    ("SUB_NODE_NOT_CONNECTED", 6),
    ("TRIGGER_NOT_CONNECTED", 4),
    ("UNKNOWN_PARAMETER", 23),
    ("UNREACHABLE_NODE", 96),
    ("UNSUPPORTED_CONNECTION_TYPE", 1),
    ("WEBHOOK_RESPOND_NODE_MISSING", 1),
];

/// Number of workflows with at least one finding of each code.
const RECORDED_WORKFLOWS: &[(&str, usize)] = &[
    ("AGENT_NO_SYSTEM_PROMPT", 29),
    ("AGENT_STATIC_PROMPT", 4),
    ("EXPRESSION_MISSING_NODE", 4),
    ("HARDCODED_CREDENTIAL", 17),
    ("INVALID_OPTION_VALUE", 11),
    ("MISSING_REQUIRED_PARAMETER", 26),
    ("NODE_TYPE_NOT_FOUND", 5),
    ("NODE_VERSION_NOT_FOUND", 7),
    ("OUTPUT_INDEX_OUT_OF_RANGE", 1),
    ("RESPOND_NODE_WITHOUT_RESPONSE_MODE", 1),
    ("SUB_NODE_NOT_CONNECTED", 4),
    ("TRIGGER_NOT_CONNECTED", 2),
    ("UNKNOWN_PARAMETER", 9),
    ("UNREACHABLE_NODE", 24),
    ("UNSUPPORTED_CONNECTION_TYPE", 1),
    ("WEBHOOK_RESPOND_NODE_MISSING", 1),
];

#[test]
fn corpus_validates_with_recorded_counts() {
    let Some(dir) = agentgraph_test_support::n8n_workflows() else {
        return;
    };
    let Some(cat_dir) = agentgraph_test_support::n8n_catalogue() else {
        return;
    };
    let catalogue = match Catalogue::load_n8n_dir(&cat_dir) {
        Ok(c) => c,
        Err(e) => panic!("the real catalogue loads: {e}"),
    };
    let builtin = match Catalogue::builtin() {
        Ok(c) => c,
        Err(e) => panic!("the built-in catalogue loads: {e}"),
    };
    let mut files = Vec::new();
    walk(&dir, &mut files);
    assert_eq!(files.len(), 340, "workflow files in the corpus");
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut per_workflow: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut slowest = (0.0f64, String::new());
    let show = std::env::var("SHOW_CODE").ok();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let wf = match Workflow::from_json_str(&text) {
            Ok(w) => w,
            Err(e) => panic!("{} does not load: {e}", f.display()),
        };
        // the compact built-in catalogue must not panic either (many unknown types)
        let _ = validate(&wf, &builtin);
        let t = Instant::now();
        let report: Report = validate(&wf, &catalogue);
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        if ms > slowest.0 {
            slowest = (ms, f.display().to_string());
        }
        for (code, n) in report.counts() {
            *counts.entry(code).or_insert(0) += n;
            *per_workflow.entry(code).or_insert(0) += 1;
        }
        if let Some(code) = &show {
            let rel = f.strip_prefix(&dir).unwrap_or(f).display().to_string();
            for fi in report.with_code(code) {
                println!(
                    "{rel}: node {:?} [{}] {} {:?}",
                    fi.node, fi.code, fi.message, fi.path
                );
            }
        }
    }
    println!("{:<36} {:>8} {:>10}", "rule", "findings", "workflows");
    for r in RULES {
        println!(
            "{:<36} {:>8} {:>10}",
            r.code,
            counts.get(r.code).copied().unwrap_or(0),
            per_workflow.get(r.code).copied().unwrap_or(0)
        );
    }
    println!("slowest validation: {:.2} ms ({})", slowest.0, slowest.1);
    let got: Vec<(&str, usize)> = counts.iter().map(|(k, v)| (*k, *v)).collect();
    let got_wf: Vec<(&str, usize)> = per_workflow.iter().map(|(k, v)| (*k, *v)).collect();
    println!("findings: {got:?}");
    println!("workflows: {got_wf:?}");
    assert_eq!(got, RECORDED.to_vec(), "findings per rule");
    assert_eq!(got_wf, RECORDED_WORKFLOWS.to_vec(), "workflows per rule");
}

#[test]
fn broken_files_give_a_located_error_each() {
    let Some(corpus) = agentgraph_test_support::n8n_workflows() else {
        return;
    };
    let dir = corpus.join("_invalid-json");
    let mut files = Vec::new();
    fn all(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                all(&p, out);
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    all(&dir, &mut files);
    files.sort();
    assert_eq!(files.len(), 7, "broken files");
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        match Workflow::from_json_str(&text) {
            Ok(_) => panic!("{} loads but should not", f.display()),
            Err(
                e @ (WorkflowError::Syntax { line, column, .. }
                | WorkflowError::Shape { line, column, .. }),
            ) => {
                assert!(line > 0 && column > 0, "{}: {e}", f.display());
                println!("{}: {e}", f.display());
            }
            Err(e) => panic!("{}: unlocated error {e}", f.display()),
        }
    }
}
