//! `agentgraph catalogue fetch`: the node-type catalogue from the npm registry.
//!
//! What to fetch is `latest`, another dist-tag or an n8n version. A dist-tag of
//! `n8n-nodes-base` is taken per package: each node package at its own tag. Anything else is an
//! n8n release (a version such as `1.123.0`, or one of the `n8n` package's dist-tags), whose
//! `dependencies` in the `n8n` package document pin the exact versions of `n8n-nodes-base` and
//! `@n8n/n8n-nodes-langchain` it ships. Each package's document gives the tarball
//! (`versions[V].dist.tarball`) and its sha512 `integrity`; only `dist/types/nodes.json` and
//! `dist/types/credentials.json` are read from the tarball. The result must load as a catalogue
//! before it replaces the stored one ([`Store::npm_dir`]).

use super::store::{now_rfc3339, NpmSource, PackageSource, Store, StoreError, SOURCE_FILE};
use agentgraph_std_tools::catalogue::{Catalogue, CatalogueError};
use base64::Engine as _;
use serde_json::Value;
use sha2::Digest as _;
use std::io::Read as _;
use std::path::Path;
use std::time::Duration;

/// The package whose releases name the node packages' versions.
const N8N_PACKAGE: &str = "n8n";
/// The node packages: npm name, folder in the stored catalogue, whether a release must have it
/// (releases before 1.0 have no LangChain nodes).
const NODE_PACKAGES: [(&str, &str, bool); 2] = [
    ("n8n-nodes-base", "n8n-nodes-base", true),
    ("@n8n/n8n-nodes-langchain", "n8n-nodes-langchain", false),
];
/// The files read from a tarball, under its top folder.
const WANTED: [&str; 2] = ["dist/types/nodes.json", "dist/types/credentials.json"];
/// The abbreviated package document is much smaller and has all that is needed here.
const ACCEPT: &str = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8";

/// Why a fetch failed; the stored catalogue is then left as it was.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// No registry address could be found.
    #[error("no npm registry: {0}")]
    NoRegistry(String),
    /// The registry could not be reached.
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The address.
        url: String,
        /// The transport's reason.
        reason: String,
    },
    /// The registry answered with an error status.
    #[error("{url} answered {status}{hint}")]
    Status {
        /// The address.
        url: String,
        /// The HTTP status.
        status: u16,
        /// What it likely means.
        hint: String,
    },
    /// A package document is not what npm registries serve.
    #[error("{url}: {message}")]
    Document {
        /// The address.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// Neither the node packages nor n8n have such a dist-tag or version.
    #[error("`{requested}` is neither a dist-tag of n8n-nodes-base nor an n8n version or dist-tag on {registry} (n8n's dist-tags: {tags})")]
    UnknownVersion {
        /// What was asked for.
        requested: String,
        /// The registry.
        registry: String,
        /// n8n's dist-tags.
        tags: String,
    },
    /// A node package lacks the dist-tag `n8n-nodes-base` has.
    #[error("{package} has no dist-tag `{tag}` on {registry} (its dist-tags: {tags})")]
    MissingTag {
        /// The node package.
        package: String,
        /// The tag.
        tag: String,
        /// The registry.
        registry: String,
        /// Its dist-tags.
        tags: String,
    },
    /// The registry does not have a node package version that was picked.
    #[error("{package} has no version `{spec}` on {registry}{needed_by}")]
    MissingVersion {
        /// The node package.
        package: String,
        /// The version (what the n8n release names, or what the dist-tag points to).
        spec: String,
        /// The registry.
        registry: String,
        /// ` (n8n 1.2.3 depends on it)` when a release was asked for.
        needed_by: String,
    },
    /// The tarball's hash differs from the registry's.
    #[error("{url}: the download does not match the registry's sha512 integrity; try again")]
    Integrity {
        /// The tarball's address.
        url: String,
    },
    /// The tarball is not a gzipped tar.
    #[error("{url}: not a readable npm tarball: {reason}")]
    Tarball {
        /// The tarball's address.
        url: String,
        /// The gzip or tar error.
        reason: String,
    },
    /// The tarball has no `dist/types/nodes.json`.
    #[error("{url} has no package/dist/types/nodes.json: not an n8n nodes package")]
    NoNodesJson {
        /// The tarball's address.
        url: String,
    },
    /// The extracted node types do not load.
    #[error("the fetched node types do not load: {0}")]
    Catalogue(CatalogueError),
    /// The data folder could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What to fetch, from where.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// The registry's address (see [`npm_registry`]).
    pub registry: String,
    /// An n8n version or dist-tag (`latest`).
    pub version: String,
}

/// The npm registry's address: `$NPM_CONFIG_REGISTRY` or `$npm_config_registry`, else what
/// `npm config get registry` prints.
pub fn npm_registry() -> Result<String, FetchError> {
    for var in ["NPM_CONFIG_REGISTRY", "npm_config_registry"] {
        if let Some(v) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) {
            return Ok(v.trim().to_string());
        }
    }
    let hint = "set NPM_CONFIG_REGISTRY to your npm registry's address";
    let out = std::process::Command::new("npm")
        .args(["config", "get", "registry"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            FetchError::NoRegistry(format!(
                "NPM_CONFIG_REGISTRY is not set and npm cannot be run ({e}): {hint}, or install npm"
            ))
        })?;
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(FetchError::NoRegistry(format!(
            "`npm config get registry` failed ({err}): {hint}"
        )));
    }
    if !(printed.starts_with("http://") || printed.starts_with("https://")) {
        return Err(FetchError::NoRegistry(format!(
            "`npm config get registry` printed {printed:?}, not an address: {hint}"
        )));
    }
    Ok(printed)
}

/// Fetches the catalogue of `opts.version` into `store` (replacing the one there only when
/// every step succeeded) and returns its source; `progress` is told each step.
pub async fn fetch(
    store: &Store,
    opts: &FetchOptions,
    progress: &(dyn Fn(&str) + Send + Sync),
) -> Result<NpmSource, FetchError> {
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .timeout(Duration::from_secs(600))
        .build()
        .map_err(|e| FetchError::NoRegistry(format!("cannot build the HTTP client: {e}")))?;
    let registry = opts.registry.trim().trim_end_matches('/');
    progress(&format!("resolving {} on {registry}", opts.version));
    let (n8n_version, plan) = plan(&http, registry, &opts.version).await?;
    let staging = store.stage("npm")?;
    let mut packages = Vec::new();
    for (name, folder, version, doc) in plan {
        let dist = &doc["versions"][&version]["dist"];
        let Some(tarball) = dist["tarball"].as_str() else {
            return Err(FetchError::MissingVersion {
                package: name.to_string(),
                spec: version,
                registry: registry.to_string(),
                needed_by: n8n_version
                    .as_ref()
                    .map(|v| format!(" (n8n {v} depends on it; try another n8n version)"))
                    .unwrap_or_default(),
            });
        };
        progress(&format!("downloading {name} {version}"));
        let bytes = download(&http, tarball).await?;
        check_integrity(dist["integrity"].as_str(), &bytes, tarball)?;
        let out = staging.path().join(folder);
        std::fs::create_dir(&out).map_err(|source| StoreError::Io {
            action: "cannot create",
            path: out.clone(),
            source,
        })?;
        extract(&bytes, &out, tarball)?;
        packages.push(PackageSource {
            name: name.to_string(),
            version,
            tarball: tarball.to_string(),
        });
    }
    let catalogue = Catalogue::load_n8n_dir(staging.path()).map_err(FetchError::Catalogue)?;
    let source = NpmSource {
        n8n_version,
        requested: opts.version.clone(),
        registry: registry.to_string(),
        packages,
        node_types: catalogue.len(),
        fetched_at: now_rfc3339(),
    };
    staging.write_json(SOURCE_FILE, &source)?;
    staging.commit()?;
    Ok(source)
}

/// The node packages to fetch: (npm name, folder, version, package document), and the n8n
/// release they belong to when `requested` named one.
type Plan = Vec<(&'static str, &'static str, String, Value)>;

async fn plan(
    http: &reqwest::Client,
    registry: &str,
    requested: &str,
) -> Result<(Option<String>, Plan), FetchError> {
    let mut docs = Vec::new();
    let base_doc = document(http, registry, NODE_PACKAGES[0].0).await?;
    if base_doc["dist-tags"][requested].is_string() {
        // A dist-tag: each node package at its own.
        docs.push(base_doc);
        for (name, _, _) in &NODE_PACKAGES[1..] {
            docs.push(document(http, registry, name).await?);
        }
        let mut plan = Vec::new();
        for ((name, folder, _), doc) in NODE_PACKAGES.into_iter().zip(docs) {
            let Some(version) = doc["dist-tags"][requested].as_str().map(str::to_string) else {
                return Err(FetchError::MissingTag {
                    package: name.to_string(),
                    tag: requested.to_string(),
                    registry: registry.to_string(),
                    tags: dist_tags(&doc),
                });
            };
            plan.push((name, folder, version, doc));
        }
        return Ok((None, plan));
    }
    // An n8n release: the versions it depends on.
    let n8n_doc = document(http, registry, N8N_PACKAGE).await?;
    let n8n_version =
        resolve_version(&n8n_doc, requested).ok_or_else(|| FetchError::UnknownVersion {
            requested: requested.to_string(),
            registry: registry.to_string(),
            tags: dist_tags(&n8n_doc),
        })?;
    let deps = &n8n_doc["versions"][&n8n_version]["dependencies"];
    let mut plan = Vec::new();
    let mut base_doc = Some(base_doc);
    for (name, folder, required) in NODE_PACKAGES {
        let Some(spec) = deps.get(name).and_then(Value::as_str) else {
            if required {
                return Err(FetchError::Document {
                    url: package_url(registry, N8N_PACKAGE),
                    message: format!("n8n {n8n_version} does not depend on {name}"),
                });
            }
            continue;
        };
        let doc = match base_doc.take() {
            Some(doc) => doc,
            None => document(http, registry, name).await?,
        };
        plan.push((name, folder, spec.to_string(), doc));
    }
    Ok((Some(n8n_version), plan))
}

/// A package document's address: a scoped name's `/` is escaped, as npm does.
fn package_url(registry: &str, name: &str) -> String {
    format!("{registry}/{}", name.replace('/', "%2f"))
}

/// `requested` as a dist-tag, else as a version (`v1.2.3` too) the document lists.
fn resolve_version(doc: &Value, requested: &str) -> Option<String> {
    if let Some(v) = doc["dist-tags"][requested].as_str() {
        return Some(v.to_string());
    }
    let plain = requested.strip_prefix('v').unwrap_or(requested);
    doc["versions"].get(plain).map(|_| plain.to_string())
}

fn dist_tags(doc: &Value) -> String {
    match doc["dist-tags"].as_object() {
        Some(tags) if !tags.is_empty() => tags
            .iter()
            .map(|(k, v)| format!("{k} = {}", v.as_str().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join(", "),
        _ => "none".to_string(),
    }
}

async fn get(
    http: &reqwest::Client,
    url: &str,
    what: &str,
) -> Result<reqwest::Response, FetchError> {
    let resp = http
        .get(url)
        .header(reqwest::header::ACCEPT, ACCEPT)
        .send()
        .await
        .map_err(|e| FetchError::Unreachable {
            url: url.to_string(),
            reason: if e.is_timeout() {
                "timed out".to_string()
            } else {
                error_chain(&e)
            },
        })?;
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let hint = match status.as_u16() {
        404 => format!(" (the registry has no {what})"),
        401 | 403 => " (the registry wants credentials: check npm's configuration)".to_string(),
        _ => String::new(),
    };
    Err(FetchError::Status {
        url: url.to_string(),
        status: status.as_u16(),
        hint,
    })
}

/// A package's document.
async fn document(http: &reqwest::Client, registry: &str, name: &str) -> Result<Value, FetchError> {
    let url = package_url(registry, name);
    let resp = get(http, &url, &format!("package {name}")).await?;
    let bad = |message: String| FetchError::Document {
        url: url.clone(),
        message,
    };
    let text = resp
        .text()
        .await
        .map_err(|e| bad(format!("cannot read the answer: {}", error_chain(&e))))?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| bad(format!("not a package document (invalid JSON: {e})")))?;
    if !doc["versions"].is_object() {
        return Err(bad("not a package document (no `versions`)".to_string()));
    }
    Ok(doc)
}

async fn download(http: &reqwest::Client, url: &str) -> Result<Vec<u8>, FetchError> {
    let resp = get(http, url, "such tarball").await?;
    let bytes = resp.bytes().await.map_err(|e| FetchError::Unreachable {
        url: url.to_string(),
        reason: format!("the download broke off: {}", error_chain(&e)),
    })?;
    Ok(bytes.to_vec())
}

/// Checks the `sha512-…` entries of an SRI `integrity` string; without one there is nothing to
/// check.
fn check_integrity(integrity: Option<&str>, bytes: &[u8], url: &str) -> Result<(), FetchError> {
    let expected: Vec<&str> = integrity
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|h| h.strip_prefix("sha512-"))
        .collect();
    if expected.is_empty() {
        return Ok(());
    }
    let actual = base64::engine::general_purpose::STANDARD.encode(sha2::Sha512::digest(bytes));
    if expected.iter().any(|e| *e == actual) {
        Ok(())
    } else {
        Err(FetchError::Integrity {
            url: url.to_string(),
        })
    }
}

/// Writes the [`WANTED`] files of a gzipped npm tarball into `out` (nothing else is unpacked).
fn extract(bytes: &[u8], out: &Path, url: &str) -> Result<(), FetchError> {
    let bad = |e: std::io::Error| FetchError::Tarball {
        url: url.to_string(),
        reason: e.to_string(),
    };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut found_nodes = false;
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let path = entry.path().map_err(bad)?.into_owned();
        // Below the top folder (`package/` in every npm tarball).
        let inner: std::path::PathBuf = path.components().skip(1).collect();
        let Some(wanted) = WANTED.iter().find(|w| Path::new(w) == inner) else {
            continue;
        };
        let mut data = Vec::new();
        entry.read_to_end(&mut data).map_err(bad)?;
        let name = Path::new(wanted).file_name().unwrap_or_default();
        let dest = out.join(name);
        std::fs::write(&dest, data).map_err(|source| StoreError::Io {
            action: "cannot write",
            path: dest,
            source,
        })?;
        found_nodes |= name == "nodes.json";
    }
    if found_nodes {
        Ok(())
    } else {
        Err(FetchError::NoNodesJson {
            url: url.to_string(),
        })
    }
}

/// An error's causes (reqwest's own message only repeats the address), else the error.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut causes = Vec::new();
    let mut source = e.source();
    while let Some(s) = source {
        causes.push(s.to_string());
        source = s.source();
    }
    if causes.is_empty() {
        e.to_string()
    } else {
        causes.join(": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn versions_resolve_through_dist_tags_then_the_version_list() {
        let doc = json!({
            "dist-tags": {"latest": "2.1.0", "next": "2.2.0-beta"},
            "versions": {"1.123.0": {}, "2.1.0": {}, "2.2.0-beta": {}}
        });
        assert_eq!(resolve_version(&doc, "latest").as_deref(), Some("2.1.0"));
        assert_eq!(resolve_version(&doc, "next").as_deref(), Some("2.2.0-beta"));
        assert_eq!(resolve_version(&doc, "1.123.0").as_deref(), Some("1.123.0"));
        assert_eq!(
            resolve_version(&doc, "v1.123.0").as_deref(),
            Some("1.123.0")
        );
        assert_eq!(resolve_version(&doc, "9.9.9"), None);
        assert_eq!(dist_tags(&doc), "latest = 2.1.0, next = 2.2.0-beta");
    }

    #[test]
    fn scoped_names_are_escaped() {
        assert_eq!(
            package_url("http://r", "@n8n/n8n-nodes-langchain"),
            "http://r/@n8n%2fn8n-nodes-langchain"
        );
    }

    #[test]
    fn integrity_is_checked_only_for_sha512() {
        // sha512("abc"), from FIPS 180-2's test vectors, in base64.
        let abc = "3a81oZNherrMQXNJriBBMRLm+k6JqX6iCp7u5ktV05ohkpkqJ0/BqDa6PCOj/uu9RU1EI2Q86A4qmslPpUyknw==";
        assert!(check_integrity(Some(&format!("sha512-{abc}")), b"abc", "u").is_ok());
        assert!(check_integrity(Some(&format!("sha512-{abc}")), b"abd", "u").is_err());
        assert!(check_integrity(Some("sha1-xyz"), b"abc", "u").is_ok());
        assert!(check_integrity(None, b"abc", "u").is_ok());
    }
}
