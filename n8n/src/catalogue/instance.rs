//! `agentgraph catalogue from-n8n URL`: the node types of a running n8n (community nodes
//! included), read with a logged-in session and stored in [`Store::instance_dir`].

use super::store::{now_rfc3339, InstanceSource, Store, StoreError, SOURCE_FILE};
use crate::client::{normalize_base, ClientError, Session};
use agentgraph_std_tools::catalogue::{Catalogue, CatalogueError};
use serde_json::Value;

/// Why the instance's node types could not be saved; the stored ones are then left as they
/// were.
#[derive(Debug, thiserror::Error)]
pub enum FromN8nError {
    /// The login or the read failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// n8n's answer does not load as a catalogue.
    #[error("the node types of {url} do not load: {source}")]
    Catalogue {
        /// The instance.
        url: String,
        /// Why.
        source: CatalogueError,
    },
    /// n8n listed no node type.
    #[error("{url} lists no node types")]
    Empty {
        /// The instance.
        url: String,
    },
    /// The data folder could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Logs in to the n8n at `url` as `email` and stores its node types in `store`.
pub async fn save_from_n8n(
    store: &Store,
    url: &str,
    email: &str,
    password: &str,
) -> Result<InstanceSource, FromN8nError> {
    let session = Session::login(url, email, password).await?;
    let types = session.node_types().await?;
    save_node_types(store, url, &types)
}

/// Stores `types` (a `/types/nodes.json` array) as the catalogue of the instance at `url`.
pub fn save_node_types(
    store: &Store,
    url: &str,
    types: &Value,
) -> Result<InstanceSource, FromN8nError> {
    let url = normalize_base(url)?;
    let staging = store.stage("instance")?;
    let file = staging.path().join("nodes.json");
    let text = serde_json::to_vec(types).map_err(|e| StoreError::Io {
        action: "cannot serialize",
        path: file.clone(),
        source: std::io::Error::other(e),
    })?;
    std::fs::write(&file, text).map_err(|source| StoreError::Io {
        action: "cannot write",
        path: file.clone(),
        source,
    })?;
    let catalogue =
        Catalogue::load_node_types_export(&file).map_err(|source| FromN8nError::Catalogue {
            url: url.clone(),
            source,
        })?;
    if catalogue.is_empty() {
        return Err(FromN8nError::Empty { url });
    }
    let source = InstanceSource {
        url,
        node_types: catalogue.len(),
        fetched_at: now_rfc3339(),
    };
    staging.write_json(SOURCE_FILE, &source)?;
    staging.commit()?;
    Ok(source)
}
