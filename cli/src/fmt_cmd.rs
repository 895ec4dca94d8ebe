//! `agentgraph fmt`: formats `.ag` files canonically, given as files or folders (searched
//! recursively for `.ag` files). `--check` only lists the files that are not formatted (exit
//! 1 if any); `--diff` prints a unified diff of what would change (exit 1 if anything would).

use crate::exit;
use crate::graph::print_diagnostics;
use agentgraph_dsl::{Diagnostic, Project};
use std::path::{Path, PathBuf};

/// What `fmt` does with each file.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Rewrite the file.
    Write,
    /// Only list the files that are not formatted.
    Check,
    /// Print a unified diff of what would change.
    Diff,
}

/// Why a path could not be walked.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {path}: {source}")]
pub struct WalkError {
    path: PathBuf,
    source: std::io::Error,
}

/// The `.ag` files of `paths`: files as given, folders searched recursively (sorted, hidden
/// folders and `target` skipped).
pub fn ag_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, WalkError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), WalkError> {
    let err = |source| WalkError {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries = std::fs::read_dir(dir)
        .map_err(err)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                walk(&path, out)?;
            }
        } else if path.extension().is_some_and(|e| e == "ag") {
            out.push(path);
        }
    }
    Ok(())
}

/// One file's outcome.
enum Outcome {
    Formatted,
    Changed,
    Error(u8),
}

/// `agentgraph fmt PATH…`.
pub fn fmt(paths: &[PathBuf], mode: Mode) -> u8 {
    let files = match ag_files(paths) {
        Ok(f) => f,
        Err(e) => return crate::graph::fail(e, exit::USAGE),
    };
    if files.is_empty() {
        eprintln!("no .ag files found");
        return exit::DONE;
    }
    let mut changed = 0usize;
    let mut worst = exit::DONE;
    for file in &files {
        match one(file, mode) {
            Outcome::Formatted => {}
            Outcome::Changed => changed += 1,
            Outcome::Error(code) => worst = worst.max(code),
        }
    }
    if worst != exit::DONE {
        return worst;
    }
    match mode {
        Mode::Write => exit::DONE,
        Mode::Check | Mode::Diff if changed == 0 => exit::DONE,
        Mode::Check | Mode::Diff => {
            eprintln!("{changed} file(s) not formatted (run `agentgraph fmt` on them)");
            exit::FAILED
        }
    }
}

fn one(path: &Path, mode: Mode) -> Outcome {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", path.display());
            return Outcome::Error(exit::USAGE);
        }
    };
    let formatted = match agentgraph_dsl::fmt::format_source(&text) {
        Ok(f) => f,
        Err(diags) => {
            let shown = path.display().to_string();
            let project = Project::from_source(path, text);
            let diags: Vec<Diagnostic> = diags
                .into_iter()
                .map(|mut d| {
                    d.file.clone_from(&shown);
                    d
                })
                .collect();
            print_diagnostics(&project, &diags, false);
            return Outcome::Error(exit::USAGE);
        }
    };
    if formatted == text {
        return Outcome::Formatted;
    }
    match mode {
        Mode::Check => println!("{}", path.display()),
        Mode::Diff => print!("{}", unified_diff(path, &text, &formatted)),
        Mode::Write => {
            if let Err(e) = std::fs::write(path, &formatted) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return Outcome::Error(exit::FAILED);
            }
            eprintln!("formatted {}", path.display());
        }
    }
    Outcome::Changed
}

/// A unified diff from `old` to `new`, headed `a/PATH` and `b/PATH`.
pub fn unified_diff(path: &Path, old: &str, new: &str) -> String {
    let shown = path.display().to_string();
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string()
}

impl Mode {
    /// The mode the `--check` and `--diff` flags select.
    pub fn of(check: bool, diff: bool) -> Mode {
        match (check, diff) {
            (true, _) => Mode::Check,
            (false, true) => Mode::Diff,
            (false, false) => Mode::Write,
        }
    }
}
