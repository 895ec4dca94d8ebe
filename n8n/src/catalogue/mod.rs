//! Which node-type catalogue the builder uses: a directory laid out like n8n's packages
//! (`--catalogue DIR` or `$AGENTGRAPH_N8N_CATALOGUE`), else the compact one built into
//! std-tools.

use agentgraph_std_tools::catalogue::Catalogue;
use std::path::PathBuf;

/// The environment variable naming a real n8n catalogue directory.
pub const CATALOGUE_ENV: &str = "AGENTGRAPH_N8N_CATALOGUE";

/// Why a catalogue could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueLoadError {
    /// The n8n directory is missing or malformed.
    #[error("cannot load the n8n catalogue: {0}")]
    N8n(agentgraph_std_tools::catalogue::CatalogueError),
    /// The built-in catalogue does not parse (a broken build).
    #[error("cannot load the built-in catalogue: {0}")]
    Builtin(agentgraph_std_tools::catalogue::CatalogueError),
}

/// Where the catalogue comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CatalogueSource {
    /// `$AGENTGRAPH_N8N_CATALOGUE` when set and not empty, else the built-in catalogue.
    #[default]
    FromEnv,
    /// An n8n catalogue directory (holding `n8n-nodes-base/`, `n8n-nodes-langchain/`).
    Dir(PathBuf),
    /// The compact catalogue built into std-tools.
    Builtin,
}

impl CatalogueSource {
    /// `dir` when given, else [`CatalogueSource::FromEnv`].
    pub fn dir_or_env(dir: Option<PathBuf>) -> Self {
        dir.map_or(CatalogueSource::FromEnv, CatalogueSource::Dir)
    }

    /// The directory this source names, if any (reads the environment for `FromEnv`).
    pub fn dir(&self) -> Option<PathBuf> {
        match self {
            CatalogueSource::Dir(d) => Some(d.clone()),
            CatalogueSource::Builtin => None,
            CatalogueSource::FromEnv => std::env::var_os(CATALOGUE_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        }
    }

    /// Loads the catalogue.
    pub fn load(&self) -> Result<LoadedCatalogue, CatalogueLoadError> {
        match self.dir() {
            Some(dir) => {
                let catalogue = Catalogue::load_n8n_dir(&dir).map_err(CatalogueLoadError::N8n)?;
                Ok(LoadedCatalogue {
                    catalogue,
                    dir: Some(dir),
                })
            }
            None => Ok(LoadedCatalogue {
                catalogue: Catalogue::builtin().map_err(CatalogueLoadError::Builtin)?,
                dir: None,
            }),
        }
    }
}

/// A loaded catalogue and the directory it came from (`None`: the built-in one).
pub struct LoadedCatalogue {
    /// The node types.
    pub catalogue: Catalogue,
    /// The n8n directory, or `None` for the built-in catalogue.
    pub dir: Option<PathBuf>,
}

impl LoadedCatalogue {
    /// `"n8n"` or `"builtin"`.
    pub fn kind(&self) -> &'static str {
        if self.dir.is_some() {
            "n8n"
        } else {
            "builtin"
        }
    }
}
