//! `catalogue::fetch` against a loopback fake npm registry: what lands in the data folder, a
//! second fetch replacing the first whole, and failures that leave the stored catalogue as it
//! was.

use super::fake_npm::{nodes, package_tgz, FakeNpm, Tarball};
use agentgraph_n8n::catalogue::fetch::{fetch, FetchError, FetchOptions};
use agentgraph_n8n::catalogue::store::{NpmSource, Store};
use agentgraph_std_tools::catalogue::Catalogue;
use serde_json::Value;
use std::path::Path;

const BASE: &str = "n8n-nodes-base";
const LANGCHAIN: &str = "@n8n/n8n-nodes-langchain";

async fn fetch_from(store: &Store, registry: &str, version: &str) -> Result<NpmSource, FetchError> {
    let opts = FetchOptions {
        registry: registry.to_string(),
        version: version.to_string(),
    };
    fetch(store, &opts, &|_| {}).await
}

/// The names in a folder, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

/// Latest: base 2.0.1 (3 types), langchain 2.0.0 (2 types); n8n 1.5.0 pins base 1.4.0
/// (2 types) and langchain 1.4.1 (1 type); n8n 0.200.0 predates the langchain package.
fn registry() -> FakeNpm {
    FakeNpm::new()
        .version(
            BASE,
            "2.0.1",
            Tarball::Nodes(nodes(&["webhook", "set", "httpRequest"])),
        )
        .tag(BASE, "latest", "2.0.1")
        .version(
            LANGCHAIN,
            "2.0.0",
            Tarball::Nodes(nodes(&["agent", "lmChatOpenAi"])),
        )
        .tag(LANGCHAIN, "latest", "2.0.0")
        .version(BASE, "1.4.0", Tarball::Nodes(nodes(&["webhook", "set"])))
        .version(LANGCHAIN, "1.4.1", Tarball::Nodes(nodes(&["agent"])))
        .version(BASE, "0.198.0", Tarball::Nodes(nodes(&["cron"])))
        .release("1.5.0", &[(BASE, "1.4.0"), (LANGCHAIN, "1.4.1")])
        .release("0.200.0", &[(BASE, "0.198.0")])
        .n8n_tag("latest", "1.5.0")
}

#[tokio::test]
async fn a_dist_tag_fetches_each_package_at_its_own_tag() {
    let server = registry().start().await;
    let data = tempfile::tempdir().unwrap();
    let store = Store::new(data.path());
    let source = fetch_from(&store, &server.uri(), "latest").await.unwrap();

    let npm = data.path().join("catalogue/npm");
    assert_eq!(listing(&data.path().join("catalogue")), ["npm"]);
    assert_eq!(
        listing(&npm),
        ["SOURCE.json", "n8n-nodes-base", "n8n-nodes-langchain"]
    );
    // Only the two type files, nothing else of the package.
    assert_eq!(
        listing(&npm.join("n8n-nodes-base")),
        ["credentials.json", "nodes.json"]
    );
    assert_eq!(
        read_json(&npm.join("n8n-nodes-base/nodes.json")),
        nodes(&["webhook", "set", "httpRequest"])
    );
    assert_eq!(
        read_json(&npm.join("n8n-nodes-langchain/nodes.json")),
        nodes(&["agent", "lmChatOpenAi"])
    );

    let written = read_json(&npm.join("SOURCE.json"));
    assert_eq!(written["requested"], "latest");
    assert_eq!(written["node_types"], 5);
    assert_eq!(written["packages"][0]["name"], BASE);
    assert_eq!(written["packages"][0]["version"], "2.0.1");
    assert_eq!(written["packages"][1]["name"], LANGCHAIN);
    assert_eq!(written["packages"][1]["version"], "2.0.0");
    assert!(written.get("n8n_version").is_none(), "{written}");
    assert_eq!(store.npm().unwrap(), Some(source));

    let catalogue = Catalogue::load_n8n_dir(&npm).unwrap();
    assert!(catalogue.contains("n8n-nodes-base.webhook"));
    assert!(catalogue.contains("@n8n/n8n-nodes-langchain.agent"));
    assert_eq!(catalogue.len(), 5);
}

#[tokio::test]
async fn an_n8n_version_fetches_what_that_release_pins_and_replaces_the_stored_one() {
    let server = registry().start().await;
    let data = tempfile::tempdir().unwrap();
    let store = Store::new(data.path());
    let npm = data.path().join("catalogue/npm");

    let first = fetch_from(&store, &server.uri(), "1.5.0").await.unwrap();
    assert_eq!(first.n8n_version.as_deref(), Some("1.5.0"));
    assert_eq!(
        first.packages_line(),
        format!("{BASE} 1.4.0 + {LANGCHAIN} 1.4.1")
    );
    assert_eq!(first.node_types, 3);
    assert_eq!(
        read_json(&npm.join("n8n-nodes-base/nodes.json")),
        nodes(&["webhook", "set"])
    );

    // A release from before the LangChain nodes: the whole folder is replaced.
    let second = fetch_from(&store, &server.uri(), "0.200.0").await.unwrap();
    assert_eq!(second.packages_line(), format!("{BASE} 0.198.0"));
    assert_eq!(listing(&npm), ["SOURCE.json", "n8n-nodes-base"]);
    assert_eq!(
        read_json(&npm.join("n8n-nodes-base/nodes.json")),
        nodes(&["cron"])
    );
    assert_eq!(
        read_json(&npm.join("SOURCE.json"))["n8n_version"],
        "0.200.0"
    );
    // No staging or old folder is left behind.
    assert_eq!(listing(&data.path().join("catalogue")), ["npm"]);
}

/// The stored catalogue's files, to compare before and after a failed fetch.
fn snapshot(store: &Store) -> Vec<(String, Vec<u8>)> {
    let npm = store.npm_dir();
    [
        "SOURCE.json",
        "n8n-nodes-base/nodes.json",
        "n8n-nodes-langchain/nodes.json",
    ]
    .iter()
    .map(|rel| (rel.to_string(), std::fs::read(npm.join(rel)).unwrap()))
    .collect()
}

#[tokio::test]
async fn a_failed_fetch_says_why_and_leaves_the_stored_catalogue_as_it_was() {
    let good = package_tgz(&nodes(&["webhook"]));
    let mut half = good.clone();
    half.truncate(good.len() / 2);
    let mut fake = registry()
        .version(
            BASE,
            "3.0.0",
            Tarball::Raw(b"this is not a tarball".to_vec()),
        )
        .version(BASE, "3.0.1", Tarball::Status(404))
        .version(BASE, "3.0.2", Tarball::Tampered(nodes(&["webhook"])))
        .version(
            BASE,
            "3.0.3",
            Tarball::Raw(super::fake_npm::tgz(&[("package/package.json", b"{}")])),
        )
        .version(BASE, "3.0.4", Tarball::Raw(half))
        .version(
            BASE,
            "3.0.5",
            Tarball::Raw(package_tgz(&serde_json::json!({"not": "an array"}))),
        )
        .release("1.9.0", &[(BASE, "9.9.9"), (LANGCHAIN, "2.0.0")]);
    let cases = [
        ("broken", "3.0.0", "not a readable npm tarball"),
        ("gone", "3.0.1", "answered 404"),
        (
            "tampered",
            "3.0.2",
            "does not match the registry's sha512 integrity",
        ),
        ("empty", "3.0.3", "has no package/dist/types/nodes.json"),
        ("truncated", "3.0.4", "not a readable npm tarball"),
        ("garbled", "3.0.5", "the fetched node types do not load"),
    ];
    for (tag, version, _) in cases {
        fake = fake.tag(BASE, tag, version).tag(LANGCHAIN, tag, "2.0.0");
    }
    let server = fake.start().await;
    let data = tempfile::tempdir().unwrap();
    let store = Store::new(data.path());
    fetch_from(&store, &server.uri(), "latest").await.unwrap();
    let before = snapshot(&store);

    let mut failures: Vec<(String, String)> = Vec::new();
    for (tag, _, expected) in cases {
        failures.push((tag.to_string(), expected.to_string()));
    }
    failures.push((
        "9.9.9".into(),
        "is neither a dist-tag of n8n-nodes-base nor an n8n version".into(),
    ));
    failures.push((
        "1.9.0".into(),
        "n8n-nodes-base has no version `9.9.9`".into(),
    ));
    for (requested, expected) in failures {
        let err = fetch_from(&store, &server.uri(), &requested)
            .await
            .expect_err(&requested)
            .to_string();
        assert!(err.contains(&expected), "{requested}: {err}");
        assert_eq!(
            snapshot(&store),
            before,
            "{requested} changed the stored catalogue"
        );
        assert_eq!(listing(store.root()), ["npm"], "{requested} left a folder");
    }
}

#[tokio::test]
async fn a_registry_without_the_package_or_not_answering_is_a_clear_error() {
    // Only the base package: the LangChain document is a 404.
    let server = FakeNpm::new()
        .version(BASE, "2.0.1", Tarball::Nodes(nodes(&["webhook"])))
        .tag(BASE, "latest", "2.0.1")
        .start()
        .await;
    let data = tempfile::tempdir().unwrap();
    let store = Store::new(data.path());
    let err = fetch_from(&store, &server.uri(), "latest")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, FetchError::Status { status: 404, .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("@n8n%2fn8n-nodes-langchain answered 404"),
        "{text}"
    );
    assert!(
        text.contains("the registry has no package @n8n/n8n-nodes-langchain"),
        "{text}"
    );
    assert!(!store.root().join("npm").exists());

    // A port nothing listens on any more (wiremock keeps its servers for reuse).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let uri = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let err = fetch_from(&store, &uri, "latest").await.unwrap_err();
    assert!(matches!(err, FetchError::Unreachable { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with(&format!("cannot reach {uri}/")),
        "{err}"
    );
}
