//! A fake npm registry on loopback (wiremock): package documents in the abbreviated format npm
//! serves, and tarballs built here with flate2 + tar, each with its sha512 integrity.

use base64::Engine as _;
use serde_json::{json, Map, Value};
use sha2::Digest as _;
use std::collections::BTreeMap;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// `nodes.json` entries as an npm package ships them (names without the package prefix).
pub fn nodes(names: &[&str]) -> Value {
    Value::Array(
        names
            .iter()
            .map(|n| json!({"name": n, "displayName": n, "version": 1, "properties": []}))
            .collect(),
    )
}

/// A gzipped tar of `files` (path in the archive, content).
pub fn tgz(files: &[(&str, &[u8])]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(gz);
    for (path, data) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, path, *data)
            .expect("append to the tar");
    }
    builder
        .into_inner()
        .expect("finish the tar")
        .finish()
        .expect("finish the gzip")
}

/// An npm tarball of an n8n nodes package: `package/dist/types/nodes.json` and
/// `credentials.json`, and files the fetch must not extract.
pub fn package_tgz(nodes: &Value) -> Vec<u8> {
    let nodes = nodes.to_string();
    tgz(&[
        ("package/package.json", br#"{"name": "x"}"#),
        ("package/README.md", b"# nodes"),
        ("package/dist/types/nodes.json", nodes.as_bytes()),
        ("package/dist/types/credentials.json", b"[]"),
        (
            "package/dist/nodes/Webhook/Webhook.node.js",
            b"module.exports = {}",
        ),
    ])
}

/// The SRI string npm puts in `dist.integrity`.
pub fn sri(bytes: &[u8]) -> String {
    format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha512::digest(bytes))
    )
}

/// What the registry serves at a version's tarball address.
pub enum Tarball {
    /// A good package with these `nodes.json` entries.
    Nodes(Value),
    /// These bytes, with their true integrity.
    Raw(Vec<u8>),
    /// A good package whose document announces another integrity.
    Tampered(Value),
    /// This status, no body.
    Status(u16),
}

#[derive(Default)]
struct Package {
    tags: Map<String, Value>,
    versions: BTreeMap<String, Tarball>,
}

/// A registry being described; [`FakeNpm::start`] serves it.
#[derive(Default)]
pub struct FakeNpm {
    n8n_tags: Map<String, Value>,
    /// n8n release -> its dependencies.
    releases: BTreeMap<String, Value>,
    packages: BTreeMap<String, Package>,
}

impl FakeNpm {
    pub fn new() -> Self {
        Self::default()
    }

    /// An n8n release depending on these node package versions.
    pub fn release(mut self, n8n: &str, deps: &[(&str, &str)]) -> Self {
        let deps: Map<String, Value> = deps
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        self.releases.insert(n8n.to_string(), Value::Object(deps));
        self
    }

    /// An n8n dist-tag.
    pub fn n8n_tag(mut self, tag: &str, version: &str) -> Self {
        self.n8n_tags.insert(tag.to_string(), json!(version));
        self
    }

    /// A version of a node package.
    pub fn version(mut self, name: &str, version: &str, tarball: Tarball) -> Self {
        self.packages
            .entry(name.to_string())
            .or_default()
            .versions
            .insert(version.to_string(), tarball);
        self
    }

    /// A dist-tag of a node package.
    pub fn tag(mut self, name: &str, tag: &str, version: &str) -> Self {
        self.packages
            .entry(name.to_string())
            .or_default()
            .tags
            .insert(tag.to_string(), json!(version));
        self
    }

    /// Serves the documents and tarballs on a new loopback server.
    pub async fn start(self) -> MockServer {
        let server = MockServer::start().await;
        let uri = server.uri();
        if !self.releases.is_empty() {
            let versions: Map<String, Value> = self
                .releases
                .iter()
                .map(|(v, deps)| (v.clone(), json!({"version": v, "dependencies": deps})))
                .collect();
            let doc = json!({"name": "n8n", "dist-tags": self.n8n_tags, "versions": versions});
            serve_json(&server, "/n8n", doc).await;
        }
        for (name, pkg) in self.packages {
            let short = name.rsplit('/').next().unwrap_or(&name).to_string();
            let mut versions = Map::new();
            for (version, tarball) in pkg.versions {
                let rel = format!("/{name}/-/{short}-{version}.tgz");
                let (response, integrity) = match tarball {
                    Tarball::Nodes(nodes) => {
                        let bytes = package_tgz(&nodes);
                        let sri = sri(&bytes);
                        (ResponseTemplate::new(200).set_body_bytes(bytes), sri)
                    }
                    Tarball::Raw(bytes) => {
                        let sri = sri(&bytes);
                        (ResponseTemplate::new(200).set_body_bytes(bytes), sri)
                    }
                    Tarball::Tampered(nodes) => (
                        ResponseTemplate::new(200).set_body_bytes(package_tgz(&nodes)),
                        sri(b"something else"),
                    ),
                    Tarball::Status(code) => (ResponseTemplate::new(code), sri(b"")),
                };
                Mock::given(method("GET"))
                    .and(path(rel.as_str()))
                    .respond_with(response)
                    .mount(&server)
                    .await;
                versions.insert(
                    version.clone(),
                    json!({
                        "name": name,
                        "version": version,
                        "dist": {"tarball": format!("{uri}{rel}"), "integrity": integrity}
                    }),
                );
            }
            let doc = json!({"name": name, "dist-tags": pkg.tags, "versions": versions});
            // Scoped names are escaped as npm escapes them.
            serve_json(&server, &format!("/{}", name.replace('/', "%2f")), doc).await;
        }
        server
    }
}

async fn serve_json(server: &MockServer, at: &str, doc: Value) {
    Mock::given(method("GET"))
        .and(path(at))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "application/vnd.npm.install-v1+json")
                .set_body_string(doc.to_string()),
        )
        .mount(server)
        .await;
}
