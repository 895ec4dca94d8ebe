//! Golden fixture tests for the `.ag` language.
//!
//! * `tests/fixtures/ok/*.ag` must check with no diagnostic at all, and compile.
//! * `tests/fixtures/err/*.ag` each hold one mistake (a few hold several). Their diagnostics,
//!   rendered without colour at width 100, are stored next to them in `NAME.txt`, and their JSON
//!   forms in `NAME.json`. Run `UPDATE_GOLDEN=1 cargo test -p agentgraph-dsl --test it golden::` to
//!   rewrite them (and the generated part of `docs/dsl-diagnostics.md`), then review the diff.
//!
//! Files in sub-folders (`ok/lib/`, `err/lib/`, …) are helpers that fixtures reference with
//! `use`, `subgraph "…"` or `file(…)`; they are not fixtures themselves.
//!
//! Paths: a project is loaded from the fixture's real (absolute) path, so that references
//! resolve exactly as they do for `agentgraph check`. Before checking, every source's display
//! name is made relative to the fixtures folder (`err/NAME.ag`), and the absolute folder is
//! removed from the texts of the diagnostics (the "paths are relative to this file's folder"
//! hints). Outputs therefore do not depend on where the repository is checked out, and the
//! rendering (which wraps at a fixed width) is done on the final, relative text.

use agentgraph_dsl::diagnostic::codes;
use agentgraph_dsl::{Diagnostic, Project, Registry};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Width the `.txt` files are rendered at.
const WIDTH: usize = 100;

/// Tools the fixtures may use: the default registry has none.
const FAKE_TOOLS: &[&str] = &[
    "search_notes",
    "read_note",
    "add_notes",
    "link_notes",
    "edit_note",
];

/// Every diagnostic code with its one-line meaning, from the catalogue.
fn codes() -> impl Iterator<Item = (&'static str, &'static str)> {
    codes::ALL.iter().map(|c| (c.id, c.meaning))
}

/// Codes no error fixture shows, and why.
const NO_FIXTURE: &[(&str, &str)] = &[
    (codes::SKIPPED_LINE.id, "A fallback of error recovery, for a skipped line that parses on its own; no input is known to reach it (none of 60 000 generated ones did)."),
    (codes::TOO_DEEP.id, "Needs an expression more than 128 levels deep, or brackets more than 144; `deep_nesting.rs` builds them up to 100 000 levels deep."),
    (codes::BAD_MEMORY.id, "An `llm` node's entry, and the fixtures' registry has no agent kinds; `agent_entries.rs` shows both cases."),
    (codes::GRAPH_REJECTED.id, "Reported when a checked graph is compiled (`agentgraph run`), not by `check`."),
    (codes::NODE_NOT_BUILT.id, "Reported when a checked graph is compiled (`agentgraph run`), not by `check`."),
];

fn fixtures() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

fn update() -> bool {
    std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1" || v == "true")
}

fn registry() -> Registry {
    let mut reg = Registry::default();
    for t in FAKE_TOOLS {
        reg.register_tool(*t, "a fake tool for the fixtures");
    }
    reg
}

/// The `.ag` files directly in `fixtures/<sub>`, sorted.
fn ag_files(sub: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(fixtures().join(sub))
        .unwrap_or_else(|e| panic!("cannot list fixtures/{sub}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "ag"))
        .collect();
    out.sort();
    out
}

/// A checked fixture: the project (with relative display names) and its diagnostics.
struct Checked {
    project: Project,
    diags: Vec<Diagnostic>,
}

fn check_fixture(path: &Path) -> Checked {
    let base = fixtures();
    let prefix = format!("{}/", base.display());
    let relative = |s: &str| {
        s.replace(&prefix, "")
            .replace(&base.display().to_string(), ".")
    };
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut project = Project::from_source(path, text);
    for src in project.sources.values_mut() {
        src.name = relative(&src.name);
    }
    for d in &mut project.diagnostics {
        d.file = relative(&d.file);
    }
    let mut diags = project.check(&registry());
    for d in &mut diags {
        d.file = relative(&d.file);
        d.message = relative(&d.message);
        d.label = relative(&d.label);
        d.help = d.help.as_deref().map(relative);
        for l in &mut d.labels {
            l.message = relative(&l.message);
        }
    }
    Checked { project, diags }
}

fn rendered(c: &Checked) -> String {
    let mut out = String::new();
    for d in &c.diags {
        out.push_str(&c.project.render(d, false, WIDTH));
        out.push('\n');
    }
    // No trailing spaces: editors strip them, which would break the comparison.
    let mut trimmed: String = out
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n");
    trimmed.push('\n');
    trimmed
}

fn json(c: &Checked) -> String {
    let all: Vec<serde_json::Value> = c.diags.iter().map(|d| c.project.to_json(d)).collect();
    let mut s = serde_json::to_string_pretty(&all).expect("diagnostics serialize");
    s.push('\n');
    s
}

#[test]
fn ok_fixtures_check_clean_and_compile() {
    let files = ag_files("ok");
    assert!(
        files.len() >= 10,
        "expected at least 10 ok fixtures, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let c = check_fixture(path);
        if !c.diags.is_empty() {
            failures.push(format!(
                "{} has diagnostics:\n{}",
                path.display(),
                rendered(&c)
            ));
            continue;
        }
        if let Err(ds) = c.project.compile(&registry()) {
            let text: Vec<String> = ds
                .iter()
                .map(|d| c.project.render(d, false, WIDTH))
                .collect();
            failures.push(format!(
                "{} does not compile:\n{}",
                path.display(),
                text.join("\n")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn err_fixtures_match_their_golden_outputs() {
    let files = ag_files("err");
    assert!(
        files.len() >= 40,
        "expected at least 40 error fixtures, found {}",
        files.len()
    );
    let update = update();
    let mut failures = Vec::new();
    for path in &files {
        let c = check_fixture(path);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if c.diags.is_empty() {
            failures.push(format!("{name}: no diagnostic at all"));
        }
        for (ext, actual) in [("txt", rendered(&c)), ("json", json(&c))] {
            let golden = path.with_extension(ext);
            if update {
                std::fs::write(&golden, &actual)
                    .unwrap_or_else(|e| panic!("cannot write {}: {e}", golden.display()));
                continue;
            }
            match std::fs::read_to_string(&golden) {
                Ok(expected) if expected == actual => {}
                Ok(expected) => failures.push(format!(
                    "{name}: output differs from {}\n{}",
                    golden.display(),
                    first_difference(&expected, &actual)
                )),
                Err(_) => failures.push(format!("{name}: {} is missing", golden.display())),
            }
        }
    }
    if update {
        write_docs(&files);
    }
    assert!(
        failures.is_empty(),
        "{}\n\n{} golden mismatch(es); if the new output is right, run\n  UPDATE_GOLDEN=1 cargo test -p agentgraph-dsl --test it golden::\nand review the diff",
        failures.join("\n\n"),
        failures.len()
    );
}

fn first_difference(expected: &str, actual: &str) -> String {
    for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
        if e != a {
            return format!("line {}:\n  expected: {e}\n  actual:   {a}", i + 1);
        }
    }
    format!(
        "lengths differ: expected {} lines, got {}",
        expected.lines().count(),
        actual.lines().count()
    )
}

#[test]
fn golden_outputs_have_their_fixture() {
    // A renamed or deleted fixture must not leave stale outputs behind.
    let dir = fixtures().join("err");
    let mut orphans = Vec::new();
    for e in std::fs::read_dir(&dir).expect("fixtures/err").flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "txt" || x == "json")
            && !p.with_extension("ag").is_file()
        {
            orphans.push(p.display().to_string());
        }
    }
    assert!(
        orphans.is_empty(),
        "golden outputs without a fixture: {orphans:?}"
    );
}

#[test]
fn every_error_fixture_diagnostic_is_located_and_explained() {
    for path in ag_files("err") {
        let c = check_fixture(&path);
        for d in &c.diags {
            let text = c
                .project
                .sources
                .values()
                .find(|s| s.name == d.file)
                .map(|s| s.text.as_str());
            let text = text.unwrap_or_else(|| {
                panic!(
                    "{}: diagnostic names unknown file {}",
                    path.display(),
                    d.file
                )
            });
            assert!(
                d.span.start <= d.span.end && d.span.end <= text.len(),
                "{}: span {:?} out of range",
                path.display(),
                d.span
            );
            assert!(
                !d.label.is_empty(),
                "{}: {} `{}` has no label",
                path.display(),
                d.code,
                d.message
            );
            assert!(
                d.help.is_some(),
                "{}: {} `{}` has no help",
                path.display(),
                d.code,
                d.message
            );
            let code = codes::lookup(d.code).unwrap_or_else(|| {
                panic!(
                    "{}: code {} is not in the catalogue",
                    path.display(),
                    d.code
                )
            });
            assert_eq!(
                code.severity,
                d.severity,
                "{}: {} has the catalogue's severity",
                path.display(),
                d.code
            );
        }
    }
}

#[test]
fn five_mistakes_give_five_located_hinted_diagnostics() {
    let c = check_fixture(&fixtures().join("err/five_mistakes.ag"));
    let codes: BTreeSet<&str> = c.diags.iter().map(|d| d.code).collect();
    assert_eq!(c.diags.len(), 5, "{}", rendered(&c));
    assert_eq!(
        codes.len(),
        5,
        "five different mistakes, five different codes: {codes:?}"
    );
    let src = &c.project.root_source().expect("root").text;
    let lines: BTreeSet<usize> = c
        .diags
        .iter()
        .map(|d| agentgraph_dsl::diagnostic::line_col(src, d.span.start).0)
        .collect();
    assert_eq!(lines.len(), 5, "each on its own line: {lines:?}");
    assert!(c.diags.iter().all(|d| d.help.is_some()));
}

#[test]
fn every_check_code_has_a_fixture() {
    let mut seen = BTreeSet::new();
    for path in ag_files("err") {
        seen.extend(check_fixture(&path).diags.iter().map(|d| d.code));
    }
    let missing: Vec<&str> = codes()
        .map(|(c, _)| c)
        .filter(|c| !NO_FIXTURE.iter().any(|(n, _)| n == c) && !seen.contains(c))
        .collect();
    assert!(
        missing.is_empty(),
        "codes without an error fixture: {missing:?}"
    );
}

#[test]
fn the_diagnostics_doc_is_up_to_date() {
    if update() {
        return; // rewritten by err_fixtures_match_their_golden_outputs
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/dsl-diagnostics.md");
    let doc = std::fs::read_to_string(&path).expect("docs/dsl-diagnostics.md");
    let expected = generated_docs(&ag_files("err"));
    assert!(
        doc.contains(&expected),
        "the generated part of docs/dsl-diagnostics.md is stale; run\n  UPDATE_GOLDEN=1 cargo test -p agentgraph-dsl --test it golden::"
    );
}

/// The codes of the doc's table with their meanings, as written.
fn documented_codes(doc: &str) -> BTreeMap<String, String> {
    doc.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("| [")?;
            let (code, rest) = rest.split_once(']')?;
            let meaning = rest.split(" | ").nth(1)?;
            Some((code.to_string(), meaning.replace("\\|", "|")))
        })
        .collect()
}

#[test]
fn the_diagnostics_doc_states_every_code_of_the_catalogue_and_its_meaning() {
    if update() {
        return; // rewritten by err_fixtures_match_their_golden_outputs
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/dsl-diagnostics.md");
    let doc = std::fs::read_to_string(&path).expect("docs/dsl-diagnostics.md");
    let documented = documented_codes(&doc);
    let mut problems = Vec::new();
    for (code, meaning) in codes() {
        match documented.get(code) {
            None => problems.push(format!("{code} is missing")),
            Some(m) if m != meaning => {
                problems.push(format!("{code} says `{m}`, the catalogue `{meaning}`"))
            }
            Some(_) => {}
        }
    }
    for code in documented.keys() {
        if codes::lookup(code).is_none() {
            problems.push(format!("{code} is not in the catalogue"));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/dsl-diagnostics.md disagrees with the catalogue:\n{}\nrun\n  UPDATE_GOLDEN=1 cargo test -p agentgraph-dsl --test golden",
        problems.join("\n")
    );
}

const BEGIN: &str =
    "<!-- BEGIN GENERATED: UPDATE_GOLDEN=1 cargo test -p agentgraph-dsl --test it golden:: -->\n";
const END: &str = "<!-- END GENERATED -->\n";

/// The code table and one example per code, from the error fixtures.
fn generated_docs(files: &[PathBuf]) -> String {
    // For each code, the fixture with the fewest diagnostics that shows it (ties: by name).
    let mut examples: BTreeMap<&str, (usize, String, String)> = BTreeMap::new();
    let mut fixtures_of: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for path in files {
        let c = check_fixture(path);
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for d in &c.diags {
            fixtures_of.entry(d.code).or_default().insert(stem.clone());
            let better = !matches!(examples.get(d.code), Some((n, _, _)) if *n <= c.diags.len());
            if better {
                let text = c.project.render(d, false, WIDTH);
                let text: String = text
                    .lines()
                    .map(str::trim_end)
                    .collect::<Vec<_>>()
                    .join("\n");
                examples.insert(d.code, (c.diags.len(), stem.clone(), text));
            }
        }
    }
    let mut out = String::from(BEGIN);
    out.push_str("\n| Code | Meaning | Fixtures |\n|---|---|---|\n");
    for (code, meaning) in codes() {
        let fx = fixtures_of.get(code).map(|s| {
            s.iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        });
        let _ = writeln!(
            out,
            "| [{code}](#{}) | {} | {} |",
            code.to_lowercase(),
            meaning.replace('|', "\\|"),
            fx.unwrap_or_else(|| "—".into())
        );
    }
    for (code, meaning) in codes() {
        let _ = write!(out, "\n### {code}\n\n{}.\n", capitalize(meaning));
        match examples.get(code) {
            Some((_, stem, text)) => {
                let _ = write!(
                    out,
                    "\nFrom `dsl/tests/fixtures/err/{stem}.ag`:\n\n```text\n{text}\n```\n"
                );
            }
            None => {
                let why = NO_FIXTURE
                    .iter()
                    .find(|(c, _)| *c == code)
                    .map_or("No fixture shows it.", |(_, w)| w);
                let _ = write!(out, "\n{why}\n");
            }
        }
    }
    out.push('\n');
    out.push_str(END);
    out
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn write_docs(files: &[PathBuf]) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/dsl-diagnostics.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    let generated = generated_docs(files);
    let new = match (doc.find(BEGIN), doc.find(END)) {
        (Some(a), Some(b)) if a < b => {
            format!("{}{}{}", &doc[..a], generated, &doc[b + END.len()..])
        }
        _ => format!("{doc}\n{generated}"),
    };
    std::fs::write(&path, new).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}
