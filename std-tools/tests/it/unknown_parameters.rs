//! `UNKNOWN_PARAMETER`: parameter keys (top level, inside collections and fixedCollections)
//! that the node type does not define for the node's version, on the real n8n catalogue
//! (`$AGENTGRAPH_N8N_CATALOGUE`) and the corpus of published workflows
//! (`$AGENTGRAPH_N8N_WORKFLOWS`). The tests that need the data skip without it (recorded, and a
//! failure under `CI=true`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::validate::{codes, rule, validate, Finding, Severity};
use agentgraph_std_tools::workflow::Workflow;
use serde_json::{json, Value};

/// The real n8n catalogue (`$AGENTGRAPH_N8N_CATALOGUE`), loaded once; `None` records a skip.
fn catalogue() -> Option<&'static Catalogue> {
    let dir = agentgraph_test_support::n8n_catalogue()?;
    static C: OnceLock<Catalogue> = OnceLock::new();
    Some(C.get_or_init(|| match Catalogue::load_n8n_dir(&dir) {
        Ok(c) => c,
        Err(e) => panic!("the real catalogue loads: {e}"),
    }))
}

fn node(name: &str, ty: &str, version: f64, params: Value) -> Value {
    json!({
        "id": format!("id-{name}"),
        "name": name,
        "type": ty,
        "typeVersion": version,
        "position": [0, 0],
        "parameters": params,
    })
}

/// A manual trigger followed by `n` (one node).
fn workflow_with(n: Value) -> Workflow {
    let name = n["name"].as_str().unwrap_or_default().to_string();
    let wf = json!({
        "name": "t",
        "nodes": [node("Start", "n8n-nodes-base.manualTrigger", 1.0, json!({})), n],
        "connections": {"Start": {"main": [[{"node": name, "type": "main", "index": 0}]]}},
    });
    match Workflow::from_value_ref(&wf) {
        Ok(w) => w,
        Err(e) => panic!("test workflow: {e}"),
    }
}

fn unknown(wf: &Workflow, cat: &Catalogue) -> Vec<Finding> {
    validate(wf, cat)
        .with_code(codes::UNKNOWN_PARAMETER)
        .cloned()
        .collect()
}

fn paths(findings: &[Finding]) -> Vec<&str> {
    findings.iter().filter_map(|f| f.path.as_deref()).collect()
}

#[test]
fn rule_is_a_configuration_warning() {
    let Some(r) = rule(codes::UNKNOWN_PARAMETER) else {
        panic!("UNKNOWN_PARAMETER is in RULES")
    };
    assert_eq!(r.severity, Severity::Warning);
    assert_eq!(r.group.as_str(), "configuration");
}

#[test]
fn unknown_top_level_key_with_suggestion() {
    let Some(cat) = catalogue() else { return };
    // The model wrote `message` where the agent expects `text` (labelled "Prompt (User
    // Message)") and a system prompt at the top instead of in `options`.
    let wf = workflow_with(node(
        "AI Agent",
        "@n8n/n8n-nodes-langchain.agent",
        2.2,
        json!({
            "promptType": "define",
            "message": "={{ $json.chatInput }}",
            "systemMessage": "You are helpful.",
        }),
    ));
    let found = unknown(&wf, cat);
    assert_eq!(paths(&found), ["message", "systemMessage"], "{found:#?}");
    let m = &found[0];
    assert_eq!(m.node.as_deref(), Some("AI Agent"));
    assert_eq!(m.severity, Severity::Warning);
    for part in [
        "\"AI Agent\"",
        "`message`",
        "Did you mean `text`?",
        "Valid parameters here:",
    ] {
        assert!(m.message.contains(part), "{part} in {}", m.message);
    }
    assert!(
        found[1]
            .message
            .contains("Did you mean `options.systemMessage`?"),
        "{}",
        found[1].message
    );

    // A typo and a case slip.
    let wf = workflow_with(node(
        "HTTP",
        "n8n-nodes-base.httpRequest",
        4.2,
        json!({"url": "https://example.com", "metod": "POST", "SendBody": true}),
    ));
    let found = unknown(&wf, cat);
    // In the order the parameters were written.
    assert_eq!(paths(&found), ["metod", "SendBody"], "{found:#?}");
    assert!(found[0].message.contains("Did you mean `method`?"));
    assert!(found[1].message.contains("Did you mean `sendBody`?"));
    let wf = workflow_with(node(
        "Slack",
        "n8n-nodes-base.slack",
        2.3,
        json!({"resource": "message", "operation": "post", "messageBody": "hi"}),
    ));
    let found = unknown(&wf, cat);
    assert_eq!(paths(&found), ["messageBody"], "{found:#?}");
    // no close name: the valid parameters for these settings are listed
    assert!(
        found[0].message.contains("Valid parameters here:") && found[0].message.contains("`text`"),
        "{}",
        found[0].message
    );
}

#[test]
fn unknown_key_in_a_collection() {
    let Some(cat) = catalogue() else { return };
    let wf = workflow_with(node(
        "HTTP",
        "n8n-nodes-base.httpRequest",
        4.2,
        json!({
            "url": "https://example.com",
            "options": {"timeout": 1000, "timout": 5, "ignoreHttpStatusErrors": true},
        }),
    ));
    let found = unknown(&wf, cat);
    assert_eq!(
        paths(&found),
        ["options.timout", "options.ignoreHttpStatusErrors"],
        "{found:#?}"
    );
    assert!(found[0]
        .message
        .contains("`options` has no option `timout`"));
    assert!(found[0].message.contains("Did you mean `options.timeout`?"));
    // A key of the collection written at the top level.
    let wf = workflow_with(node(
        "Respond",
        "n8n-nodes-base.respondToWebhook",
        1.1,
        json!({"respondWith": "json", "responseBody": "={{ $json }}", "responseCode": 201}),
    ));
    let found = unknown(&wf, cat);
    assert_eq!(paths(&found), ["responseCode"], "{found:#?}");
    assert!(found[0]
        .message
        .contains("Did you mean `options.responseCode`?"));
    // An option that only older typeVersions have.
    let wf = workflow_with(node(
        "Sheets",
        "n8n-nodes-base.googleSheets",
        4.7,
        json!({"operation": "read", "options": {"returnAllMatches": "returnAllMatches"}}),
    ));
    let found = unknown(&wf, cat);
    assert_eq!(paths(&found), ["options.returnAllMatches"], "{found:#?}");
    assert!(found[0].message.contains("belongs to other typeVersions"));
    let wf = workflow_with(node(
        "Sheets",
        "n8n-nodes-base.googleSheets",
        4.4,
        json!({"operation": "read", "options": {"returnAllMatches": "returnAllMatches"}}),
    ));
    assert!(unknown(&wf, cat).is_empty());
}

#[test]
fn unknown_group_in_a_fixed_collection() {
    let Some(cat) = catalogue() else { return };
    let wf = workflow_with(node(
        "HTTP",
        "n8n-nodes-base.httpRequest",
        4.2,
        json!({
            "url": "https://example.com",
            "sendHeaders": true,
            "headerParameters": {
                "headers": [{"name": "Accept", "value": "application/json"}],
                "parameters": [
                    {"name": "Accept", "value": "application/json"},
                    {"key": "X-Id", "value": "1"},
                ],
            },
            "options": {"pagination": {"paginationMode": "updateAParameterInEachRequest"}},
        }),
    ));
    let found = unknown(&wf, cat);
    assert_eq!(
        paths(&found),
        [
            "headerParameters.headers",
            "headerParameters.parameters[1].key",
            "options.pagination.paginationMode",
        ],
        "{found:#?}"
    );
    assert!(
        found[0].message.contains("`parameters`"),
        "{}",
        found[0].message
    );
    assert!(found[1].message.contains("`name`"), "{}", found[1].message);
    assert!(
        found[2]
            .message
            .contains("Did you mean `options.pagination.pagination.paginationMode`?"),
        "{}",
        found[2].message
    );
}

#[test]
fn valid_workflow_has_no_findings() {
    let Some(cat) = catalogue() else { return };
    let wf = json!({
        "name": "ok",
        "nodes": [
            node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({
                "httpMethod": "POST", "path": "in", "responseMode": "lastNode", "options": {},
            })),
            node("HTTP", "n8n-nodes-base.httpRequest", 4.2, json!({
                "method": "POST",
                "url": "={{ $json.body.url }}",
                "sendHeaders": true,
                "headerParameters": {"parameters": [{"name": "Accept", "value": "application/json"}]},
                "sendBody": true,
                "specifyBody": "json",
                "jsonBody": "={{ JSON.stringify($json.body) }}",
                "options": {"timeout": 10000, "response": {"response": {"neverError": true}}},
            })),
            node("Set", "n8n-nodes-base.set", 3.4, json!({
                "assignments": {"assignments": [
                    {"id": "a", "name": "x", "value": "={{ $json.data }}", "type": "string"},
                ]},
                "options": {},
            })),
            node("Sheets", "n8n-nodes-base.googleSheets", 4.5, json!({
                "operation": "append",
                "documentId": {"__rl": true, "mode": "id", "value": "abc", "cachedResultName": "Doc"},
                "sheetName": {"__rl": true, "mode": "list", "value": "gid=0", "cachedResultUrl": "https://x"},
                "columns": {"mappingMode": "autoMapInputData", "value": {}, "schema": []},
                "options": {},
            })),
            node("AI Agent", "@n8n/n8n-nodes-langchain.agent", 2.2, json!({
                "promptType": "define",
                "text": "={{ $json.x }}",
                "options": {"systemMessage": "You summarise."},
            })),
            node("OpenAI Chat Model", "@n8n/n8n-nodes-langchain.lmChatOpenAi", 1.2, json!({
                "model": {"__rl": true, "mode": "list", "value": "gpt-4o-mini"},
                "options": {"temperature": 0.2},
                // written by n8n itself (not in nodes.json)
                "requestOptions": {"timeout": 5000},
            })),
            node("Schedule", "n8n-nodes-base.scheduleTrigger", 1.2, json!({
                "rule": {"interval": [{"field": "hours", "hoursInterval": 2}]},
            })),
        ],
        "connections": {
            "Webhook": {"main": [[{"node": "HTTP", "type": "main", "index": 0}]]},
            "Schedule": {"main": [[{"node": "HTTP", "type": "main", "index": 0}]]},
            "HTTP": {"main": [[{"node": "Set", "type": "main", "index": 0}]]},
            "Set": {"main": [[{"node": "Sheets", "type": "main", "index": 0}]]},
            "Sheets": {"main": [[{"node": "AI Agent", "type": "main", "index": 0}]]},
            "OpenAI Chat Model": {"ai_languageModel": [[{"node": "AI Agent", "type": "ai_languageModel", "index": 0}]]},
        },
    });
    let wf = match Workflow::from_value_ref(&wf) {
        Ok(w) => w,
        Err(e) => panic!("{e}"),
    };
    let found = unknown(&wf, cat);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn quiet_cases() {
    let Some(cat) = catalogue() else { return };
    // Empty values lose nothing when dropped (notices of other n8n releases, `options: {}`).
    let wf = workflow_with(node(
        "HTTP",
        "n8n-nodes-base.httpRequest",
        4.2,
        json!({"url": "https://e.com", "": "", "httpVariantWarning": "", "extra": null, "opts": {}}),
    ));
    assert!(unknown(&wf, cat).is_empty());
    // An unknown typeVersion is NODE_VERSION_NOT_FOUND's business.
    let wf = workflow_with(node(
        "OpenAI",
        "n8n-nodes-base.openAi",
        1.8,
        json!({"resource": "chat", "prompt": {"messages": [{"content": "hi"}]}, "whatever": 1}),
    ));
    assert!(unknown(&wf, cat).is_empty());
    // Unknown types are NODE_TYPE_NOT_FOUND's business.
    let wf = workflow_with(node(
        "X",
        "n8n-nodes-community.thing",
        1.0,
        json!({"anything": 1}),
    ));
    assert!(unknown(&wf, cat).is_empty());
    // Expressions in place of a collection are not descended into.
    let wf = workflow_with(node(
        "HTTP",
        "n8n-nodes-base.httpRequest",
        4.2,
        json!({"url": "https://e.com", "options": "={{ {} }}"}),
    ));
    assert!(unknown(&wf, cat).is_empty());
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

/// Every UNKNOWN_PARAMETER finding over the corpus, as `file | node | path`, checked by hand.
/// All are genuine (the key has no effect in n8n):
/// * LLM-invented or misplaced keys: IMAP `operation`/`returnAll`/`limit`/`filters`; Airtable
///   v1 `baseId`/`filterByFormula` (belongs in `additionalOptions`); Google Sheets v1
///   `columnHeaderRow`/`valueInputMode` (in `options`)/`options.compareColumn`; Switch v3
///   `fallbackOutput` (in `options`); Respond to Webhook `jsCode`, `options.response`, `body`
///   (is `responseBody`), `responseCode` (in `options`); Google Sheets v4 `sheetId` (v4 uses
///   `documentId`/`sheetName`); WhatsApp `content`, `options.waTemplate`;
/// * HTTP Request pagination settings one level too high (`options.pagination.paginationMode`
///   instead of `options.pagination.pagination.paginationMode`), and `ignoreHttpStatusErrors`
///   (an HTTP Request v1/v2 option) on v4.2;
/// * `options.returnAllMatches` on Google Sheets 4.7 (only shown for typeVersions < 4.5).
const RECORDED: &[&str] = &[
    "Gmail_and_Email_Automation/AI Email Auto-Responder with Ollama.json | Get Unread Emails (IMAP) | filters",
    "Gmail_and_Email_Automation/AI Email Auto-Responder with Ollama.json | Get Unread Emails (IMAP) | limit",
    "Gmail_and_Email_Automation/AI Email Auto-Responder with Ollama.json | Get Unread Emails (IMAP) | operation",
    "Gmail_and_Email_Automation/AI Email Auto-Responder with Ollama.json | Get Unread Emails (IMAP) | returnAll",
    "Google_Drive_and_Google_Sheets/Airtable to Google Sheets Auto-Sync.json | Airtable Search | baseId",
    "Google_Drive_and_Google_Sheets/Airtable to Google Sheets Auto-Sync.json | Airtable Search | filterByFormula",
    "Google_Drive_and_Google_Sheets/Airtable to Google Sheets Auto-Sync.json | Google Sheets Upsert | columnHeaderRow",
    "Google_Drive_and_Google_Sheets/Airtable to Google Sheets Auto-Sync.json | Google Sheets Upsert | options.compareColumn",
    "Google_Drive_and_Google_Sheets/Airtable to Google Sheets Auto-Sync.json | Google Sheets Upsert | valueInputMode",
    "OpenAI_and_LLMs/Claude Smart Webhook AI Router.json | Route Switch | fallbackOutput",
    "OpenAI_and_LLMs/YouTube Transcript to Executive Summary (Free).json | Respond to Webhook | jsCode",
    "OpenAI_and_LLMs/YouTube Transcript to Executive Summary (Free).json | Respond to Webhook | options.response",
    "Other_Integrations_and_Use_Cases/Transport_Request_Intake_Lite.json | Respond to Webhook | body",
    "Other_Integrations_and_Use_Cases/Transport_Request_Intake_Lite.json | Respond to Webhook | responseCode",
    "Other_Integrations_and_Use_Cases/glasp-highlights-export-workflow.json | Glasp API | options.pagination.maxRequests",
    "Other_Integrations_and_Use_Cases/glasp-highlights-export-workflow.json | Glasp API | options.pagination.nextURL",
    "Other_Integrations_and_Use_Cases/glasp-highlights-export-workflow.json | Glasp API | options.pagination.paginationCompleteWhen",
    "Other_Integrations_and_Use_Cases/glasp-highlights-export-workflow.json | Glasp API | options.pagination.paginationMode",
    "WhatsApp/LeadBot 24h - AI WhatsApp Lead Qualification.json | Save Lead to Google Sheets | sheetId",
    "WhatsApp/LeadBot 24h - AI WhatsApp Lead Qualification.json | Send Auto-Reply (WhatsApp) | content",
    "WhatsApp/LeadBot 24h - AI WhatsApp Lead Qualification.json | Send Auto-Reply (WhatsApp) | options.waTemplate",
    "WhatsApp/Send Escalating WhatsApp Invoice Reminders from Google Sheets (Hebrew).json | Read Invoices from Sheets | options.returnAllMatches",
    "devops/uptime-ping-alert.json | Chiama il sito | options.ignoreHttpStatusErrors",
];

/// Whether `path` (`a.b[0].c`) is `key` or ends with `.key`.
fn last_is(path: &str, key: &str) -> bool {
    path == key || path.ends_with(&format!(".{key}"))
}

#[test]
fn corpus_findings_are_genuine() {
    let Some(cat) = catalogue() else { return };
    let Some(dir) = agentgraph_test_support::n8n_workflows() else {
        return;
    };
    let mut files = Vec::new();
    walk(&dir, &mut files);
    let mut got: Vec<String> = Vec::new();
    let mut keys: BTreeMap<String, usize> = BTreeMap::new();
    let mut workflows = 0;
    let mut with_findings = 0;
    // The false-positive-prone shapes, counted to show the corpus exercises them.
    let (mut rl_values, mut request_options, mut empty_unknown, mut other_versions) = (0, 0, 0, 0);
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let wf = match Workflow::from_json_str(&text) {
            Ok(w) => w,
            Err(e) => panic!("{} does not load: {e}", f.display()),
        };
        workflows += 1;
        let report = validate(&wf, cat);
        let rel = f.strip_prefix(&dir).unwrap_or(f).display().to_string();
        let found: Vec<&Finding> = report.with_code(codes::UNKNOWN_PARAMETER).collect();
        if !found.is_empty() {
            with_findings += 1;
        }
        for fi in &found {
            let node = fi.node.as_deref().unwrap_or("");
            let path = fi.path.as_deref().unwrap_or("");
            println!("{rel}: node {node:?} at {path}: {}", fi.message);
            got.push(format!("{rel} | {node} | {path}"));
            let key = path.rsplit('.').next().unwrap_or(path);
            *keys.entry(key.to_string()).or_insert(0) += 1;
            // resource locator parts are values, never keys
            for part in [
                "__rl",
                "mode",
                "value",
                "cachedResultName",
                "cachedResultUrl",
            ] {
                assert!(!last_is(path, part), "{rel}: {path}");
            }
            assert!(!path.contains("requestOptions"), "{rel}: {path}");
        }
        for n in &wf.nodes {
            let versions = cat.versions(&n.node_type);
            let known_version = versions.iter().any(|v| (v - n.version()).abs() < 1e-9);
            let mine: Vec<&&Finding> = found
                .iter()
                .filter(|fi| fi.node.as_deref() == Some(n.name.as_str()))
                .collect();
            if !known_version && !versions.is_empty() {
                assert!(mine.is_empty(), "{rel}: {} has an unknown version", n.name);
            }
            if versions.is_empty() {
                continue;
            }
            if known_version
                && cat
                    .default_version(&n.node_type)
                    .is_some_and(|d| d > n.version())
            {
                other_versions += 1;
            }
            for (k, v) in &n.parameters {
                if v.get("__rl").is_some() {
                    rl_values += 1;
                }
                if k == "requestOptions" {
                    request_options += 1;
                }
                let empty = match v {
                    Value::Null => true,
                    Value::String(s) => s.is_empty(),
                    Value::Object(o) => o.is_empty(),
                    Value::Array(a) => a.is_empty(),
                    _ => false,
                };
                if empty {
                    assert!(
                        !mine.iter().any(|fi| fi.path.as_deref() == Some(k.as_str())),
                        "{rel}: {}: empty `{k}`",
                        n.name
                    );
                    empty_unknown += 1;
                }
            }
        }
    }
    let mut top: Vec<(&String, &usize)> = keys.iter().collect();
    top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    println!(
        "{workflows} workflows, {} findings in {with_findings} workflows; top keys: {:?}",
        got.len(),
        &top[..top.len().min(10)]
    );
    println!(
        "exercised: {rl_values} resource locator values, {request_options} requestOptions, \
         {empty_unknown} empty values, {other_versions} nodes below their type's default version"
    );
    assert_eq!(workflows, 340, "workflow files in the corpus");
    assert!(rl_values > 100 && request_options > 10 && other_versions > 100);
    got.sort();
    let mut want: Vec<String> = RECORDED.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(got, want, "UNKNOWN_PARAMETER findings over the corpus");
    assert_eq!(with_findings, 9, "workflows with findings");
}

/// The notice-holding HTTP Request of an export from another n8n release, the `requestOptions`
/// n8n adds to WhatsApp (declarative) nodes and AI sub-nodes: quiet.
#[test]
fn corpus_false_positive_prone_files_are_quiet() {
    let Some(cat) = catalogue() else { return };
    let Some(dir) = agentgraph_test_support::n8n_workflows() else {
        return;
    };
    for file in [
        "Slack/Venafi Cloud Slack Cert Bot.json",
        "WhatsApp/Building Your First WhatsApp Chatbot.json",
        "WhatsApp/Respond to WhatsApp Messages with AI Like a Pro!.json",
        "AI_Research_RAG_and_Data_Analysis/Autonomous AI crawler.json",
    ] {
        let p = dir.join(file);
        let Ok(text) = std::fs::read_to_string(&p) else {
            panic!("{} is readable", p.display())
        };
        let wf = match Workflow::from_json_str(&text) {
            Ok(w) => w,
            Err(e) => panic!("{file}: {e}"),
        };
        let found = unknown(&wf, cat);
        assert!(found.is_empty(), "{file}: {found:#?}");
    }
}

/// The built-in compact catalogue abridges the property lists: the rule stays quiet there
/// (it would otherwise report hundreds of real keys such as `nodeCredentialType`).
#[test]
fn builtin_compact_catalogue_is_not_checked() {
    let builtin = match Catalogue::builtin() {
        Ok(c) => c,
        Err(e) => panic!("the built-in catalogue loads: {e}"),
    };
    let wf = workflow_with(node(
        "HTTP",
        "n8n-nodes-base.httpRequest",
        4.2,
        json!({"url": "https://e.com", "nodeCredentialType": "x", "whatever": 1}),
    ));
    assert!(unknown(&wf, &builtin).is_empty());
    let Some(dir) = agentgraph_test_support::n8n_workflows() else {
        return;
    };
    let mut files = Vec::new();
    walk(&dir, &mut files);
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        if let Ok(wf) = Workflow::from_json_str(&text) {
            let found = unknown(&wf, &builtin);
            assert!(found.is_empty(), "{}: {found:#?}", f.display());
        }
    }
}
