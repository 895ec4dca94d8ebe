//! The byte layout of one logged batch.
//!
//! ```text
//! len u32 LE | crc32 u32 LE | payload (len bytes)
//! payload = seq u64 | tlen u32 | tree | n_deletes u32 | (klen u32, key)* | n_puts u32 | (klen u32, key, vlen u32, value)*
//! ```
//!
//! `tree` names the sled tree the batch belongs to (one log serves every tree of a database).
//! Logs written before that (`wal-NAME` folders, one tree each) have no `tlen | tree`: they are
//! read as [`Format::OneTree`].
//!
//! The checksum covers the payload, so a record cut short by a crash (a torn tail) or damaged on
//! disk is told apart from a whole one.

/// Bytes before the payload: its length and its checksum.
const HEADER: usize = 8;

/// How records name their tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Format {
    /// Each record names its tree (the current layout).
    Named,
    /// Records of an older log for one tree: no name, [`Record::tree`] is empty.
    OneTree,
}

/// One decoded batch.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Record {
    /// Its place in the log, rising by one per batch.
    pub seq: u64,
    /// The tree it belongs to (empty in a [`Format::OneTree`] log).
    pub tree: Vec<u8>,
    /// Keys removed (applied first).
    pub deletes: Vec<Vec<u8>>,
    /// Keys set (applied after the deletes).
    pub puts: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Appends batch `seq` to `out`, framed.
pub(super) fn append(
    out: &mut Vec<u8>,
    seq: u64,
    tree: &[u8],
    puts: &[(Vec<u8>, Vec<u8>)],
    deletes: &[Vec<u8>],
) {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER]);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&len32(tree.len()));
    out.extend_from_slice(tree);
    out.extend_from_slice(&len32(deletes.len()));
    for k in deletes {
        out.extend_from_slice(&len32(k.len()));
        out.extend_from_slice(k);
    }
    out.extend_from_slice(&len32(puts.len()));
    for (k, v) in puts {
        out.extend_from_slice(&len32(k.len()));
        out.extend_from_slice(k);
        out.extend_from_slice(&len32(v.len()));
        out.extend_from_slice(v);
    }
    let payload = &out[start + HEADER..];
    let len = len32(payload.len());
    let crc = crc32fast::hash(payload).to_le_bytes();
    out[start..start + 4].copy_from_slice(&len);
    out[start + 4..start + HEADER].copy_from_slice(&crc);
}

/// Lengths are stored as u32; a key or value of 4 GiB or more cannot come through a checkpoint
/// (serde_json and the stores refuse far smaller ones), so saturating is only a guard.
fn len32(n: usize) -> [u8; 4] {
    u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes()
}

/// What [`read`] found at an offset.
#[derive(Debug, PartialEq)]
pub(super) enum Read {
    /// A whole record and the offset of the next one.
    Record(Record, usize),
    /// The end of the buffer, exactly.
    End,
    /// Bytes that are not a whole record: a torn tail, or damage.
    Torn,
    /// A zero header: the preallocated, never written end of a segment.
    Zeros,
}

/// Decodes the record at `at` in `buf`.
pub(super) fn read(buf: &[u8], at: usize, format: Format) -> Read {
    if at == buf.len() {
        return Read::End;
    }
    let Some(header) = buf.get(at..at + HEADER) else {
        return Read::Torn;
    };
    let len = u32_at(header, 0) as usize;
    let crc = u32_at(header, 4);
    if len == 0 && crc == 0 {
        return Read::Zeros;
    }
    let Some(payload) = buf.get(at + HEADER..at + HEADER + len) else {
        return Read::Torn;
    };
    if crc32fast::hash(payload) != crc {
        return Read::Torn;
    }
    match decode(payload, format) {
        Some(record) => Read::Record(record, at + HEADER + len),
        None => Read::Torn,
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

/// A cursor over a payload; every read is bounds-checked.
struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let out = self.buf.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(out)
    }

    fn u32(&mut self) -> Option<usize> {
        self.take(4).map(|b| u32_at(b, 0) as usize)
    }

    fn bytes(&mut self) -> Option<Vec<u8>> {
        let n = self.u32()?;
        self.take(n).map(<[u8]>::to_vec)
    }
}

fn decode(payload: &[u8], format: Format) -> Option<Record> {
    let mut c = Cursor {
        buf: payload,
        at: 0,
    };
    let mut seq = [0; 8];
    seq.copy_from_slice(c.take(8)?);
    let mut record = Record {
        seq: u64::from_le_bytes(seq),
        ..Record::default()
    };
    if format == Format::Named {
        record.tree = c.bytes()?;
    }
    for _ in 0..c.u32()? {
        record.deletes.push(c.bytes()?);
    }
    for _ in 0..c.u32()? {
        let k = c.bytes()?;
        record.puts.push((k, c.bytes()?));
    }
    (c.at == payload.len()).then_some(record)
}

/// A framed record of one put as logs written before records named their tree laid it out
/// (seq, deletes, puts), written byte by byte here rather than by [`append`].
#[cfg(test)]
pub(super) fn one_tree_record(seq: u64, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut payload = Vec::new();
    payload.extend_from_slice(&seq.to_le_bytes());
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.extend_from_slice(&1u32.to_le_bytes());
    payload.extend_from_slice(&len32(key.len()));
    payload.extend_from_slice(key);
    payload.extend_from_slice(&len32(value.len()));
    payload.extend_from_slice(value);
    let mut buf = Vec::new();
    buf.extend_from_slice(&len32(payload.len()));
    buf.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    buf.extend_from_slice(&payload);
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> Vec<u8> {
        let mut buf = Vec::new();
        append(
            &mut buf,
            7,
            b"t",
            &[(b"k1".to_vec(), b"v1".to_vec())],
            &[b"gone".to_vec()],
        );
        append(&mut buf, 8, b"other", &[(b"k2".to_vec(), Vec::new())], &[]);
        buf
    }

    #[test]
    fn records_read_back_in_order() {
        let buf = two();
        let Read::Record(first, next) = read(&buf, 0, Format::Named) else {
            panic!("first record")
        };
        assert_eq!(first.seq, 7);
        assert_eq!(first.tree, b"t".to_vec());
        assert_eq!(first.deletes, vec![b"gone".to_vec()]);
        assert_eq!(first.puts, vec![(b"k1".to_vec(), b"v1".to_vec())]);
        let Read::Record(second, end) = read(&buf, next, Format::Named) else {
            panic!("second record")
        };
        assert_eq!(second.seq, 8);
        assert_eq!(second.tree, b"other".to_vec());
        assert_eq!(second.puts, vec![(b"k2".to_vec(), Vec::new())]);
        assert_eq!(read(&buf, end, Format::Named), Read::End);
    }

    #[test]
    fn every_cut_of_the_last_record_is_torn() {
        let buf = two();
        let Read::Record(_, second) = read(&buf, 0, Format::Named) else {
            panic!("first record")
        };
        for cut in second + 1..buf.len() {
            assert_eq!(
                read(&buf[..cut], second, Format::Named),
                Read::Torn,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_flipped_byte_is_torn() {
        let buf = two();
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x40;
            let first = read(&bad, 0, Format::Named);
            let whole = match first {
                Read::Record(r, next) => {
                    r.seq == 7 && read(&bad, next, Format::Named) != Read::Torn
                }
                _ => false,
            };
            assert!(!whole, "a flip at byte {i} went unnoticed");
        }
    }

    #[test]
    fn a_one_tree_log_reads_without_tree_names() {
        let buf = one_tree_record(5, b"k", b"v");
        let Read::Record(r, end) = read(&buf, 0, Format::OneTree) else {
            panic!("the old record")
        };
        assert_eq!((r.seq, r.tree.len(), end), (5, 0, buf.len()));
        assert_eq!(r.puts, vec![(b"k".to_vec(), b"v".to_vec())]);
    }
}
