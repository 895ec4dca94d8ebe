//! Which node-type catalogue the builder uses, and the commands that store real ones.
//!
//! [`CatalogueSource::Auto`] takes the first of: `$AGENTGRAPH_N8N_CATALOGUE` (a directory laid
//! out like n8n's packages), the catalogue `agentgraph catalogue fetch` stored from npm
//! ([`fetch`]), the one `agentgraph catalogue from-n8n` stored from an instance ([`instance`]),
//! the compact one built into std-tools. An explicit directory (`--catalogue DIR`) is
//! [`CatalogueSource::Dir`]. Stored catalogues live in the data folder ([`store`]).

pub mod fetch;
pub mod instance;
mod resolve;
pub mod store;

pub use resolve::{Lookup, Resolution, Step, StepReport, StepState};

use agentgraph_std_tools::catalogue::{Catalogue, CatalogueError};
use std::path::{Path, PathBuf};
use store::{InstanceSource, NpmSource};

/// The environment variable naming a real n8n catalogue directory.
pub const CATALOGUE_ENV: &str = "AGENTGRAPH_N8N_CATALOGUE";
/// What the built-in catalogue's description suggests.
pub const FETCH_HINT: &str = "run 'agentgraph catalogue fetch' for all of n8n's nodes";

/// Why a catalogue could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueLoadError {
    /// The n8n directory is missing or malformed.
    #[error("cannot load the n8n catalogue: {0}")]
    N8n(CatalogueError),
    /// The catalogue fetched from npm is damaged.
    #[error("cannot load the n8n catalogue fetched into {dir}: {source}; run 'agentgraph catalogue fetch' again")]
    Npm {
        /// Its folder.
        dir: PathBuf,
        /// Why.
        source: CatalogueError,
    },
    /// The catalogue saved from an instance is damaged.
    #[error("cannot load the n8n catalogue saved in {file}: {source}; run 'agentgraph catalogue from-n8n URL' again")]
    Instance {
        /// Its file.
        file: PathBuf,
        /// Why.
        source: CatalogueError,
    },
    /// The built-in catalogue does not parse (a broken build).
    #[error("cannot load the built-in catalogue: {0}")]
    Builtin(CatalogueError),
}

/// Where the catalogue comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CatalogueSource {
    /// `$AGENTGRAPH_N8N_CATALOGUE`, else the fetched catalogue, else the instance's, else the
    /// built-in one ([`CatalogueSource::resolve`]).
    #[default]
    Auto,
    /// An n8n catalogue directory (holding `n8n-nodes-base/`, `n8n-nodes-langchain/`).
    Dir(PathBuf),
    /// The compact catalogue built into std-tools.
    Builtin,
}

impl CatalogueSource {
    /// `dir` when given, else [`CatalogueSource::Auto`].
    pub fn dir_or_auto(dir: Option<PathBuf>) -> Self {
        dir.map_or(CatalogueSource::Auto, CatalogueSource::Dir)
    }

    /// Which catalogue this source means now, with the environment of this process.
    pub fn resolve(&self) -> Resolution {
        self.resolve_with(&Lookup::from_env())
    }

    /// Loads the catalogue ([`CatalogueSource::resolve`], then [`Origin::load`]).
    pub fn load(&self) -> Result<LoadedCatalogue, CatalogueLoadError> {
        self.resolve().origin.load()
    }
}

/// The catalogue a source resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A directory given explicitly (`--catalogue DIR`).
    Dir(PathBuf),
    /// The directory in `$AGENTGRAPH_N8N_CATALOGUE`.
    Env(PathBuf),
    /// Fetched from npm by `agentgraph catalogue fetch`.
    Npm {
        /// Its folder.
        dir: PathBuf,
        /// Its `SOURCE.json`.
        source: NpmSource,
    },
    /// Saved from an instance by `agentgraph catalogue from-n8n`.
    Instance {
        /// Its `nodes.json`.
        file: PathBuf,
        /// Its `SOURCE.json`.
        source: InstanceSource,
    },
    /// The compact catalogue built into std-tools.
    Builtin,
}

impl Origin {
    /// `n8n` (a directory), `npm`, `instance` or `builtin`.
    pub fn kind(&self) -> &'static str {
        match self {
            Origin::Dir(_) | Origin::Env(_) => "n8n",
            Origin::Npm { .. } => "npm",
            Origin::Instance { .. } => "instance",
            Origin::Builtin => "builtin",
        }
    }

    /// The folder or file the catalogue is read from (`None`: the built-in one).
    pub fn path(&self) -> Option<&Path> {
        match self {
            Origin::Dir(p) | Origin::Env(p) => Some(p),
            Origin::Npm { dir, .. } => Some(dir),
            Origin::Instance { file, .. } => Some(file),
            Origin::Builtin => None,
        }
    }

    /// The node-type count known without loading a large catalogue (from `SOURCE.json`, or the
    /// small built-in one); `None` for a directory.
    pub fn known_types(&self) -> Option<usize> {
        match self {
            Origin::Dir(_) | Origin::Env(_) => None,
            Origin::Npm { source, .. } => Some(source.node_types),
            Origin::Instance { source, .. } => Some(source.node_types),
            Origin::Builtin => Catalogue::builtin().ok().map(|c| c.len()),
        }
    }

    /// One line for people (`types`: the node-type count, when known), e.g. `npm
    /// n8n-nodes-base 2.41.2 + @n8n/n8n-nodes-langchain 2.41.1 (812 node types)`;
    /// the built-in catalogue's line says how to get the real one.
    pub fn describe(&self, types: Option<usize>) -> String {
        let count = |prefix: &str| match types {
            Some(n) => format!("{prefix}{n} node types"),
            None => String::new(),
        };
        match self {
            Origin::Dir(p) => format!(
                "n8n node types from {} (--catalogue{})",
                p.display(),
                count(", ")
            ),
            Origin::Env(p) => format!(
                "n8n node types from {} (${CATALOGUE_ENV}{})",
                p.display(),
                count(", ")
            ),
            Origin::Npm { source, .. } => match &source.n8n_version {
                Some(n8n) => format!("npm {} (n8n {n8n}{})", source.packages_line(), count(", ")),
                None => format!("npm {} ({})", source.packages_line(), count("")),
            },
            Origin::Instance { source, .. } => format!(
                "n8n instance {}, saved {} ({})",
                source.url,
                source.fetched_at,
                count("")
            ),
            Origin::Builtin => format!("built-in compact catalogue ({}; {FETCH_HINT})", count("")),
        }
    }

    /// Loads the catalogue.
    pub fn load(&self) -> Result<LoadedCatalogue, CatalogueLoadError> {
        let catalogue = match self {
            Origin::Dir(dir) | Origin::Env(dir) => {
                Catalogue::load_n8n_dir(dir).map_err(CatalogueLoadError::N8n)?
            }
            Origin::Npm { dir, .. } => {
                Catalogue::load_n8n_dir(dir).map_err(|source| CatalogueLoadError::Npm {
                    dir: dir.clone(),
                    source,
                })?
            }
            Origin::Instance { file, .. } => {
                Catalogue::load_node_types_export(file).map_err(|source| {
                    CatalogueLoadError::Instance {
                        file: file.clone(),
                        source,
                    }
                })?
            }
            Origin::Builtin => Catalogue::builtin().map_err(CatalogueLoadError::Builtin)?,
        };
        Ok(LoadedCatalogue {
            catalogue,
            origin: self.clone(),
        })
    }
}

/// A loaded catalogue and where it came from.
pub struct LoadedCatalogue {
    /// The node types.
    pub catalogue: Catalogue,
    /// Where they came from.
    pub origin: Origin,
}

impl LoadedCatalogue {
    /// `n8n`, `npm`, `instance` or `builtin` ([`Origin::kind`]).
    pub fn kind(&self) -> &'static str {
        self.origin.kind()
    }

    /// One line for people, with the node-type count ([`Origin::describe`]).
    pub fn describe(&self) -> String {
        self.origin.describe(Some(self.catalogue.len()))
    }
}
