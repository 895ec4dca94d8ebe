//! The `server` tree's key/value layout (see the module docs) and helpers to read and write it.

use super::StoredEvent;
use crate::error::ServerError;
use agentgraph_runtime::checkpoint::WalTree;
use serde_json::Value;
use std::sync::Arc;

pub(super) fn event_prefix(thread: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(thread.len() + 10);
    k.push(b'E');
    k.extend_from_slice(thread.as_bytes());
    k.push(0);
    k
}

pub(super) fn event_key(thread: &str, seq: u64) -> Vec<u8> {
    let mut k = event_prefix(thread);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

pub(super) fn pack_key(thread: &str, first: u64, last: u64) -> Vec<u8> {
    let mut k = event_key(thread, first);
    k.extend_from_slice(&last.to_be_bytes());
    k
}

/// Encodes events as a pack's value.
pub(super) fn pack_value<'a>(events: impl Iterator<Item = &'a StoredEvent>) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events {
        out.extend_from_slice(&e.seq.to_be_bytes());
        out.extend_from_slice(
            &u32::try_from(e.json.len())
                .unwrap_or(u32::MAX)
                .to_be_bytes(),
        );
        out.extend_from_slice(e.json.as_bytes());
    }
    out
}

/// What one key under a thread's event prefix holds.
pub(super) enum Stored {
    /// One event.
    One(StoredEvent),
    /// A pack covering ids `first..=last`, with the events it still holds.
    Pack {
        first: u64,
        last: u64,
        events: Vec<StoredEvent>,
    },
}

pub(super) fn be_u64(b: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(b).ok().map(u64::from_be_bytes)
}

/// Decodes an entry of a thread's event prefix (`tail` is the key after the prefix); `None`
/// for bytes that are neither form (written by something else, or damaged).
pub(super) fn decode_stored(tail: &[u8], value: &[u8]) -> Option<Stored> {
    match tail.len() {
        8 => Some(Stored::One(StoredEvent {
            seq: be_u64(tail)?,
            json: Arc::from(String::from_utf8_lossy(value).as_ref()),
        })),
        16 => {
            let (first, last) = (be_u64(&tail[..8])?, be_u64(&tail[8..])?);
            let mut events = Vec::new();
            let mut at = 0;
            while at < value.len() {
                let seq = be_u64(value.get(at..at + 8)?)?;
                let len = u32::from_be_bytes(value.get(at + 8..at + 12)?.try_into().ok()?);
                let json = value.get(at + 12..at + 12 + len as usize)?;
                events.push(StoredEvent {
                    seq,
                    json: Arc::from(String::from_utf8_lossy(json).as_ref()),
                });
                at += 12 + len as usize;
            }
            Some(Stored::Pack {
                first,
                last,
                events,
            })
        }
        _ => None,
    }
}

/// The newest stored events of `thread`, newest first, up to and including the newest `run`
/// event (or all of them): read from the end, key by key, so a start-up touches one pack or a
/// few keys per thread rather than its whole log.
pub(super) fn newest_events_until_a_run_event(
    t: &WalTree,
    thread: &str,
) -> Result<Vec<StoredEvent>, ServerError> {
    let prefix = event_prefix(thread);
    let mut out = Vec::new();
    t.scan(&prefix, &prefix_end(&prefix), true, &mut |k, v| {
        let events = match k
            .get(prefix.len()..)
            .and_then(|tail| decode_stored(tail, v))
        {
            Some(Stored::One(e)) => vec![e],
            Some(Stored::Pack { events, .. }) => events,
            None => return true,
        };
        for e in events.into_iter().rev() {
            let is_run = serde_json::from_str::<Value>(&e.json)
                .is_ok_and(|v| v.get("mode").and_then(Value::as_str) == Some("run"));
            out.push(e);
            if is_run {
                return false;
            }
        }
        true
    })
    .map_err(storage)?;
    Ok(out)
}

/// A thread's stored events, oldest first, and its packs as (first, last) ids.
pub(super) type Loaded = (Vec<StoredEvent>, Vec<(u64, u64)>);

/// The stored events of `thread`, oldest first, and its packs.
pub(super) fn load_events(t: &WalTree, thread: &str) -> Result<Loaded, ServerError> {
    let prefix = event_prefix(thread);
    let mut events = Vec::new();
    let mut packs = Vec::new();
    for (k, v) in scan_prefix(t, &prefix, false)? {
        match k
            .get(prefix.len()..)
            .and_then(|tail| decode_stored(tail, &v))
        {
            Some(Stored::One(e)) => events.push(e),
            Some(Stored::Pack {
                first,
                last,
                events: packed,
            }) => {
                packs.push((first, last));
                events.extend(packed);
            }
            None => tracing::warn!(thread, "event log: skipping an entry that does not decode"),
        }
    }
    // Keys sort by first id, and a pack holds only ids below the next key's: already in order,
    // but a damaged store must not break the ring's order.
    events.sort_by_key(|e| e.seq);
    events.dedup_by_key(|e| e.seq);
    Ok((events, packs))
}

pub(super) fn version_key(id: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(id.len() + 1);
    k.push(b'V');
    k.extend_from_slice(id);
    k
}

/// The first key after every key starting with `prefix` (`prefix` is never all 0xff here).
pub(super) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            break;
        }
    }
    end
}

pub(super) fn meta_key(tag: u8, thread: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(thread.len() + 1);
    k.push(tag);
    k.extend_from_slice(thread.as_bytes());
    k
}

pub(super) fn storage(e: impl std::fmt::Display) -> ServerError {
    ServerError::Storage(e.to_string())
}

/// Keys and values read from the tree.
pub(super) type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// The entries under `prefix`, in key order (or reverse).
pub(super) fn scan_prefix(
    t: &WalTree,
    prefix: &[u8],
    reverse: bool,
) -> Result<Entries, ServerError> {
    let mut out = Vec::new();
    t.scan(prefix, &prefix_end(prefix), reverse, &mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        true
    })
    .map_err(storage)?;
    Ok(out)
}

pub(super) fn put(t: &WalTree, key: Vec<u8>, value: &[u8]) -> Result<(), ServerError> {
    t.apply(vec![(key, value.to_vec())], Vec::new())
        .map_err(storage)
}

pub(super) fn remove(t: &WalTree, key: Vec<u8>) -> Result<(), ServerError> {
    t.apply(Vec::new(), vec![key]).map_err(storage)
}
