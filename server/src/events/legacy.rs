//! Moving older layouts in: an older server's trees, and its [`LEGACY_FOLDER`] of events.

use super::keys::storage;
use crate::error::ServerError;
use agentgraph_runtime::checkpoint::WalTree;

/// Copies every entry of `from` into `to`, in batches; returns how many.
pub(super) fn copy_all(from: &WalTree, to: &WalTree) -> Result<usize, ServerError> {
    let mut batch = Vec::new();
    let mut moved = 0;
    let mut failed = None;
    from.scan(&[], &[0xff], false, &mut |k, v| {
        batch.push((k.to_vec(), v.to_vec()));
        if batch.len() >= 4096 {
            moved += batch.len();
            if let Err(e) = to.apply(std::mem::take(&mut batch), Vec::new()) {
                failed = Some(e);
                return false;
            }
        }
        true
    })
    .map_err(storage)?;
    if let Some(e) = failed {
        return Err(storage(e));
    }
    moved += batch.len();
    to.apply(batch, Vec::new()).map_err(storage)?;
    Ok(moved)
}

/// Moves the trees of an older server's layout (`events`, `threads`, `graph_versions`) into
/// the `server` tree, then drops them.
pub(super) fn migrate(db: &sled::Db, t: &WalTree) -> Result<(), ServerError> {
    let old: [(&[u8], &[u8]); 3] = [
        (b"events", b"E"),
        (b"threads", b""),
        (b"graph_versions", b"V"),
    ];
    let names = db.tree_names();
    let mut moved = 0usize;
    for (name, tag) in old {
        if !names.iter().any(|n| n.as_ref() == name) {
            continue;
        }
        let tree = db.open_tree(name).map_err(storage)?;
        let mut puts = Vec::new();
        for kv in tree.iter() {
            let (k, v) = kv.map_err(storage)?;
            let mut key = tag.to_vec();
            key.extend_from_slice(&k);
            puts.push((key, v.to_vec()));
            if puts.len() >= 4096 {
                moved += puts.len();
                t.apply(std::mem::take(&mut puts), Vec::new())
                    .map_err(storage)?;
            }
        }
        moved += puts.len();
        t.apply(puts, Vec::new()).map_err(storage)?;
    }
    if moved > 0 {
        t.drain().map_err(storage)?;
        tracing::info!(
            entries = moved,
            "event log: moved an older layout into the `server` tree"
        );
    }
    for (name, _) in old {
        if names.iter().any(|n| n.as_ref() == name) {
            db.drop_tree(name).map_err(storage)?;
        }
    }
    Ok(())
}

/// The folder beside the checkpoints where servers before
/// [`EventStore::beside`](super::EventStore::beside) kept their event database; moved into the
/// checkpoints' database when found.
pub const LEGACY_FOLDER: &str = "server-events";
