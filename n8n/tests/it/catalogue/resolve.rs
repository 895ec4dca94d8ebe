//! The catalogue order, step by step, over data folders laid out by hand as the fetch commands
//! write them: `--catalogue DIR`, `$AGENTGRAPH_N8N_CATALOGUE`, the fetched catalogue, the
//! instance's, the built-in one.

use agentgraph_n8n::catalogue::store::DataDirError;
use agentgraph_n8n::catalogue::{Lookup, Step, StepState};
use agentgraph_n8n::{CatalogueLoadError, CatalogueSource, Origin};
use serde_json::json;
use std::path::Path;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// An n8n directory (npm layout) with one base node type named `only`.
fn n8n_dir(dir: &Path, only: &str) {
    write(
        &dir.join("n8n-nodes-base/nodes.json"),
        &json!([{"name": only, "displayName": only, "version": 1}]).to_string(),
    );
}

/// A fetched catalogue in `data`: base `fetchedBase`, langchain `fetchedAgent`.
fn fetched(data: &Path) {
    let npm = data.join("catalogue/npm");
    n8n_dir(&npm, "fetchedBase");
    write(
        &npm.join("n8n-nodes-langchain/nodes.json"),
        &json!([{"name": "fetchedAgent", "displayName": "A", "version": 1}]).to_string(),
    );
    let source = json!({
        "n8n_version": "9.2.0",
        "requested": "9.2.0",
        "registry": "http://127.0.0.1:9",
        "packages": [
            {"name": "n8n-nodes-base", "version": "9.1.0", "tarball": "http://127.0.0.1:9/a.tgz"},
            {"name": "@n8n/n8n-nodes-langchain", "version": "9.0.5", "tarball": "http://127.0.0.1:9/b.tgz"}
        ],
        "node_types": 2,
        "fetched_at": "2026-01-02T03:04:05Z"
    });
    write(&npm.join("SOURCE.json"), &source.to_string());
}

/// An instance catalogue in `data` with one type, `n8n-nodes-base.instanceOnly`.
fn saved(data: &Path) {
    let dir = data.join("catalogue/instance");
    write(
        &dir.join("nodes.json"),
        &json!([{"name": "n8n-nodes-base.instanceOnly", "displayName": "I", "version": 1}])
            .to_string(),
    );
    let source = json!({"url": "http://127.0.0.1:5678", "node_types": 1, "fetched_at": "2026-01-02T03:04:05Z"});
    write(&dir.join("SOURCE.json"), &source.to_string());
}

fn states(source: &CatalogueSource, lookup: &Lookup) -> Vec<(Step, StepState)> {
    source
        .resolve_with(lookup)
        .steps
        .iter()
        .map(|s| (s.step, s.state))
        .collect()
}

use StepState::{Absent, Broken, Shadowed, Used};

#[test]
fn each_step_wins_over_the_ones_after_it() {
    let data = tempfile::tempdir().unwrap();
    let dirs = tempfile::tempdir().unwrap();
    let (flag, env) = (dirs.path().join("flag"), dirs.path().join("env"));
    n8n_dir(&flag, "fromFlag");
    n8n_dir(&env, "fromEnv");
    let auto = CatalogueSource::Auto;
    let given = CatalogueSource::Dir(flag.clone());
    let order = [
        Step::Flag,
        Step::Env,
        Step::Npm,
        Step::Instance,
        Step::Builtin,
    ];
    let expect = |s: [StepState; 5]| order.iter().copied().zip(s).collect::<Vec<_>>();

    // Nothing stored: the built-in catalogue.
    let bare = Lookup::new(None, data.path());
    assert_eq!(auto.resolve_with(&bare).origin, Origin::Builtin);
    assert_eq!(
        states(&auto, &bare),
        expect([Absent, Absent, Absent, Absent, Used])
    );

    // An instance catalogue comes before the built-in one.
    saved(data.path());
    let r = auto.resolve_with(&bare);
    assert!(
        matches!(r.origin, Origin::Instance { .. }),
        "{:?}",
        r.origin
    );
    assert_eq!(
        states(&auto, &bare),
        expect([Absent, Absent, Absent, Used, Shadowed])
    );
    let loaded = r.origin.load().unwrap();
    assert!(loaded.catalogue.contains("n8n-nodes-base.instanceOnly"));
    assert_eq!(loaded.kind(), "instance");

    // A fetched one before the instance's.
    fetched(data.path());
    let r = auto.resolve_with(&bare);
    assert_eq!(
        r.origin.path(),
        Some(data.path().join("catalogue/npm").as_path())
    );
    assert_eq!(
        states(&auto, &bare),
        expect([Absent, Absent, Used, Shadowed, Shadowed])
    );
    let loaded = r.origin.load().unwrap();
    assert!(loaded.catalogue.contains("n8n-nodes-base.fetchedBase"));
    assert!(loaded
        .catalogue
        .contains("@n8n/n8n-nodes-langchain.fetchedAgent"));
    assert_eq!(loaded.kind(), "npm");

    // $AGENTGRAPH_N8N_CATALOGUE before anything stored.
    let with_env = Lookup::new(Some(env.clone()), data.path());
    assert_eq!(
        auto.resolve_with(&with_env).origin,
        Origin::Env(env.clone())
    );
    assert_eq!(
        states(&auto, &with_env),
        expect([Absent, Used, Shadowed, Shadowed, Shadowed])
    );

    // --catalogue DIR before everything.
    assert_eq!(
        given.resolve_with(&with_env).origin,
        Origin::Dir(flag.clone())
    );
    assert_eq!(
        states(&given, &with_env),
        expect([Used, Shadowed, Shadowed, Shadowed, Shadowed])
    );
    let loaded = given.resolve_with(&with_env).origin.load().unwrap();
    assert!(loaded.catalogue.contains("n8n-nodes-base.fromFlag"));

    // Builtin means the built-in one, whatever is stored.
    let builtin = CatalogueSource::Builtin.resolve_with(&with_env);
    assert_eq!(builtin.origin, Origin::Builtin);
}

#[test]
fn the_start_line_names_the_catalogue_without_loading_it() {
    let data = tempfile::tempdir().unwrap();
    let lookup = Lookup::new(None, data.path());
    let line = CatalogueSource::Auto.resolve_with(&lookup).start_line();
    assert!(
        line.starts_with("catalogue: built-in compact catalogue ("),
        "{line}"
    );
    assert!(
        line.ends_with(" node types; run 'agentgraph catalogue fetch' for all of n8n's nodes)"),
        "{line}"
    );

    saved(data.path());
    assert_eq!(
        CatalogueSource::Auto.resolve_with(&lookup).start_line(),
        "catalogue: n8n instance http://127.0.0.1:5678, saved 2026-01-02T03:04:05Z (1 node types)"
    );
    fetched(data.path());
    // The count comes from SOURCE.json (the files are not read).
    assert_eq!(
        CatalogueSource::Auto.resolve_with(&lookup).start_line(),
        "catalogue: npm n8n-nodes-base 9.1.0 + @n8n/n8n-nodes-langchain 9.0.5 (n8n 9.2.0, 2 node types)"
    );
    // A directory's line names it; its files are not read (this one does not exist).
    let dir = data.path().join("not-there");
    assert_eq!(
        CatalogueSource::Dir(dir.clone())
            .resolve_with(&lookup)
            .start_line(),
        format!(
            "catalogue: n8n node types from {} (--catalogue)",
            dir.display()
        )
    );
}

#[test]
fn an_unreadable_source_file_is_passed_over_and_damaged_files_fail_to_load() {
    let data = tempfile::tempdir().unwrap();
    fetched(data.path());
    saved(data.path());
    write(&data.path().join("catalogue/npm/SOURCE.json"), "{ not json");
    let lookup = Lookup::new(None, data.path());
    let r = CatalogueSource::Auto.resolve_with(&lookup);
    assert!(
        matches!(r.origin, Origin::Instance { .. }),
        "{:?}",
        r.origin
    );
    assert_eq!(r.steps[2].state, Broken);
    assert!(
        r.steps[2].note.contains("SOURCE.json"),
        "{}",
        r.steps[2].note
    );

    // A damaged instance file: resolved (its SOURCE.json is fine), but loading says what to do.
    write(&data.path().join("catalogue/instance/nodes.json"), "[");
    let err = CatalogueSource::Auto
        .resolve_with(&lookup)
        .origin
        .load()
        .err()
        .expect("a damaged file does not load");
    assert!(
        matches!(err, CatalogueLoadError::Instance { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("run 'agentgraph catalogue from-n8n URL' again"),
        "{err}"
    );
}

#[test]
fn without_a_data_folder_only_the_environment_and_the_built_in_one_remain() {
    let lookup = Lookup {
        env_dir: None,
        data_dir: Err(DataDirError),
    };
    let r = CatalogueSource::Auto.resolve_with(&lookup);
    assert_eq!(r.origin, Origin::Builtin);
    assert_eq!(r.steps[2].state, Absent);
    assert!(
        r.steps[2].note.contains("AGENTGRAPH_DATA_DIR"),
        "{}",
        r.steps[2].note
    );
}
