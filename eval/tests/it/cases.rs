//! The shipped prompt sets and the cases-file format.

use agentgraph_eval::cases::{parse_cases, select, set_names, shipped_set, Case, DEFAULT_SET};
use agentgraph_eval::EvalError;
use agentgraph_std_tools::catalogue::Catalogue;
use serde_json::Value;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn all_cases() -> Vec<(String, Case)> {
    set_names()
        .into_iter()
        .flat_map(|set| {
            shipped_set(set)
                .unwrap_or_else(|e| panic!("{set}: {e}"))
                .into_iter()
                .map(move |c| (set.to_string(), c))
        })
        .collect()
}

#[test]
fn every_set_parses_and_stays_small() {
    for set in set_names() {
        let cases = shipped_set(set).unwrap_or_else(|e| panic!("{set}: {e}"));
        assert!(
            (6..=12).contains(&cases.len()),
            "{set}: {} cases",
            cases.len()
        );
        for c in &cases {
            assert!(
                !c.prompt.trim().is_empty() && !c.source.trim().is_empty(),
                "{set}/{}",
                c.id
            );
            match &c.instance {
                // An instance case is checked by its answer and the instance, not a workflow.
                Some(i) => assert!(
                    c.checklist.is_empty()
                        && !(i.answer.is_empty() && i.tools.is_empty() && i.active.is_empty()),
                    "{set}/{}: an instance case checks nothing, or a workflow",
                    c.id
                ),
                None => assert!(
                    !c.checklist.is_empty(),
                    "{set}/{}: an empty checklist",
                    c.id
                ),
            }
        }
    }
    let quick = shipped_set(DEFAULT_SET).unwrap();
    assert!((6..=10).contains(&quick.len()));
    assert_eq!(shipped_set("n8n-default").unwrap().len(), 10);
}

#[test]
fn the_scenarios_set_has_each_scenario_s_prompt() {
    let set = shipped_set("scenarios").unwrap();
    let mut folders = 0;
    for entry in std::fs::read_dir(root().join("tests/scenarios")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(dir.join("expect.json")) else {
            continue;
        };
        folders += 1;
        let expect: Value = serde_json::from_str(&text).unwrap();
        let slug = dir.file_name().unwrap().to_string_lossy().into_owned();
        let case = set
            .iter()
            .find(|c| c.id == slug)
            .unwrap_or_else(|| panic!("no case for scenario {slug}"));
        assert_eq!(
            Some(case.prompt.as_str()),
            expect["prompt"].as_str(),
            "{slug}"
        );
        assert_eq!(case.source, format!("tests/scenarios/{slug}/expect.json"));
    }
    assert_eq!(folders, set.len());
}

#[test]
fn every_node_type_a_checklist_names_is_in_the_real_catalogue() {
    let Some(dir) = agentgraph_test_support::n8n_catalogue() else {
        return;
    };
    let catalogue = Catalogue::load_n8n_dir(dir).expect("the catalogue loads");
    let mut missing = Vec::new();
    for (set, case) in all_cases() {
        let c = &case.checklist;
        let specs = c
            .trigger
            .iter()
            .chain(&c.nodes)
            .chain(c.connections.iter().flat_map(|r| [&r.from, &r.to]));
        for t in specs.flat_map(|s| s.alternatives()) {
            let known = match t.strip_suffix('*') {
                Some(prefix) => catalogue.types().any(|x| x.starts_with(prefix)),
                None => catalogue.contains(t),
            };
            if !known {
                missing.push(format!("{set}/{}: {t}", case.id));
            }
        }
    }
    assert!(missing.is_empty(), "unknown node types: {missing:#?}");
}

#[test]
fn includes_resolve_and_mistakes_are_located() {
    let cases = parse_cases(
        "// a comment\n\n{\"include\": \"control-flow:if-branch\"}\n",
        "mine",
    )
    .unwrap();
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].id, "if-branch");
    assert!(cases[0].offline.is_some());
    let bad = parse_cases(
        "{\"id\": \"a\", \"prompt\": \"p\", \"source\": \"s\"}\n{\"id\": \"b\", \"prompt\": \"p\", \"source\": \"s\", \"extra\": 1}\n",
        "mine",
    )
    .unwrap_err();
    assert!(matches!(bad, EvalError::BadLine { line: 2, .. }), "{bad}");
    let twice = "{\"id\": \"a\", \"prompt\": \"p\", \"source\": \"s\"}\n".repeat(2);
    assert!(matches!(
        parse_cases(&twice, "mine"),
        Err(EvalError::DuplicateCase { .. })
    ));
    assert!(parse_cases("{\"include\": \"control-flow:nope\"}", "mine").is_err());
    assert!(matches!(
        shipped_set("nope"),
        Err(EvalError::UnknownSet { .. })
    ));
}

#[test]
fn only_and_limit_select_cases_in_set_order() {
    let set = shipped_set("control-flow").unwrap();
    let ids = |cases: Vec<Case>| cases.into_iter().map(|c| c.id).collect::<Vec<_>>();
    let only = vec!["loop-batches".to_string(), "if-branch".to_string()];
    assert_eq!(
        ids(select(set.clone(), "control-flow", &only, None).unwrap()),
        ["if-branch", "loop-batches"]
    );
    assert_eq!(
        ids(select(set.clone(), "control-flow", &[], Some(2)).unwrap()),
        ["if-branch", "switch-routing"]
    );
    let unknown = select(set, "control-flow", &["nope".to_string()], None).unwrap_err();
    assert!(
        unknown
            .to_string()
            .contains("no case `nope` in control-flow"),
        "{unknown}"
    );
}
