//! API keys: kept hashed (SHA-256 of the whole key; keys carry 244 random bits, so no slow
//! hash is needed) in a JSON file in the server's database folder, compared in constant time.
//!
//! The file is read again whenever it changes, so `agentgraph keys create|revoke` takes effect
//! on the next request of a running server (sled allows one process per database, which is why
//! the keys are a file beside it rather than a tree in it).

use super::principal::{Principal, DEFAULT_TENANT};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use subtle::ConstantTimeEq;

/// The keys file's name in the database folder.
pub const KEYS_FILE: &str = "api-keys.json";

/// What every key starts with (`agk_<id>_<secret>`).
const PREFIX: &str = "agk_";

/// One key as stored: never the key itself, only its hash.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ApiKey {
    /// The key's public id (also the start of the key: `agk_<id>_…`).
    pub id: String,
    /// A unique name, for listing and revoking.
    pub name: String,
    /// The principal's user.
    pub user: String,
    /// The principal's tenant.
    pub tenant: String,
    /// The principal's scopes.
    pub scopes: Vec<String>,
    /// When it was created (UTC, RFC 3339).
    pub created: String,
    /// When it was revoked, if it was.
    #[serde(default)]
    pub revoked: Option<String>,
    /// SHA-256 of the key, hex.
    hash: String,
}

impl ApiKey {
    /// The principal requests with this key act for.
    pub fn principal(&self) -> Principal {
        Principal::new(&self.user, &self.tenant, self.scopes.clone())
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct KeysFile {
    keys: Vec<ApiKey>,
}

/// Why the keys file could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a keys file.
    #[error("{path} is not a valid keys file: {source}")]
    Format {
        /// The file.
        path: PathBuf,
        /// The error.
        source: serde_json::Error,
    },
    /// A key with this name exists already.
    #[error("a key named `{0}` exists already")]
    Duplicate(String),
    /// No key has this name or id.
    #[error("no key named or with id `{0}`")]
    NotFound(String),
    /// The name is empty.
    #[error("a key needs a non-empty name")]
    EmptyName,
}

/// When the file was last read: its modification time and length.
type Stamp = (Option<SystemTime>, u64);

/// The API keys of a server, in one file.
#[derive(Debug)]
pub struct KeyStore {
    path: PathBuf,
    cache: Mutex<Option<(Stamp, Arc<Vec<ApiKey>>)>>,
}

impl Clone for KeyStore {
    fn clone(&self) -> Self {
        KeyStore::at(&self.path)
    }
}

impl KeyStore {
    /// Keys in the file `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        KeyStore {
            path: path.into(),
            cache: Mutex::new(None),
        }
    }

    /// Keys in [`KEYS_FILE`] of the database folder `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        KeyStore::at(dir.join(KEYS_FILE))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file exists: once a key was ever created, requests need a key or token
    /// (revoking every key does not turn authentication off).
    pub fn exists(&self) -> bool {
        self.path.exists()
    }

    /// Every key, revoked ones included, oldest first.
    pub fn list(&self) -> Result<Vec<ApiKey>, KeyError> {
        Ok(self.current()?.as_ref().clone())
    }

    /// Whether some key is not revoked.
    pub fn has_active(&self) -> Result<bool, KeyError> {
        Ok(self.current()?.iter().any(|k| k.revoked.is_none()))
    }

    /// Creates a key named `name` for `user` (default: the name) of `tenant` (default
    /// [`DEFAULT_TENANT`]); returns it with the key, which is shown only now.
    pub fn create(
        &self,
        name: &str,
        user: Option<&str>,
        tenant: Option<&str>,
        scopes: Vec<String>,
    ) -> Result<(ApiKey, String), KeyError> {
        if name.trim().is_empty() {
            return Err(KeyError::EmptyName);
        }
        let mut file = self.read()?;
        if file.keys.iter().any(|k| k.name == name) {
            return Err(KeyError::Duplicate(name.to_string()));
        }
        let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
        let secret = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let key = format!("{PREFIX}{id}_{secret}");
        let entry = ApiKey {
            id,
            name: name.to_string(),
            user: user.unwrap_or(name).to_string(),
            tenant: tenant.unwrap_or(DEFAULT_TENANT).to_string(),
            scopes,
            created: now_rfc3339(),
            revoked: None,
            hash: hex(&Sha256::digest(key.as_bytes())),
        };
        file.keys.push(entry.clone());
        self.write(&file)?;
        Ok((entry, key))
    }

    /// Revokes the key with this name or id; requests with it get 401 from then on.
    pub fn revoke(&self, name_or_id: &str) -> Result<ApiKey, KeyError> {
        let mut file = self.read()?;
        let key = file
            .keys
            .iter_mut()
            .find(|k| k.name == name_or_id || k.id == name_or_id)
            .ok_or_else(|| KeyError::NotFound(name_or_id.to_string()))?;
        if key.revoked.is_none() {
            key.revoked = Some(now_rfc3339());
        }
        let revoked = key.clone();
        self.write(&file)?;
        Ok(revoked)
    }

    /// The principal of a presented key; `None` for an unknown, malformed or revoked one.
    pub fn verify(&self, presented: &str) -> Result<Option<Principal>, KeyError> {
        let Some(id) = presented
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split_once('_'))
            .map(|(id, _)| id)
        else {
            return Ok(None);
        };
        let keys = self.current()?;
        let digest = hex(&Sha256::digest(presented.as_bytes()));
        Ok(keys
            .iter()
            .find(|k| k.id == id)
            .filter(|k| bool::from(k.hash.as_bytes().ct_eq(digest.as_bytes())))
            .filter(|k| k.revoked.is_none())
            .map(ApiKey::principal))
    }

    /// The keys, read again if the file changed since the last read.
    fn current(&self) -> Result<Arc<Vec<ApiKey>>, KeyError> {
        let stamp: Stamp = match std::fs::metadata(&self.path) {
            Ok(m) => (m.modified().ok(), m.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, 0),
            Err(source) => {
                return Err(KeyError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        };
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((s, keys)) = cache.as_ref() {
            if *s == stamp && stamp.0.is_some() {
                return Ok(keys.clone());
            }
        }
        let keys = Arc::new(self.read()?.keys);
        *cache = Some((stamp, keys.clone()));
        Ok(keys)
    }

    fn read(&self) -> Result<KeysFile, KeyError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| KeyError::Format {
                path: self.path.clone(),
                source,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(KeysFile::default()),
            Err(source) => Err(KeyError::Io {
                path: self.path.clone(),
                source,
            }),
        }
    }

    /// Replaces the file at once (a new file renamed over it), readable by its owner only.
    fn write(&self, file: &KeysFile) -> Result<(), KeyError> {
        let io = |source| KeyError::Io {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let tmp = self
            .path
            .with_extension(format!("tmp{}", std::process::id()));
        let json = serde_json::to_vec_pretty(file).map_err(|source| KeyError::Format {
            path: self.path.clone(),
            source,
        })?;
        {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut f = options.open(&tmp).map_err(io)?;
            std::io::Write::write_all(&mut f, &json).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        std::fs::rename(&tmp, &self.path).map_err(io)?;
        *self.cache.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Now in UTC as `YYYY-MM-DDTHH:MM:SSZ`.
fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
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
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_keys_verify_until_revoked_and_are_stored_hashed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = KeyStore::in_dir(dir.path());
        assert!(!store.exists());
        let (a, key) = store
            .create("ci", None, Some("acme"), vec!["admin".into()])
            .expect("create");
        assert!(store.exists());
        let text = std::fs::read_to_string(store.path()).expect("file");
        assert!(!text.contains(&key), "the key itself is never stored");
        let p = store.verify(&key).expect("verify").expect("valid");
        assert_eq!((p.user.as_str(), p.tenant.as_str()), ("ci", "acme"));
        assert!(p.is_admin());
        // Same id, another secret.
        let forged = format!("{PREFIX}{}_{}", a.id, "0".repeat(64));
        assert_eq!(store.verify(&forged).expect("verify"), None);
        assert!(matches!(
            store.create("ci", None, None, vec![]),
            Err(KeyError::Duplicate(_))
        ));
        store.revoke(&a.id).expect("revoke");
        assert_eq!(store.verify(&key).expect("verify"), None);
        assert!(!store.has_active().expect("read"));
        assert!(matches!(store.revoke("nope"), Err(KeyError::NotFound(_))));
    }

    #[test]
    fn timestamps_are_rfc3339() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z'), "{t}");
    }
}
