//! Where fetched catalogues live: `<data dir>/catalogue/npm/` (from `agentgraph catalogue
//! fetch`) and `<data dir>/catalogue/instance/` (from `agentgraph catalogue from-n8n`), each
//! with a `SOURCE.json` saying where it came from. Both are replaced atomically: files are
//! written to a staging folder next to the target, which is renamed into place only once
//! complete.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The environment variable naming agentgraph's data folder.
pub const DATA_DIR_ENV: &str = "AGENTGRAPH_DATA_DIR";
/// The file in each stored catalogue folder saying where it came from.
pub const SOURCE_FILE: &str = "SOURCE.json";

/// agentgraph's data folder could not be determined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no data folder: set {DATA_DIR_ENV}, XDG_DATA_HOME or HOME")]
pub struct DataDirError;

/// agentgraph's data folder: `$AGENTGRAPH_DATA_DIR`, else `$XDG_DATA_HOME/agentgraph`, else
/// `~/.local/share/agentgraph` (empty variables count as unset).
pub fn data_dir() -> Result<PathBuf, DataDirError> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var(DATA_DIR_ENV) {
        return Ok(PathBuf::from(dir));
    }
    // The XDG spec ignores relative values.
    if let Some(xdg) = var("XDG_DATA_HOME").map(PathBuf::from) {
        if xdg.is_absolute() {
            return Ok(xdg.join("agentgraph"));
        }
    }
    var("HOME")
        .map(|home| PathBuf::from(home).join(".local/share/agentgraph"))
        .ok_or(DataDirError)
}

/// A stored catalogue folder could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file or folder operation failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done (`cannot create`, `cannot write`, …).
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A `SOURCE.json` is not what this version writes.
    #[error("{path} is not a catalogue source file: {message}")]
    Source {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// One npm package of a fetched catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageSource {
    /// `n8n-nodes-base` or `@n8n/n8n-nodes-langchain`.
    pub name: String,
    /// The exact version fetched.
    pub version: String,
    /// The tarball's address.
    pub tarball: String,
}

/// `npm/SOURCE.json`: what `agentgraph catalogue fetch` fetched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NpmSource {
    /// The n8n release the packages belong to, when one was asked for (not for a dist-tag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n8n_version: Option<String>,
    /// What was asked for (`latest`, a dist-tag or a version).
    pub requested: String,
    /// The registry's address.
    pub registry: String,
    /// The packages, `n8n-nodes-base` first.
    pub packages: Vec<PackageSource>,
    /// Node types in the catalogue (generated tool variants included).
    pub node_types: usize,
    /// When it was fetched (RFC 3339, UTC).
    pub fetched_at: String,
}

impl NpmSource {
    /// `n8n-nodes-base 2.41.2 + @n8n/n8n-nodes-langchain 2.41.2`.
    pub fn packages_line(&self) -> String {
        self.packages
            .iter()
            .map(|p| format!("{} {}", p.name, p.version))
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

/// `instance/SOURCE.json`: what `agentgraph catalogue from-n8n` saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceSource {
    /// The instance's address.
    pub url: String,
    /// Node types in the catalogue.
    pub node_types: usize,
    /// When it was saved (RFC 3339, UTC).
    pub fetched_at: String,
}

/// The stored catalogues under one data folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// The catalogues under `data_dir` (in its `catalogue/` folder).
    pub fn new(data_dir: impl AsRef<Path>) -> Self {
        Store {
            root: data_dir.as_ref().join("catalogue"),
        }
    }

    /// The catalogues under [`data_dir`].
    pub fn from_env() -> Result<Self, DataDirError> {
        data_dir().map(Store::new)
    }

    /// `<data dir>/catalogue`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The fetched npm catalogue's folder (`n8n-nodes-base/`, `n8n-nodes-langchain/`).
    pub fn npm_dir(&self) -> PathBuf {
        self.root.join("npm")
    }

    /// The instance catalogue's folder.
    pub fn instance_dir(&self) -> PathBuf {
        self.root.join("instance")
    }

    /// The instance catalogue's node types (`/types/nodes.json` as n8n serves it).
    pub fn instance_file(&self) -> PathBuf {
        self.instance_dir().join("nodes.json")
    }

    /// The fetched npm catalogue's source, `None` when there is none.
    pub fn npm(&self) -> Result<Option<NpmSource>, StoreError> {
        read_source(&self.npm_dir())
    }

    /// The instance catalogue's source, `None` when there is none.
    pub fn instance(&self) -> Result<Option<InstanceSource>, StoreError> {
        read_source(&self.instance_dir())
    }

    /// A new staging folder that [`Staging::commit`] renames to `<root>/<name>`; dropped
    /// uncommitted, it is removed and `<name>` is left as it was.
    pub(crate) fn stage(&self, name: &str) -> Result<Staging, StoreError> {
        std::fs::create_dir_all(&self.root).map_err(io("cannot create", &self.root))?;
        self.remove_leftovers(name);
        let dir = self.root.join(format!(".{name}-new-{}", unique()));
        std::fs::create_dir(&dir).map_err(io("cannot create", &dir))?;
        Ok(Staging {
            dir,
            target: self.root.join(name),
            committed: false,
        })
    }
}

impl Store {
    /// Removes the staging and old folders of `name` that a killed process left (those over
    /// an hour old: no fetch is still filling them).
    fn remove_leftovers(&self, name: &str) {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return;
        };
        let prefixes = [format!(".{name}-new-"), format!(".{name}-old-")];
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let file_name = file_name.to_string_lossy();
            let stale = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > LEFTOVER_AGE);
            if stale && prefixes.iter().any(|p| file_name.starts_with(p.as_str())) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// How old a staging folder must be to count as left behind.
const LEFTOVER_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Reads `<dir>/SOURCE.json`: `None` when the folder or the file does not exist.
fn read_source<T: for<'de> Deserialize<'de>>(dir: &Path) -> Result<Option<T>, StoreError> {
    let path = dir.join(SOURCE_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("cannot read", &path)(e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| StoreError::Source {
            path,
            message: e.to_string(),
        })
}

/// A folder being filled, renamed into place by [`Staging::commit`].
pub(crate) struct Staging {
    dir: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl Staging {
    /// The folder to write to.
    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }

    /// Writes `value` as pretty JSON to `<staging>/<rel>`.
    pub(crate) fn write_json(&self, rel: &str, value: &impl Serialize) -> Result<(), StoreError> {
        let path = self.dir.join(rel);
        let text = serde_json::to_string_pretty(value).map_err(|e| StoreError::Io {
            action: "cannot serialize",
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        std::fs::write(&path, text + "\n").map_err(io("cannot write", &path))
    }

    /// Puts the staged folder in place of the target: the old one is moved aside, the new one
    /// renamed in, the old one removed (and put back if the rename fails).
    pub(crate) fn commit(mut self) -> Result<(), StoreError> {
        let old = self.target.with_file_name(format!(
            ".{}-old-{}",
            self.target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            unique()
        ));
        let had_old = match std::fs::rename(&self.target, &old) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(io("cannot move aside", &self.target)(e)),
        };
        if let Err(e) = std::fs::rename(&self.dir, &self.target) {
            if had_old {
                let _ = std::fs::rename(&old, &self.target);
            }
            return Err(io("cannot rename into place", &self.dir)(e));
        }
        self.committed = true;
        if had_old {
            let _ = std::fs::remove_dir_all(&old);
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A suffix no other staging folder of this or another process has.
fn unique() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The current time as RFC 3339 in UTC (`2026-03-01T12:00:00Z`).
pub(crate) fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    rfc3339(secs)
}

/// Seconds since the Unix epoch as RFC 3339 in UTC (days to civil date: Howard Hinnant's
/// algorithm).
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn folders_a_killed_fetch_left_are_removed_once_stale() {
        let data = tempfile::tempdir().unwrap();
        let store = Store::new(data.path());
        let root = store.root().to_path_buf();
        let (stale, fresh, other) = (
            root.join(".npm-new-1-2-3"),
            root.join(".npm-new-4-5-6"),
            root.join(".instance-new-1-2-3"),
        );
        for d in [&stale, &fresh, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        let two_hours_ago = SystemTime::now() - std::time::Duration::from_secs(7200);
        for d in [&stale, &other] {
            std::fs::File::open(d)
                .unwrap()
                .set_modified(two_hours_ago)
                .unwrap();
        }
        drop(store.stage("npm").unwrap());
        assert!(!stale.exists());
        assert!(fresh.exists(), "a fetch may still be filling it");
        assert!(other.exists(), "another catalogue's folder");
    }

    #[test]
    fn an_uncommitted_staging_folder_leaves_the_target_alone() {
        let data = tempfile::tempdir().unwrap();
        let store = Store::new(data.path());
        let first = store.stage("npm").unwrap();
        std::fs::write(first.path().join("a"), "1").unwrap();
        first.commit().unwrap();
        let second = store.stage("npm").unwrap();
        std::fs::write(second.path().join("a"), "2").unwrap();
        drop(second);
        assert_eq!(
            std::fs::read_to_string(store.npm_dir().join("a")).unwrap(),
            "1"
        );
        let left: Vec<_> = std::fs::read_dir(store.root()).unwrap().collect();
        assert_eq!(left.len(), 1, "only npm/ remains: {left:?}");
    }
}
