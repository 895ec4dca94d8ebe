//! # agentgraph DSL
//!
//! The `.ag` language as a pipeline: [`parse`](mod@parse) (a pest grammar into a spanned [`ast`]),
//! [`check`] (static checks that accumulate [`diagnostic`]s, each built by the
//! [`diagnostic::catalogue`]), and [`compile`] (to runtime graphs). A [`Project`] runs the
//! pipeline over a graph file and the files it references, checking each graph once.
//! [`fmt`] formats files and [`viz`] draws them.

pub mod agents;
pub mod ast;
pub mod check;
pub mod code;
pub mod compile;
pub mod diagnostic;
pub mod eval;
pub mod extensions;
mod fail;
pub mod fmt;
pub mod functions;
mod habits;
pub mod parse;
pub mod project;
pub mod registry;
pub mod template;
pub mod types;
pub mod viz;

pub use compile::Compiled;
pub use diagnostic::{Diagnostic, Severity};
pub use parse::{parse, parse_expr, Parsed};
pub use project::{LoadError, Project};
pub use registry::{Registry, RegistryFactory};
