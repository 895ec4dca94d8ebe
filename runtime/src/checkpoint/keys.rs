//! Byte keys of the key-value layout. Every key starts with a kind byte, then the thread id and
//! namespace (both NUL-free), so one prefix scan finds a thread's records of one kind.
//!
//! ```text
//! C thread 0 ns 0 id16                      checkpoint record
//! B thread 0 ns 0 channel 0 id16            channel blob
//! W thread 0 ns 0 id16 task_id 0 idx8       pending write
//! T thread                                  thread marker
//! ```

use super::CheckpointError;
use crate::ids::CheckpointId;

pub const CHECKPOINT: u8 = b'C';
pub const BLOB: u8 = b'B';
pub const WRITE: u8 = b'W';
pub const THREAD: u8 = b'T';

pub fn check(what: &'static str, value: &str) -> Result<(), CheckpointError> {
    if value.contains('\0') {
        return Err(CheckpointError::InvalidKey {
            what,
            value: value.to_string(),
            reason: "contains a NUL character",
        });
    }
    Ok(())
}

pub fn thread_prefix(kind: u8, thread: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(thread.len() + 2);
    k.push(kind);
    k.extend_from_slice(thread.as_bytes());
    k.push(0);
    k
}

pub fn ns_prefix(kind: u8, thread: &str, ns: &str) -> Vec<u8> {
    let mut k = thread_prefix(kind, thread);
    k.extend_from_slice(ns.as_bytes());
    k.push(0);
    k
}

pub fn checkpoint(thread: &str, ns: &str, id: CheckpointId) -> Vec<u8> {
    let mut k = ns_prefix(CHECKPOINT, thread, ns);
    k.extend_from_slice(&id.to_bytes());
    k
}

pub fn blob(thread: &str, ns: &str, channel: &str, id: CheckpointId) -> Vec<u8> {
    let mut k = ns_prefix(BLOB, thread, ns);
    k.extend_from_slice(channel.as_bytes());
    k.push(0);
    k.extend_from_slice(&id.to_bytes());
    k
}

pub fn writes_prefix(thread: &str, ns: &str, id: CheckpointId) -> Vec<u8> {
    let mut k = ns_prefix(WRITE, thread, ns);
    k.extend_from_slice(&id.to_bytes());
    k
}

pub fn write(thread: &str, ns: &str, id: CheckpointId, task_id: &str, idx: i64) -> Vec<u8> {
    let mut k = writes_prefix(thread, ns, id);
    k.extend_from_slice(task_id.as_bytes());
    k.push(0);
    k.extend_from_slice(&((idx as u64) ^ (1 << 63)).to_be_bytes());
    k
}

pub fn thread_marker(thread: &str) -> Vec<u8> {
    let mut k = vec![THREAD];
    k.extend_from_slice(thread.as_bytes());
    k
}

/// The smallest key greater than every key starting with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0xff; prefix.len() + 1]
}

/// Splits the tail of a key after a thread prefix into `(ns, rest)`.
pub fn split_ns(tail: &[u8]) -> Option<(&[u8], &[u8])> {
    let pos = tail.iter().position(|&b| b == 0)?;
    Some((&tail[..pos], &tail[pos + 1..]))
}

pub fn render(key: &[u8]) -> String {
    String::from_utf8_lossy(key).replace('\0', "/")
}
