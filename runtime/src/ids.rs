//! Identifiers: time-sortable checkpoint ids, deterministic task and interrupt ids.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// FNV-1a 64 of `bytes` (also the benchmark checksum).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A 32-hex-digit deterministic id from the parts (used for task and interrupt ids).
pub fn stable_id(parts: &[&str]) -> String {
    // Two FNV-1a passes over the parts with separators (the second with a different seed
    // byte), hashed in place without joining the parts.
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x84222325_cbf29ce4;
    for (i, p) in parts.iter().enumerate() {
        for &byte in p.as_bytes().iter().chain(if i + 1 < parts.len() {
            &[0x1f_u8][..]
        } else {
            &[][..]
        }) {
            a = (a ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
            b = (b ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    b = (b ^ 0x1e).wrapping_mul(0x0100_0000_01b3);
    format!("{a:016x}{b:016x}")
}

/// A checkpoint id: microseconds since the epoch in the high 64 bits, a per-process random
/// prefix and counter in the low 64. Ids sort by creation time and never repeat in a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CheckpointId(pub u128);

static LAST: Mutex<u128> = Mutex::new(0);
static COUNTER: AtomicU64 = AtomicU64::new(0);

fn process_salt() -> u64 {
    static SALT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SALT.get_or_init(|| u64::from(rand::random::<u32>()) << 32)
}

impl CheckpointId {
    /// A new id, greater than every id this process made before.
    pub fn new() -> Self {
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        let low = process_salt() | (COUNTER.fetch_add(1, Ordering::Relaxed) & 0xffff_ffff);
        let candidate = (u128::from(micros) << 64) | u128::from(low);
        let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        let id = if candidate > *last {
            candidate
        } else {
            *last + 1
        };
        *last = id;
        CheckpointId(id)
    }

    /// A new id that also sorts after `parent`, even if the clock stepped back since `parent`
    /// was made (for example in another process before a crash).
    pub fn after(parent: Option<CheckpointId>) -> Self {
        let id = Self::new();
        match parent {
            Some(p) if p >= id => CheckpointId(p.0 + 1),
            _ => id,
        }
    }

    /// Microseconds since the epoch at creation.
    pub fn timestamp_micros(&self) -> u64 {
        (self.0 >> 64) as u64
    }

    /// The 16 big-endian bytes (sortable as bytes).
    pub fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// Reads 16 big-endian bytes.
    pub fn from_bytes(b: [u8; 16]) -> Self {
        CheckpointId(u128::from_be_bytes(b))
    }
}

impl Default for CheckpointId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for CheckpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// A string that is not a 32-hex-digit checkpoint id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a checkpoint id (32 hex digits)")]
pub struct BadCheckpointId(pub String);

impl FromStr for CheckpointId {
    type Err = BadCheckpointId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() != 32 {
            return Err(BadCheckpointId(s.to_string()));
        }
        u128::from_str_radix(s, 16)
            .map(CheckpointId)
            .map_err(|_| BadCheckpointId(s.to_string()))
    }
}

impl From<CheckpointId> for String {
    fn from(id: CheckpointId) -> String {
        id.to_string()
    }
}

impl TryFrom<String> for CheckpointId {
    type Error = BadCheckpointId;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// What a thread id may be, for the CLI and the HTTP server alike: 1 to 128 characters among
/// ASCII letters, digits, `_`, `.`, `:` and `-` (safe in URLs, file names and logs). The
/// checkpointers themselves accept any string; this is the rule for ids users type.
///
/// ```
/// use agentgraph_runtime::is_valid_thread_id;
/// assert!(is_valid_thread_id("support-42:retry.1"));
/// assert!(!is_valid_thread_id(""));
/// assert!(!is_valid_thread_id("a b/é"));
/// ```
pub fn is_valid_thread_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// Why an id fails [`is_valid_thread_id`], in words.
pub const THREAD_ID_RULE: &str =
    "thread ids are 1 to 128 characters among letters, digits, `_`, `.`, `:` and `-`";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_ids_increase_and_round_trip() {
        let a = CheckpointId::new();
        let b = CheckpointId::new();
        assert!(b > a);
        assert_eq!(a.to_string().parse::<CheckpointId>().unwrap(), a);
        assert!(a.to_string() < b.to_string());
        assert_eq!(CheckpointId::from_bytes(a.to_bytes()), a);
    }

    #[test]
    fn fnv_matches_the_reference() {
        assert_eq!(
            format!("{:016x}", fnv1a64(b"chain;count=3;trace=n0,n1,n2")),
            "00746dd9577f1eb2"
        );
    }
}
