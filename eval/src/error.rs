//! What can stop an evaluation (as opposed to a case that fails, which is a result).

use std::path::PathBuf;

/// Why an evaluation could not run or its files could not be read.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// No shipped prompt set has this name.
    #[error("no prompt set named `{name}`; the sets are: {known}")]
    UnknownSet {
        /// The name asked for.
        name: String,
        /// The shipped sets, comma-separated.
        known: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line of a cases or results file is not what it should be.
    #[error("{file}:{line}: {message}")]
    BadLine {
        /// The file (or set) name.
        file: String,
        /// The 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A set holds two cases with one id.
    #[error("{file}: the case id `{id}` appears twice")]
    DuplicateCase {
        /// The file (or set) name.
        file: String,
        /// The repeated id.
        id: String,
    },
    /// `--only` names a case the set does not have.
    #[error("no case `{id}` in {set}; its cases: {known}")]
    UnknownCase {
        /// The id asked for.
        id: String,
        /// The set.
        set: String,
        /// Its case ids, comma-separated.
        known: String,
    },
    /// A builder graph could not be loaded or compiled.
    #[error("graph {}: {message}", path.display())]
    Graph {
        /// The graph file.
        path: PathBuf,
        /// The diagnostics or the load error, rendered.
        message: String,
    },
}

impl EvalError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EvalError::Io {
            path: path.into(),
            source,
        }
    }
}
