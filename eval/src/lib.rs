//! Evaluating the n8n workflow builder: run a builder graph over a set of prompts and score
//! every workflow it builds, deterministically (`agentgraph eval`).
//!
//! - [`cases`]: the prompt sets shipped in `eval/prompts/` (and cases files): a prompt, its
//!   source, a checklist of node types and connections, and for workflows that run without
//!   credentials an input and the output expected;
//! - [`run`]: one case on a fresh thread of a compiled graph (in-memory checkpoints), its event
//!   stream metered ([`meter`]), cancelled at its time or token budget;
//! - [`score`]: non-empty, `validate_structure` and `validate_configuration` findings by rule,
//!   the checklist; [`n8n_check`]: whether a running n8n accepts the workflow and, for offline
//!   cases, executes it with the expected output;
//! - [`runner`]: every case on every graph, a few at a time, into [`row::Row`]s;
//! - [`summary`], [`compare`], [`html`]: the per-graph table, two result files side by side,
//!   a page with each workflow drawn.
//!
//! Scores are only as good as the model: a scripted model proves the plumbing, never the
//! builder's quality.
//!
//! ```
//! use agentgraph_eval::cases::shipped_set;
//! let quick = shipped_set("quick").unwrap();
//! assert!((6..=10).contains(&quick.len()));
//! ```

pub mod cases;
pub mod compare;
pub mod html;
pub mod instance;
pub mod meter;
pub mod n8n_check;
pub mod row;
pub mod run;
pub mod runner;
pub mod score;
pub mod summary;

pub use row::Row;
pub use run::{BuilderGraph, Limits, Status};
pub use runner::{evaluate, evaluate_pairs, model_label, EvalOptions};

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
