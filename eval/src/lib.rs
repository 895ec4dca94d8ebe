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
mod error;
pub mod html;
pub mod meter;
pub mod n8n_check;
pub mod row;
pub mod run;
pub mod runner;
pub mod score;
pub mod summary;

pub use error::EvalError;
pub use row::Row;
pub use run::{BuilderGraph, Limits, Status};
pub use runner::{evaluate, model_label, EvalOptions};
