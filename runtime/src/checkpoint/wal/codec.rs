//! How the log's values are stored in sled: as they are, or compressed value by value.
//!
//! sled 0.34 compresses every log message it writes (each key's insert, each page rewrite)
//! with a zstd context it builds and drops per message; on a loaded durable server that was
//! most of the merge's CPU and a fifth of all the CPU storage costs (see `docs/benchmarks.md`).
//! Building a zstd context costs more than it looks under virtualization: zstd asks the CPU
//! for its features (two `cpuid`s) each time, and in a virtual machine every `cpuid` traps to
//! the hypervisor (4–5 µs each measured on the 2-core machines here, where
//! `ZSTD_createCCtx_advanced` was the top symbol of a loaded server's profile).
//!
//! A database created with value compression (`SledCompression::Values`) leaves sled's
//! compression off and compresses *values* instead, on the merger's thread: a value worth it is
//! stored behind a one-byte tag as an lz4 block (up to [`LZ4_BELOW`] bytes) or a zstd frame (one
//! context per merge), any other value behind the tag for "as is". Small values gain little
//! alone, so such a store takes more disk than one with sled's pages compressed.
//!
//! Which form a database uses is decided once, when it is created, and kept in the key
//! [`MARKER`] of sled's default tree: `tagged-2` (lz4 and zstd), `tagged-zstd-1` (made by an
//! earlier version: zstd only, and kept so, since that version knows no other tag). A database
//! without the marker (sled's page compression, none, or an older version) stores values as
//! they are.

use super::WalError;
use std::borrow::Cow;

/// The key of sled's default tree saying values are tagged (see the module docs).
pub(super) const MARKER: &[u8] = b"agentgraph.wal.value-codec";
/// The marker of a database whose values are tagged, small ones compressed with lz4 and large
/// ones with zstd (what a new database gets).
const MARKER_VALUE: &[u8] = b"tagged-2";
/// The marker of a database created by an earlier version: every compressed value is zstd, and
/// it stays so (an earlier version reading it back knows no other tag).
const MARKER_ZSTD_ONLY: &[u8] = b"tagged-zstd-1";

/// The tag of a value stored as it is.
const TAG_PLAIN: u8 = 0;
/// The tag of a compressed value: the value's length (u32, little endian), then a zstd frame.
const TAG_ZSTD: u8 = 1;
/// The tag of a compressed value: the value's length (u32, little endian), then an lz4 block.
const TAG_LZ4: u8 = 2;

/// Values shorter than this are not worth a compression attempt (keys' markers, ids, small
/// records): a compressed form has a dozen bytes of overhead.
const MIN_COMPRESS: usize = 128;

/// Values from [`MIN_COMPRESS`] up to this size go to lz4, larger ones to zstd. Measured on the
/// values of the server's load test (checkpoints and channel blobs of a few hundred bytes):
/// zstd took 4.7 µs per value for 62 % of the bytes, lz4 0.5 µs for 73 %; zstd's entropy
/// tables only pay off on larger values (the server's event packs, several KB each).
const LZ4_BELOW: usize = 1024;

/// An lz4 block expands at most this much (a run of one byte), so a stated length beyond it is
/// damage, not a value to allocate for.
const LZ4_MAX_RATIO: usize = 255;

/// The zstd level: the fastest, as sled's setting was.
const LEVEL: i32 = 1;

/// How the values of one database are stored in sled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Codec {
    /// As they are (a database without the marker).
    Plain,
    /// Behind a tag, compressed with zstd when worth it (a database an earlier version made).
    TaggedZstd,
    /// Behind a tag, compressed when worth it: lz4 for small values, zstd for large ones.
    Tagged,
}

impl Codec {
    /// The codec of `db`: tagged when the marker says so; for a database created just now
    /// (`fresh`) and `compress`, tagged from now on (the marker is written and flushed before
    /// any value is); otherwise plain.
    pub(super) fn open(db: &sled::Db, fresh: bool, compress: bool) -> Result<Codec, WalError> {
        match db.get(MARKER)? {
            Some(v) if v.as_ref() == MARKER_VALUE => Ok(Codec::Tagged),
            Some(v) if v.as_ref() == MARKER_ZSTD_ONLY => Ok(Codec::TaggedZstd),
            Some(v) => Err(WalError::Value(format!(
                "the database's value format is `{}`, which this version does not read",
                String::from_utf8_lossy(&v)
            ))),
            None if fresh && compress => {
                db.insert(MARKER, MARKER_VALUE)?;
                db.flush()?;
                Ok(Codec::Tagged)
            }
            None => Ok(Codec::Plain),
        }
    }

    /// An encoder for one merge (it keeps one zstd context for all the values it encodes).
    pub(super) fn encoder(self) -> Encoder {
        Encoder {
            codec: self,
            zstd: None,
        }
    }

    /// The value `stored` in sled, decoded (without a copy unless it was compressed).
    pub(super) fn decode(self, stored: sled::IVec) -> Result<Decoded, WalError> {
        if self == Codec::Plain {
            return Ok(Decoded::Stored(stored, 0));
        }
        match stored.first() {
            Some(&TAG_PLAIN) => Ok(Decoded::Stored(stored, 1)),
            Some(&tag @ (TAG_ZSTD | TAG_LZ4)) => {
                let (len, frame) = stored[1..]
                    .split_first_chunk::<4>()
                    .ok_or_else(|| damaged("a compressed value without its length"))?;
                let len = u32::from_le_bytes(*len) as usize;
                if tag == TAG_LZ4 {
                    if len > frame.len().saturating_mul(LZ4_MAX_RATIO) {
                        return Err(damaged("an lz4 value longer than its block can hold"));
                    }
                    let out = lz4_flex::block::decompress(frame, len)
                        .map_err(|e| damaged(&e.to_string()))?;
                    if out.len() != len {
                        return Err(damaged("a compressed value of another length"));
                    }
                    return Ok(Decoded::Owned(out));
                }
                // One decompression context per thread: building one per value showed in the
                // profile of a loaded server.
                thread_local! {
                    static DCTX: std::cell::RefCell<zstd::block::Decompressor> =
                        std::cell::RefCell::new(zstd::block::Decompressor::new());
                }
                let out = DCTX
                    .with(|d| d.borrow_mut().decompress(frame, len))
                    .map_err(|e| damaged(&e.to_string()))?;
                if out.len() != len {
                    return Err(damaged("a compressed value of another length"));
                }
                Ok(Decoded::Owned(out))
            }
            Some(tag) => Err(damaged(&format!("unknown tag {tag}"))),
            None => Err(damaged("an empty value")),
        }
    }
}

/// A value read from sled, decoded.
pub(super) enum Decoded {
    /// Stored as it is, from this offset on.
    Stored(sled::IVec, usize),
    /// Decompressed.
    Owned(Vec<u8>),
}

impl Decoded {
    pub(super) fn into_vec(self) -> Vec<u8> {
        match self {
            Decoded::Stored(v, at) => v[at..].to_vec(),
            Decoded::Owned(v) => v,
        }
    }
}

impl AsRef<[u8]> for Decoded {
    fn as_ref(&self) -> &[u8] {
        match self {
            Decoded::Stored(v, at) => &v[*at..],
            Decoded::Owned(v) => v,
        }
    }
}

fn damaged(what: &str) -> WalError {
    WalError::Value(what.to_string())
}

/// Encodes the values of one merge.
pub(super) struct Encoder {
    codec: Codec,
    zstd: Option<zstd::block::Compressor>,
}

impl Encoder {
    /// `value` as sled stores it (itself, without a copy, in a plain database).
    pub(super) fn encode<'v>(&mut self, value: &'v [u8]) -> Cow<'v, [u8]> {
        if self.codec == Codec::Plain {
            return Cow::Borrowed(value);
        }
        if value.len() >= MIN_COMPRESS && u32::try_from(value.len()).is_ok() {
            let (tag, frame) = if self.codec == Codec::Tagged && value.len() < LZ4_BELOW {
                (TAG_LZ4, Some(lz4_flex::block::compress(value)))
            } else {
                let zstd = self.zstd.get_or_insert_with(zstd::block::Compressor::new);
                (TAG_ZSTD, zstd.compress(value, LEVEL).ok())
            };
            if let Some(frame) = frame.filter(|f| f.len() + 5 < value.len()) {
                let mut out = Vec::with_capacity(frame.len() + 5);
                out.push(tag);
                out.extend_from_slice(&(value.len() as u32).to_le_bytes());
                out.extend_from_slice(&frame);
                return Cow::Owned(out);
            }
        }
        let mut out = Vec::with_capacity(value.len() + 1);
        out.push(TAG_PLAIN);
        out.extend_from_slice(value);
        Cow::Owned(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_in_both_forms() {
        let mut enc = Codec::Tagged.encoder();
        let small = b"thread marker".to_vec();
        let large = "{\"messages\":[\"hello\"]}".repeat(40).into_bytes();
        let noise: Vec<u8> = (0..400u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for v in [Vec::new(), small, large.clone(), noise] {
            let stored = enc.encode(&v);
            let back = Codec::Tagged
                .decode(stored.as_ref().into())
                .expect("decode");
            assert_eq!(back.into_vec(), v);
        }
        let stored = enc.encode(&large);
        assert_eq!(
            stored[0], TAG_LZ4,
            "a repetitive value of 880 bytes goes to lz4"
        );
        assert!(stored.len() < large.len() / 4, "{} bytes", stored.len());
        let larger = large.repeat(2);
        let stored = enc.encode(&larger);
        assert_eq!(stored[0], TAG_ZSTD, "one of 1 760 bytes goes to zstd");
        assert!(stored.len() < larger.len() / 8, "{} bytes", stored.len());
        assert_eq!(Codec::Plain.encoder().encode(&large).as_ref(), &large[..]);
    }

    #[test]
    fn a_database_of_the_earlier_form_keeps_compressing_with_zstd_only() {
        let large = "{\"messages\":[\"hello\"]}".repeat(40).into_bytes();
        let stored = Codec::TaggedZstd.encoder().encode(&large);
        assert_eq!(stored[0], TAG_ZSTD);
        // Either form reads every tag.
        for codec in [Codec::Tagged, Codec::TaggedZstd] {
            let back = codec.decode(stored.as_ref().into()).expect("decode");
            assert_eq!(back.into_vec(), large);
        }
        let lz4 = Codec::Tagged.encoder().encode(&large);
        let back = Codec::TaggedZstd
            .decode(lz4.as_ref().into())
            .expect("decode");
        assert_eq!(back.into_vec(), large);
    }

    #[test]
    fn a_damaged_value_is_an_error_not_a_panic() {
        for bad in [
            &[][..],
            &[7, 1, 2][..],
            &[TAG_ZSTD, 1][..],
            &[TAG_ZSTD, 9, 0, 0, 0, 1, 2, 3][..],
            &[TAG_LZ4, 1][..],
            &[TAG_LZ4, 9, 0, 0, 0, 1, 2, 3][..],
            // A stated length no block of this size could hold: refused before allocating.
            &[TAG_LZ4, 0xff, 0xff, 0xff, 0x7f, 0x10, 0x61][..],
        ] {
            assert!(Codec::Tagged.decode(bad.into()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_marker_is_written_only_for_a_new_database_asked_to_compress() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = sled::Config::new().path(dir.path()).open().expect("open");
        assert_eq!(Codec::open(&db, false, true).expect("codec"), Codec::Plain);
        assert_eq!(Codec::open(&db, true, false).expect("codec"), Codec::Plain);
        assert_eq!(db.get(MARKER).expect("get"), None);
        assert_eq!(Codec::open(&db, true, true).expect("codec"), Codec::Tagged);
        // Reopened (no longer fresh, whatever is asked): the marker decides.
        assert_eq!(
            Codec::open(&db, false, false).expect("codec"),
            Codec::Tagged
        );
        db.insert(MARKER, MARKER_ZSTD_ONLY).expect("insert");
        assert_eq!(
            Codec::open(&db, false, true).expect("codec"),
            Codec::TaggedZstd
        );
        db.insert(MARKER, &b"other"[..]).expect("insert");
        assert!(Codec::open(&db, false, true).is_err());
    }
}
