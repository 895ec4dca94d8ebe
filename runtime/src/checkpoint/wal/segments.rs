//! The log's files: numbered segments in one folder, appended to and synced by one writer.
//!
//! A segment is named by the sequence number of its first record (`00000000000000000001.log`),
//! so names sort in log order. Only the newest segment is written; once it grows past its limit
//! it is synced, cut to its records and sealed, and a new one begins. A sealed segment is
//! deleted once every record in it has reached the database's own durable state (see
//! [`Segments::release`]).
//!
//! The newest segment is written ahead with zeros, a mebibyte at a time, and records overwrite
//! them: an `fdatasync` after an overwrite has no file size to commit, so a group commit costs
//! about the disk's overwrite floor instead of a journal commit each time. Reading stops at
//! the first zero header of the newest segment.

use super::frame::{self, Format, Read, Record};
use super::WalError;
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The newest segment is zero-filled this far ahead of its records.
const AHEAD: u64 = 1 << 20;

/// The writer's view of the folder.
pub(super) struct Segments {
    dir: PathBuf,
    /// The segment being appended to.
    current: File,
    current_path: PathBuf,
    current_len: u64,
    /// Bytes of the current segment already written (records, then zeros).
    allocated: u64,
    /// The newest record written to the current segment (0: none).
    current_max: u64,
    /// Sealed segments, oldest first, with the newest record each holds.
    sealed: VecDeque<(PathBuf, u64)>,
    /// Bytes written since the last sync.
    dirty: bool,
    /// Size past which the current segment is sealed.
    limit: u64,
    /// An empty buffer with capacity, for the log's next batch of records (see `sync_log`).
    pub(super) spare: Vec<u8>,
}

/// Zeros written ahead of the records, a block at a time.
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WalError + '_ {
    move |source| WalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn segment_path(dir: &Path, first_seq: u64) -> PathBuf {
    dir.join(format!("{first_seq:020}.log"))
}

/// Makes the folder's entries (created or removed files) durable.
fn sync_dir(dir: &Path) -> Result<(), WalError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// The segment files in `dir`, in log order.
fn list(dir: &Path) -> Result<Vec<PathBuf>, WalError> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(io(dir)(e)),
    };
    for entry in entries {
        let path = entry.map_err(io(dir))?.path();
        if path.extension().is_some_and(|e| e == "log") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Reads every record of every segment in `dir`, in log order, and hands each to `apply`.
/// A torn tail of the newest segment (a crash while it was written) is cut off: those bytes
/// were never reported durable. A bad record anywhere else is damage, and an error.
/// Returns the number of records read.
pub(super) fn replay(
    dir: &Path,
    format: Format,
    apply: &mut dyn FnMut(Record) -> Result<(), WalError>,
) -> Result<u64, WalError> {
    let files = list(dir)?;
    let mut count = 0;
    for (i, path) in files.iter().enumerate() {
        let buf = std::fs::read(path).map_err(io(path))?;
        let mut at = 0;
        loop {
            match frame::read(&buf, at, format) {
                Read::Record(record, next) => {
                    apply(record)?;
                    count += 1;
                    at = next;
                }
                Read::End => break,
                Read::Zeros if i + 1 == files.len() => break,
                Read::Torn if i + 1 == files.len() => {
                    tracing::warn!(
                        path = %path.display(),
                        offset = at,
                        dropped = buf.len() - at,
                        "write-ahead log: cutting off a torn tail (a write the crash interrupted)"
                    );
                    break;
                }
                Read::Torn | Read::Zeros => {
                    return Err(WalError::Damaged {
                        path: path.clone(),
                        offset: at as u64,
                    })
                }
            }
        }
    }
    Ok(count)
}

/// Deletes every segment in `dir` (after their records reached the database's durable state).
pub(super) fn remove_all(dir: &Path) -> Result<(), WalError> {
    let files = list(dir)?;
    if files.is_empty() {
        return Ok(());
    }
    for path in &files {
        std::fs::remove_file(path).map_err(io(path))?;
    }
    sync_dir(dir)
}

/// Deletes the folder `dir` of an older log once its segments are gone (nothing if missing).
pub(super) fn remove_folder(dir: &Path) -> Result<(), WalError> {
    remove_all(dir)?;
    match std::fs::remove_dir(dir) {
        Ok(()) => dir.parent().map_or(Ok(()), sync_dir),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(dir)(e)),
    }
}

impl Segments {
    /// Starts a new log in `dir` (created if missing) whose first record will be `first_seq`.
    pub(super) fn create(dir: &Path, first_seq: u64, limit: u64) -> Result<Self, WalError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let (current, current_path) = Self::new_file(dir, first_seq)?;
        Ok(Segments {
            dir: dir.to_path_buf(),
            current,
            current_path,
            current_len: 0,
            allocated: 0,
            current_max: 0,
            sealed: VecDeque::new(),
            dirty: false,
            limit,
            spare: Vec::new(),
        })
    }

    fn new_file(dir: &Path, first_seq: u64) -> Result<(File, PathBuf), WalError> {
        let path = segment_path(dir, first_seq);
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        sync_dir(dir)?;
        Ok((file, path))
    }

    /// Appends framed records whose newest is `max_seq`; not durable until [`Segments::sync`].
    pub(super) fn write(&mut self, buf: &[u8], max_seq: u64) -> Result<(), WalError> {
        let end = self.current_len + buf.len() as u64;
        if end > self.allocated {
            let target = end.div_ceil(AHEAD) * AHEAD;
            while self.allocated < target {
                let n = (target - self.allocated).min(ZEROS.len() as u64) as usize;
                self.current
                    .write_all_at(&ZEROS[..n], self.allocated)
                    .map_err(io(&self.current_path))?;
                self.allocated += n as u64;
            }
        }
        self.current
            .write_all_at(buf, self.current_len)
            .map_err(io(&self.current_path))?;
        self.current_len = end;
        self.current_max = max_seq;
        self.dirty = true;
        Ok(())
    }

    /// Makes every written record durable; returns whether a sync was issued (none when
    /// nothing was written since the last one). Seals a full segment afterwards.
    pub(super) fn sync(&mut self) -> Result<bool, WalError> {
        if !self.dirty {
            return Ok(false);
        }
        self.current.sync_data().map_err(io(&self.current_path))?;
        self.dirty = false;
        if self.current_len >= self.limit {
            self.seal()?;
        }
        Ok(true)
    }

    /// Seals the current segment (already synced) and begins the next. The sealed file is cut
    /// to its records, so only the newest segment ever ends in zeros.
    fn seal(&mut self) -> Result<(), WalError> {
        self.current
            .set_len(self.current_len)
            .and_then(|()| self.current.sync_all())
            .map_err(io(&self.current_path))?;
        let (file, path) = Self::new_file(&self.dir, self.current_max + 1)?;
        let old_path = std::mem::replace(&mut self.current_path, path);
        self.current = file;
        self.sealed.push_back((old_path, self.current_max));
        self.current_len = 0;
        self.allocated = 0;
        Ok(())
    }

    /// Forgets every record up to `seq`, which the database now holds durably: sealed segments
    /// holding nothing newer are deleted, and a current segment holding nothing newer is sealed
    /// first (it is synced: the merge that calls this synced the log before applying).
    pub(super) fn release(&mut self, seq: u64) -> Result<(), WalError> {
        if self.current_len > 0 && self.current_max <= seq && !self.dirty {
            self.seal()?;
        }
        let mut removed = false;
        while let Some((path, max)) = self.sealed.front() {
            if *max > seq {
                break;
            }
            std::fs::remove_file(path).map_err(io(path))?;
            self.sealed.pop_front();
            removed = true;
        }
        if removed {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Segment files on disk now (sealed and current).
    #[cfg(test)]
    pub(super) fn files(&self) -> usize {
        self.sealed.len() + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64, key: &str) -> Vec<u8> {
        let mut buf = Vec::new();
        frame::append(
            &mut buf,
            seq,
            b"t",
            &[(key.as_bytes().to_vec(), b"v".to_vec())],
            &[],
        );
        buf
    }

    fn keys(dir: &Path) -> Result<Vec<String>, WalError> {
        let mut out = Vec::new();
        replay(dir, Format::Named, &mut |r| {
            for (k, _) in r.puts {
                out.push(String::from_utf8_lossy(&k).into_owned());
            }
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn full_segments_are_sealed_and_released() {
        let dir = tempfile::tempdir().expect("tempdir");
        let wal = dir.path().join("wal");
        let mut s = Segments::create(&wal, 1, 64).expect("create");
        for seq in 1..=10 {
            s.write(&record(seq, &format!("k{seq}")), seq)
                .expect("write");
            s.sync().expect("sync");
        }
        assert!(s.files() > 2, "{} files", s.files());
        assert_eq!(keys(&wal).expect("replay").len(), 10);
        s.release(6).expect("release");
        let left = keys(&wal).expect("replay");
        assert!(left.contains(&"k7".to_string()), "{left:?}");
        assert!(!left.contains(&"k1".to_string()), "{left:?}");
        s.release(10).expect("release");
        assert_eq!(keys(&wal).expect("replay"), Vec::<String>::new());
    }

    #[test]
    fn a_torn_tail_is_cut_and_damage_before_it_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let wal = dir.path().join("wal");
        let mut s = Segments::create(&wal, 1, 1 << 20).expect("create");
        s.write(&record(1, "a"), 1).expect("write");
        let second = record(2, "b");
        s.write(&second[..second.len() - 3], 2).expect("write");
        s.sync().expect("sync");
        assert_eq!(keys(&wal).expect("replay"), vec!["a".to_string()]);

        // The same bytes followed by a later segment: no longer a tail, so damage.
        drop(Segments::create(&wal, 3, 1 << 20).expect("second segment"));
        std::fs::write(segment_path(&wal, 3), record(3, "c")).expect("write");
        let err = keys(&wal).expect_err("damage");
        assert!(matches!(err, WalError::Damaged { .. }), "{err}");
    }
}
