//! Graph versions: the exact files a compiled graph was built from, named by a content hash.
//!
//! A run pins the version it started with (see [`crate::GraphCache::pinned`]): the thread
//! resumes on it after a live reload, and, because the server stores the version with the
//! thread's event log, after a restart too: the snapshot is compiled again without reading
//! the (possibly edited or removed) files.

use crate::backing::GraphStorage;
use crate::graphs::{GraphLoadError, RegistryFactory};
use agentgraph_dsl::Project;
use agentgraph_runtime::CompiledGraph;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The files one version of a graph was compiled from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphVersion {
    /// A hash of `root` and every file's path and text (hex, 32 digits): equal ids, equal
    /// graphs.
    pub id: String,
    /// The root graph file (a key of `files`).
    pub root: PathBuf,
    /// Every file read (graph files, `use`d and subgraph files, `file(…)` prompts) by canonical
    /// path, with the text that was compiled.
    pub files: BTreeMap<PathBuf, String>,
}

impl GraphVersion {
    /// The version a loaded project is.
    pub fn of(project: &Project) -> GraphVersion {
        Self::new(project.root.clone(), project.files())
    }

    /// The version made of `files` with root `root`.
    pub fn new(root: PathBuf, files: BTreeMap<PathBuf, String>) -> GraphVersion {
        let mut h = Sha256::new();
        // Lengths before contents, so no two different sets hash the same bytes.
        let mut field = |b: &[u8]| {
            h.update((b.len() as u64).to_le_bytes());
            h.update(b);
        };
        field(root.to_string_lossy().as_bytes());
        for (path, text) in &files {
            field(path.to_string_lossy().as_bytes());
            field(text.as_bytes());
        }
        let id = h
            .finalize()
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect();
        GraphVersion { id, root, files }
    }

    /// Compiles this version from its snapshot (nothing is read from disk), with the server's
    /// registry and storage. Blocking (it checks and compiles the graph).
    pub fn compile(
        &self,
        registry: &RegistryFactory,
        storage: &GraphStorage,
    ) -> Result<CompiledGraph, GraphLoadError> {
        let project = Project::from_files(&self.root, &self.files)
            .map_err(|e| GraphLoadError::Io(e.to_string()))?;
        let reg = registry();
        project
            .compile(&reg)
            .map(|g| storage.attach(g))
            .map_err(|diags| {
                let errors = diags.iter().filter(|d| d.is_error()).count();
                GraphLoadError::Invalid {
                    message: format!(
                        "version {} of {} has {errors} error(s) with this server's tools",
                        self.id,
                        self.root.display()
                    ),
                    diagnostics: diags.iter().map(|d| project.to_json(d)).collect(),
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(pairs: &[(&str, &str)]) -> BTreeMap<PathBuf, String> {
        pairs
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect()
    }

    #[test]
    fn the_id_depends_on_every_path_and_text() {
        let a = GraphVersion::new(
            "/g/a.ag".into(),
            files(&[("/g/a.ag", "x"), ("/g/p.md", "y")]),
        );
        let same = GraphVersion::new(
            "/g/a.ag".into(),
            files(&[("/g/a.ag", "x"), ("/g/p.md", "y")]),
        );
        assert_eq!(a.id, same.id);
        assert_eq!(a.id.len(), 32);
        for other in [
            GraphVersion::new(
                "/g/a.ag".into(),
                files(&[("/g/a.ag", "x"), ("/g/p.md", "z")]),
            ),
            GraphVersion::new(
                "/g/a.ag".into(),
                files(&[("/g/a.ag", "x"), ("/g/q.md", "y")]),
            ),
            GraphVersion::new(
                "/g/p.md".into(),
                files(&[("/g/a.ag", "x"), ("/g/p.md", "y")]),
            ),
            GraphVersion::new("/g/a.ag".into(), files(&[("/g/a.ag", "xy")])),
        ] {
            assert_ne!(a.id, other.id);
        }
    }
}
