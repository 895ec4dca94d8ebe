//! How records and blobs are laid out as bytes: checkpoint records and pending writes as JSON,
//! channel blobs in a compact tagged layout.

use crate::checkpoint::keys;
use crate::checkpoint::{special, ChannelEntry, CheckpointError};
use crate::ids::CheckpointId;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A record as JSON.
pub(super) fn encode<T: serde::Serialize>(v: &T) -> Result<Vec<u8>, CheckpointError> {
    serde_json::to_vec(v).map_err(|e| CheckpointError::Backend(format!("encode: {e}")))
}

/// A JSON record read back; a bad one is [`CheckpointError::Corrupt`] naming `key`.
pub(super) fn decode<T: DeserializeOwned>(key: &[u8], bytes: &[u8]) -> Result<T, CheckpointError> {
    serde_json::from_slice(bytes).map_err(|e| CheckpointError::Corrupt {
        key: keys::render(key),
        reason: e.to_string(),
    })
}

// Channel blobs are the bulk of the store and are read back in long chains on resume, so they
// get a compact layout instead of self-describing JSON: one tag byte, then
//   Set:   the value as JSON
//   Delta: a flag byte (1 = has prev), 16 bytes of prev id if present, the writes as a JSON list
//   Clear: nothing
const TAG_SET: u8 = 1;
const TAG_DELTA: u8 = 2;
const TAG_CLEAR: u8 = 3;

/// A channel blob in the compact layout above.
pub(super) fn encode_entry(e: &ChannelEntry) -> Result<Vec<u8>, CheckpointError> {
    let mut out = Vec::new();
    match e {
        ChannelEntry::Set(v) => {
            out.push(TAG_SET);
            write_json(&mut out, v)?;
        }
        ChannelEntry::Delta { prev, writes } => {
            out.push(TAG_DELTA);
            match prev {
                Some(p) => {
                    out.push(1);
                    out.extend_from_slice(&p.to_bytes());
                }
                None => out.push(0),
            }
            write_json(&mut out, writes)?;
        }
        ChannelEntry::Clear => out.push(TAG_CLEAR),
    }
    Ok(out)
}

/// A channel blob read back from the compact layout.
pub(super) fn decode_entry(key: &[u8], bytes: &[u8]) -> Result<ChannelEntry, CheckpointError> {
    let corrupt = |reason: &str| CheckpointError::Corrupt {
        key: keys::render(key),
        reason: reason.to_string(),
    };
    let (&tag, rest) = bytes.split_first().ok_or_else(|| corrupt("empty blob"))?;
    match tag {
        TAG_SET => Ok(ChannelEntry::Set(decode(key, rest)?)),
        TAG_DELTA => {
            let (&flag, rest) = rest
                .split_first()
                .ok_or_else(|| corrupt("truncated delta"))?;
            let (prev, rest) = if flag == 1 {
                let id: [u8; 16] = rest
                    .get(..16)
                    .and_then(|b| b.try_into().ok())
                    .ok_or_else(|| corrupt("truncated prev id"))?;
                (Some(CheckpointId::from_bytes(id)), &rest[16..])
            } else {
                (None, rest)
            };
            Ok(ChannelEntry::Delta {
                prev,
                writes: decode(key, rest)?,
            })
        }
        TAG_CLEAR => Ok(ChannelEntry::Clear),
        other => Err(corrupt(&format!("unknown blob tag {other}"))),
    }
}

fn write_json<T: serde::Serialize>(out: &mut Vec<u8>, v: &T) -> Result<(), CheckpointError> {
    serde_json::to_writer(out, v).map_err(|e| CheckpointError::Backend(format!("encode: {e}")))
}

/// The fixed index of a special write channel (error, interrupt, …); `None` for others.
pub(super) fn special_index(channel: &str) -> Option<i64> {
    [
        special::ERROR,
        special::INTERRUPT,
        special::RESUME,
        special::DONE,
        special::SEQ,
    ]
    .into_iter()
    .find(|(name, _)| *name == channel)
    .map(|(_, idx)| idx)
}

/// A pending write as stored (the task id and index are in the key).
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct StoredWrite {
    pub(super) channel: String,
    pub(super) value: Value,
}
