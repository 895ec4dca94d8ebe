//! The node-type catalogue: n8n node-type descriptions keyed by full type name and version,
//! loaders (the built-in compact catalogue, n8n's `nodes.json` files, a running n8n's
//! node-types export), generated `…Tool` variants, port resolution and search.

mod display;
mod ports;
mod search;
mod tool_variant;
mod types;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

pub use display::{is_visible, parameters_with_defaults, property_visible};
pub use ports::{evaluate_expression, resolve_ports, resolve_ports_strict, Port, PortError, Ports};
pub use search::SearchHit;
pub use tool_variant::tool_variant;
pub use types::{short_name, Codex, NodeProperty, NodeTypeDescription, PortsSpec, VersionSpec};

use types::same_version;

/// Package prefix of the n8n base nodes.
pub const BASE_PACKAGE: &str = "n8n-nodes-base";
/// Package prefix of the n8n LangChain nodes.
pub const LANGCHAIN_PACKAGE: &str = "@n8n/n8n-nodes-langchain";

const BUILTIN_JSON: &str = include_str!("../../data/catalogue.json");

/// Why a catalogue could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    /// The file could not be read.
    #[error("cannot read node types file {path}: {source}")]
    Read {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The file is not JSON or not an array.
    #[error("node types file {path} is not a JSON array of node-type descriptions: {message}")]
    NotArray {
        /// File.
        path: PathBuf,
        /// Cause.
        message: String,
    },
    /// One entry does not have the node-type description shape.
    #[error("node types file {path}, entry {index} ({name}): {message}")]
    Entry {
        /// File.
        path: PathBuf,
        /// Index in the array.
        index: usize,
        /// The entry's `name`, or `?`.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A directory holds none of the expected `nodes.json` files.
    #[error("directory {path} holds neither n8n-nodes-base nor n8n-nodes-langchain nodes.json")]
    EmptyDir {
        /// Directory.
        path: PathBuf,
    },
}

/// Node-type descriptions keyed by full type name (`n8n-nodes-base.httpRequest`), each with
/// one or more descriptions covering different versions.
#[derive(Debug, Default)]
pub struct Catalogue {
    types: BTreeMap<String, Vec<NodeTypeDescription>>,
    generated_tools: BTreeSet<String>,
    index: OnceLock<search::SearchIndex>,
}

impl Clone for Catalogue {
    fn clone(&self) -> Self {
        Catalogue {
            types: self.types.clone(),
            generated_tools: self.generated_tools.clone(),
            index: OnceLock::new(),
        }
    }
}

impl Catalogue {
    /// An empty catalogue.
    pub fn new() -> Self {
        Self::default()
    }

    /// The compact catalogue shipped in the crate (`std-tools/data/catalogue.json`), with
    /// generated tool variants for its `usableAsTool` nodes. Its descriptions are marked
    /// [`NodeTypeDescription::abridged`].
    pub fn builtin() -> Result<Catalogue, CatalogueError> {
        let mut c = Catalogue::new();
        c.add_json_str(
            BUILTIN_JSON,
            Path::new("<builtin>/catalogue.json"),
            None,
            true,
        )?;
        for descs in c.types.values_mut() {
            for d in descs {
                d.abridged = true;
            }
        }
        Ok(c)
    }

    /// Loads one `nodes.json` as an npm package ships it (names without prefix), prefixing
    /// every name with `package_prefix` (`n8n-nodes-base`) and generating `…Tool` variants.
    pub fn load_nodes_json(
        path: impl AsRef<Path>,
        package_prefix: &str,
    ) -> Result<Catalogue, CatalogueError> {
        let path = path.as_ref();
        let text = read(path)?;
        let mut c = Catalogue::new();
        c.add_json_str(&text, path, Some(package_prefix), true)?;
        Ok(c)
    }

    /// Loads both packages from a directory laid out as `scripts/fetch-n8n-catalogue.sh` writes it
    /// (`n8n-nodes-base/nodes.json`, `n8n-nodes-langchain/nodes.json`) or like an npm
    /// `node_modules` folder (`n8n-nodes-base/dist/types/nodes.json`,
    /// `@n8n/n8n-nodes-langchain/dist/types/nodes.json`). A missing package is skipped; both
    /// missing is an error.
    pub fn load_n8n_dir(dir: impl AsRef<Path>) -> Result<Catalogue, CatalogueError> {
        let dir = dir.as_ref();
        let mut c = Catalogue::new();
        let mut found = false;
        let packages: [(&[&str], &str); 2] = [
            (&["n8n-nodes-base"], BASE_PACKAGE),
            (
                &["n8n-nodes-langchain", "@n8n/n8n-nodes-langchain"],
                LANGCHAIN_PACKAGE,
            ),
        ];
        for (subs, prefix) in packages {
            let candidate = subs.iter().find_map(|sub| {
                [
                    dir.join(sub).join("nodes.json"),
                    dir.join(sub).join("dist/types/nodes.json"),
                ]
                .into_iter()
                .find(|p| p.is_file())
            });
            if let Some(path) = candidate {
                found = true;
                c.merge(Catalogue::load_nodes_json(&path, prefix)?);
            }
        }
        if !found {
            return Err(CatalogueError::EmptyDir {
                path: dir.to_path_buf(),
            });
        }
        Ok(c)
    }

    /// Loads a running n8n's node-types export (`/types/nodes.json` shape: the same array,
    /// names already prefixed, tool variants already present — none are generated).
    pub fn load_node_types_export(path: impl AsRef<Path>) -> Result<Catalogue, CatalogueError> {
        let path = path.as_ref();
        let text = read(path)?;
        let mut c = Catalogue::new();
        c.add_json_str(&text, path, None, false)?;
        Ok(c)
    }

    /// Parses a JSON array of descriptions from a string (`source` names it in errors).
    /// With `package_prefix` names are prefixed; with `tool_variants` `…Tool` variants are
    /// generated for `usableAsTool` descriptions.
    pub fn add_json_str(
        &mut self,
        text: &str,
        source: &Path,
        package_prefix: Option<&str>,
        tool_variants: bool,
    ) -> Result<(), CatalogueError> {
        let mut added: Vec<NodeTypeDescription> = match serde_json::from_str(text) {
            // Fast path: the whole array has the right shape.
            Ok(list) => list,
            // Slow path: find the offending entry to name it.
            Err(_) => Self::parse_entries(text, source)?,
        };
        if let Some((index, d)) = added.iter().enumerate().find(|(_, d)| d.name.is_empty()) {
            return Err(CatalogueError::Entry {
                path: source.to_path_buf(),
                index,
                name: d.display_name.clone(),
                message: "missing or empty `name`".into(),
            });
        }
        if let Some(prefix) = package_prefix {
            let dotted = format!("{prefix}.");
            for desc in &mut added {
                if !desc.name.starts_with(&dotted) {
                    desc.name = format!("{dotted}{}", desc.name);
                }
            }
        }
        let real_names: BTreeSet<String> = added.iter().map(|d| d.name.clone()).collect();
        let mut tools = Vec::new();
        if tool_variants {
            for d in &added {
                if let Some(t) = tool_variant(d) {
                    if !real_names.contains(&t.name) && !self.types.contains_key(&t.name) {
                        tools.push(t);
                    }
                }
            }
        }
        // Replace types that are redefined by this batch.
        for name in &real_names {
            self.types.remove(name);
            self.generated_tools.remove(name);
        }
        for d in added {
            self.types.entry(d.name.clone()).or_default().push(d);
        }
        let tool_names: BTreeSet<String> = tools.iter().map(|t| t.name.clone()).collect();
        for name in &tool_names {
            self.types.remove(name);
        }
        for t in tools {
            self.generated_tools.insert(t.name.clone());
            self.types.entry(t.name.clone()).or_default().push(t);
        }
        self.index = OnceLock::new();
        Ok(())
    }

    fn parse_entries(
        text: &str,
        source: &Path,
    ) -> Result<Vec<NodeTypeDescription>, CatalogueError> {
        let raw: Vec<Value> = serde_json::from_str(text).map_err(|e| CatalogueError::NotArray {
            path: source.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut added: Vec<NodeTypeDescription> = Vec::with_capacity(raw.len());
        for (index, entry) in raw.into_iter().enumerate() {
            let name = entry
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            let entry_err = |message: String| CatalogueError::Entry {
                path: source.to_path_buf(),
                index,
                name: name.clone(),
                message,
            };
            if !entry.is_object() {
                return Err(entry_err("not an object".into()));
            }
            if name == "?" || name.is_empty() {
                return Err(entry_err("missing or empty `name`".into()));
            }
            let desc: NodeTypeDescription =
                serde_json::from_value(entry).map_err(|e| entry_err(e.to_string()))?;
            added.push(desc);
        }
        Ok(added)
    }

    /// Adds (or replaces) one description; other descriptions of the same type whose versions
    /// overlap are replaced.
    pub fn insert(&mut self, desc: NodeTypeDescription) {
        let list = self.types.entry(desc.name.clone()).or_default();
        let versions = desc.version.versions();
        list.retain(|d| !versions.iter().any(|v| d.version.contains(*v)));
        list.push(desc);
        self.index = OnceLock::new();
    }

    /// Merges `other` into `self`: its types replace those of the same name.
    pub fn merge(&mut self, other: Catalogue) {
        for (name, descs) in other.types {
            self.generated_tools.remove(&name);
            self.types.insert(name, descs);
        }
        self.generated_tools.extend(other.generated_tools);
        self.index = OnceLock::new();
    }

    /// The description of `node_type` covering `version`; without a version, or when none
    /// covers it, the one covering the default version, else the newest.
    pub fn get(&self, node_type: &str, version: Option<f64>) -> Option<&NodeTypeDescription> {
        let list = self.types.get(node_type)?;
        if let Some(v) = version {
            if let Some(d) = list.iter().find(|d| d.version.contains(v)) {
                return Some(d);
            }
        }
        self.newest_of(list)
    }

    /// Like [`get`](Self::get) but only an exact version match.
    pub fn get_exact(&self, node_type: &str, version: f64) -> Option<&NodeTypeDescription> {
        self.types
            .get(node_type)?
            .iter()
            .find(|d| d.version.contains(version))
    }

    fn newest_of<'a>(&self, list: &'a [NodeTypeDescription]) -> Option<&'a NodeTypeDescription> {
        let default = list.iter().find_map(|d| d.default_version);
        if let Some(dv) = default {
            if let Some(d) = list.iter().find(|d| d.version.contains(dv)) {
                return Some(d);
            }
        }
        list.iter()
            .max_by(|a, b| a.version.max().total_cmp(&b.version.max()))
    }

    /// The default version of a type (`defaultVersion`, else the highest listed).
    pub fn default_version(&self, node_type: &str) -> Option<f64> {
        let list = self.types.get(node_type)?;
        list.iter()
            .find_map(|d| d.default_version)
            .or_else(|| list.iter().map(|d| d.version.max()).max_by(f64::total_cmp))
    }

    /// All versions of a type, ascending.
    pub fn versions(&self, node_type: &str) -> Vec<f64> {
        let mut out: Vec<f64> = self
            .types
            .get(node_type)
            .map(|l| l.iter().flat_map(|d| d.version.versions()).collect())
            .unwrap_or_default();
        out.sort_by(f64::total_cmp);
        out.dedup_by(|a, b| same_version(*a, *b));
        out
    }

    /// Every description of a type (one per description class).
    pub fn descriptions(&self, node_type: &str) -> &[NodeTypeDescription] {
        self.types.get(node_type).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Whether the type exists.
    pub fn contains(&self, node_type: &str) -> bool {
        self.types.contains_key(node_type)
    }

    /// The catalogue's name of the one type `node_type` misspells without ambiguity: its
    /// `@n8n/` scope left out (`n8n-nodes-langchain.lmChatCohere`, written so by a local model),
    /// another letter case, the short name alone (`httpRequest`), or the short name under the
    /// other of n8n's two packages or with a scope the package does not have
    /// (`n8n-nodes-base.chatTrigger`, `@n8n/n8n-nodes-base.googleDriveTrigger`, a local
    /// model's). `None`
    /// when `node_type` is a type as written, or could be none or several (`code` is in both
    /// packages).
    pub fn recover_type(&self, node_type: &str) -> Option<&str> {
        let t = node_type.trim();
        if t.is_empty() || self.contains(node_type) {
            return None;
        }
        let lower = t.to_ascii_lowercase();
        let scoped = format!("@n8n/{lower}");
        let n8n_package = t.rsplit_once('.').is_some_and(|(package, _)| {
            matches!(
                package.to_ascii_lowercase().as_str(),
                "n8n-nodes-base"
                    | "@n8n/n8n-nodes-base"
                    | "@n8n/n8n-nodes-langchain"
                    | "n8n-nodes-langchain"
            )
        });
        let mut hits = self.types().filter(|name| {
            let name_lower = name.to_ascii_lowercase();
            name_lower == lower
                || name_lower == scoped
                || (!t.contains('.') && short_name(name).eq_ignore_ascii_case(t))
                || (n8n_package && short_name(name).eq_ignore_ascii_case(short_name(t)))
        });
        let first = hits.next()?;
        hits.next().is_none().then_some(first)
    }

    /// Full type names, sorted.
    pub fn types(&self) -> impl Iterator<Item = &str> {
        self.types.keys().map(String::as_str)
    }

    /// Every description of every type.
    pub fn iter(&self) -> impl Iterator<Item = &NodeTypeDescription> {
        self.types.values().flatten()
    }

    /// Number of distinct type names (tool variants included).
    pub fn len(&self) -> usize {
        self.types.len()
    }

    /// Whether the catalogue is empty.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// Whether `node_type` is a `…Tool` variant generated at load time.
    pub fn is_generated_tool(&self, node_type: &str) -> bool {
        self.generated_tools.contains(node_type)
    }

    /// Number of generated `…Tool` variants.
    pub fn generated_tool_count(&self) -> usize {
        self.generated_tools.len()
    }

    /// Resolves the ports of a node of `node_type` at `version` (default version when
    /// `None`) with these parameters. `None` when the type is unknown.
    pub fn ports(
        &self,
        node_type: &str,
        version: Option<f64>,
        parameters: &Value,
    ) -> Option<Result<Ports, PortError>> {
        let desc = self.get(node_type, version)?;
        let v = version
            .filter(|v| desc.version.contains(*v))
            .or(desc.default_version.filter(|dv| desc.version.contains(*dv)))
            .unwrap_or_else(|| desc.version.max());
        Some(resolve_ports(desc, parameters, v))
    }

    /// Name search over visible (non-hidden) types, scored like n8n's builder: exact
    /// name 20, exact displayName 15, name contains 10, displayName contains 8, alias
    /// contains 8, description contains 5. Ties: shorter name first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.search_index().search(query, limit)
    }

    /// Sub-node search: types whose outputs include `connection_type` (100 when the
    /// static list or the outputs resolved for default parameters include it, 50 when only
    /// the expression text mentions it), plus the name score of `query` when non-empty.
    pub fn search_sub_nodes(
        &self,
        connection_type: &str,
        query: &str,
        limit: usize,
    ) -> Vec<SearchHit> {
        self.search_index()
            .search_sub_nodes(connection_type, query, limit)
    }

    fn search_index(&self) -> &search::SearchIndex {
        self.index.get_or_init(|| search::SearchIndex::build(self))
    }
}

fn read(path: &Path) -> Result<String, CatalogueError> {
    std::fs::read_to_string(path).map_err(|source| CatalogueError::Read {
        path: path.to_path_buf(),
        source,
    })
}
