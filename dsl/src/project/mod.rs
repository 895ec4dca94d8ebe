//! A graph file and everything it pulls in (`use`, subgraph paths, `file(…)` prompts):
//! loading here, checking every file once and compiling the root graph in `pipeline`,
//! rendering diagnostics.

use crate::ast::*;
use crate::diagnostic::{self, catalogue as diag, Diagnostic};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod pipeline;
mod read;
pub use read::{read_text, MAX_FILE_BYTES};

pub use pipeline::prompts;

/// One loaded file.
pub struct Source {
    /// Its path as given or resolved.
    pub path: PathBuf,
    /// How diagnostics name it.
    pub name: String,
    /// Its text.
    pub text: String,
    /// Its tree, if the outline parsed.
    pub ast: Option<File>,
}

/// A root file and the files it references.
pub struct Project {
    /// The root file's key in `sources`.
    pub root: PathBuf,
    /// Every file by canonical path.
    pub sources: BTreeMap<PathBuf, Source>,
    /// Parse and load diagnostics.
    pub diagnostics: Vec<Diagnostic>,
    /// The texts of `file(…)` prompts, by canonical path (read when the project is loaded, so
    /// a project is a complete snapshot of what it compiles from; see [`Project::files`]).
    pub prompt_texts: BTreeMap<PathBuf, String>,
    /// Why `file(…)` prompts that exist could not be read (a device, too large, not UTF-8).
    pub prompt_errors: BTreeMap<PathBuf, String>,
}

/// Why a project could not be loaded at all.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {path}: {source}")]
pub struct LoadError {
    /// The file.
    pub path: String,
    /// The I/O error.
    #[source]
    pub source: std::io::Error,
}

/// How a file is named in a project: its canonical path, or (when it does not exist on disk,
/// as in a snapshot) the path with `.` and `..` resolved lexically.
fn key(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| normalize(p))
}

fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Reads one file a project needs.
type Reader<'a> = &'a dyn Fn(&Path) -> std::io::Result<String>;

fn read_disk(p: &Path) -> std::io::Result<String> {
    read_text(p)
}

/// The path of the prompt file of a `prompt name = file("…")` declaration, relative to `dir`.
fn prompt_file(p: &PromptDecl) -> Option<&StrLit> {
    match &p.value.kind {
        ExprKind::Call { func, args } if func.name == "file" => match args.first().map(|a| &a.kind)
        {
            Some(ExprKind::Str { lit }) => Some(lit),
            _ => None,
        },
        _ => None,
    }
}

/// `d`, said to be about the file diagnostics call `name`.
fn in_file(mut d: Diagnostic, name: &str) -> Diagnostic {
    d.file = name.to_string();
    d
}

/// The paths a file references (`use`, `subgraph "…"`), with where they are written.
pub fn references(f: &File) -> Vec<&StrLit> {
    let mut out: Vec<&StrLit> = f.uses.iter().map(|u| &u.path).collect();
    for g in &f.graphs {
        for item in &g.items {
            if let GraphItem::Node(NodeDecl {
                kind: Some(NodeKind::Subgraph(SubgraphRef::Path(p))),
                ..
            }) = item
            {
                out.push(p);
            }
        }
    }
    out
}

impl Project {
    /// Loads `path` and, recursively, what it references.
    pub fn load(path: impl AsRef<Path>) -> Result<Project, LoadError> {
        let path = path.as_ref();
        let text = read_text(path).map_err(|e| LoadError {
            path: path.display().to_string(),
            source: e,
        })?;
        Ok(Self::from_source(path, text))
    }

    /// Builds a project from the root file's text (references are read from disk).
    pub fn from_source(path: &Path, text: String) -> Project {
        Self::build(path, text, &read_disk)
    }

    /// Builds a project from the root file's text, reading referenced files (by canonical
    /// path) with `read`: an editor passes the unsaved text of its open documents.
    pub fn from_source_with(
        path: &Path,
        text: String,
        read: &dyn Fn(&Path) -> std::io::Result<String>,
    ) -> Project {
        Self::build(path, text, read)
    }

    /// Builds a project from a snapshot of its files (what [`Project::files`] returned),
    /// reading nothing from disk: the graph as it was when the snapshot was taken, even if the
    /// files changed or were removed since. `root` is the root file's key in `files`.
    ///
    /// ```
    /// use agentgraph_dsl::Project;
    /// use std::collections::BTreeMap;
    /// use std::path::PathBuf;
    ///
    /// // Paths that exist nowhere on disk: everything comes from the snapshot.
    /// let root = PathBuf::from("/snapshot/hello.ag");
    /// let text = r#"graph hello {
    ///   state { n: int = 0 }
    ///   prompt greeting = file("greeting.md")
    ///   node bump { set { n: n + 1 } }
    ///   START -> bump
    ///   bump -> END
    /// }"#;
    /// let files = BTreeMap::from([
    ///     (root.clone(), text.to_string()),
    ///     (PathBuf::from("/snapshot/greeting.md"), "Hello!".to_string()),
    /// ]);
    /// let project = Project::from_files(&root, &files)?;
    /// assert_eq!(project.files(), files);
    /// # Ok::<(), agentgraph_dsl::project::LoadError>(())
    /// ```
    pub fn from_files(
        root: &Path,
        files: &BTreeMap<PathBuf, String>,
    ) -> Result<Project, LoadError> {
        let text = files.get(root).cloned().ok_or_else(|| LoadError {
            path: root.display().to_string(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the root file is not in the snapshot",
            ),
        })?;
        let read = |p: &Path| {
            files
                .get(p)
                .or_else(|| files.get(&normalize(p)))
                .cloned()
                .ok_or_else(|| {
                    std::io::Error::new(std::io::ErrorKind::NotFound, "not in the snapshot")
                })
        };
        Ok(Self::build(root, text, &read))
    }

    /// Every file the project was built from (graph files and prompt files) with the text that
    /// was loaded, by canonical path: a snapshot [`Project::from_files`] rebuilds it from.
    pub fn files(&self) -> BTreeMap<PathBuf, String> {
        let mut out: BTreeMap<PathBuf, String> = self
            .sources
            .iter()
            .map(|(k, s)| (k.clone(), s.text.clone()))
            .collect();
        for (k, t) in &self.prompt_texts {
            out.entry(k.clone()).or_insert_with(|| t.clone());
        }
        out
    }

    fn build(path: &Path, text: String, read: Reader<'_>) -> Project {
        let root = key(path);
        let mut p = Project {
            root: root.clone(),
            sources: BTreeMap::new(),
            diagnostics: Vec::new(),
            prompt_texts: BTreeMap::new(),
            prompt_errors: BTreeMap::new(),
        };
        p.add(
            root.clone(),
            path.display().to_string(),
            text,
            &mut vec![root],
            read,
        );
        p
    }

    fn add(
        &mut self,
        k: PathBuf,
        name: String,
        text: String,
        stack: &mut Vec<PathBuf>,
        read: Reader<'_>,
    ) {
        let parsed = crate::parse::parse(&text);
        self.diagnostics
            .extend(parsed.diagnostics.into_iter().map(|d| in_file(d, &name)));
        let dir = k.parent().map(Path::to_path_buf).unwrap_or_default();
        let refs: Vec<StrLit> = parsed
            .file
            .as_ref()
            .map(|f| references(f).into_iter().cloned().collect())
            .unwrap_or_default();
        let prompt_paths: Vec<PathBuf> = parsed
            .file
            .iter()
            .flat_map(|f| &f.graphs)
            .flat_map(|g| &g.items)
            .filter_map(|item| match item {
                GraphItem::Prompt(p) => prompt_file(p),
                _ => None,
            })
            .map(|lit| key(&dir.join(&lit.value)))
            .collect();
        for pk in prompt_paths {
            if let std::collections::btree_map::Entry::Vacant(e) = self.prompt_texts.entry(pk) {
                match read(e.key()) {
                    Ok(t) => {
                        e.insert(t);
                    }
                    Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                        self.prompt_errors.insert(e.key().clone(), err.to_string());
                    }
                    Err(_) => {}
                }
            }
        }
        self.sources.insert(
            k.clone(),
            Source {
                path: k.clone(),
                name: name.clone(),
                text,
                ast: parsed.file,
            },
        );
        for r in refs {
            let target = dir.join(&r.value);
            let tk = key(&target);
            if let Some(pos) = stack.iter().position(|s| *s == tk) {
                let chain: Vec<String> = stack[pos..]
                    .iter()
                    .chain(std::iter::once(&tk))
                    .map(|p| {
                        p.file_name()
                            .map(|f| f.to_string_lossy().into_owned())
                            .unwrap_or_default()
                    })
                    .collect();
                let d = diag::import_cycle(r.span, &chain);
                self.diagnostics.push(in_file(d, &name));
                continue;
            }
            if self.sources.contains_key(&tk) {
                continue;
            }
            match read(&tk) {
                Ok(t) => {
                    stack.push(tk.clone());
                    self.add(tk, target.display().to_string(), t, stack, read);
                    stack.pop();
                }
                Err(e) => {
                    let d = diag::unreadable_reference(r.span, &r.value, e, &dir);
                    self.diagnostics.push(in_file(d, &name));
                }
            }
        }
    }

    /// Renders a diagnostic with its file's text.
    pub fn render(&self, d: &Diagnostic, color: bool, width: usize) -> String {
        diagnostic::render(d, self.text_of(d), color, width)
    }

    /// The JSON form of a diagnostic (with line and column).
    pub fn to_json(&self, d: &Diagnostic) -> serde_json::Value {
        diagnostic::to_json(d, self.text_of(d))
    }

    /// The text of the file a diagnostic is about (empty if it is not one of ours).
    fn text_of(&self, d: &Diagnostic) -> &str {
        self.sources
            .values()
            .find(|s| s.name == d.file)
            .map_or("", |s| s.text.as_str())
    }

    /// The root source.
    pub fn root_source(&self) -> Option<&Source> {
        self.sources.get(&self.root)
    }
}
