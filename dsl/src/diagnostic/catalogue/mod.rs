//! One constructor per diagnostic, by topic: call sites say
//! `diag::unknown_channel(span, name, &declared)` and never spell a code or a message.
//! Messages, labels and hints are pinned by the golden fixtures.

mod declarations;
mod edges;
mod expressions;
mod files;
mod habits;
mod nodes;
mod shape;
mod syntax;

pub use declarations::*;
pub use edges::*;
pub use expressions::*;
pub use files::*;
pub use habits::*;
pub use nodes::*;
pub use shape::*;
pub use syntax::*;

/// A word with its indefinite article: `a string`, `an int`, an `` `interrupt` ``.
fn a(word: impl std::fmt::Display) -> String {
    let w = word.to_string();
    let first = w.trim_start_matches('`').chars().next().unwrap_or('x');
    if "aeiouAEIOU".contains(first) {
        format!("an {w}")
    } else {
        format!("a {w}")
    }
}
