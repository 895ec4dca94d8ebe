//! # agentgraph DSL
//!
//! The `.ag` language: a pest grammar parsed into a spanned AST of our own types, static checks
//! that accumulate diagnostics (rendered by miette), and a compiler to runtime graphs.

pub mod ast;
pub mod diagnostic;
mod habits;
pub mod parse;

pub use diagnostic::{Diagnostic, Severity};
pub use parse::{parse, parse_expr, Parsed};
pub mod check;
pub mod eval;
mod fail;
pub mod functions;
pub mod registry;
pub mod template;
pub mod types;

pub use registry::Registry;
pub mod compile;
pub mod project;

pub use project::{LoadError, Project};
pub mod agents;
pub mod fmt;
pub mod viz;
