//! Files: empty files, second graphs, references, prompt files (E0200, E0206, E0250–E0252).

use crate::ast::Span;
use crate::diagnostic::{codes, suggestion, Diagnostic};
use std::path::Path;

/// A file without `graph name { … }`.
pub fn no_graph() -> Diagnostic {
    Diagnostic::new(
        codes::NO_GRAPH,
        Span::new(0, 0),
        "this file declares no graph",
    )
    .label("empty")
    .help("a graph file holds `graph name { … }`")
}

/// A file that is compiled as a subgraph but declares no graph.
pub fn file_without_graph(file: &str) -> Diagnostic {
    Diagnostic::new(
        codes::NO_GRAPH,
        Span::default(),
        format!("{file} declares no graph"),
    )
}

/// A second `graph` in one file.
pub fn second_graph(span: Span, name: &str) -> Diagnostic {
    Diagnostic::new(
        codes::SECOND_GRAPH,
        span,
        format!("a second graph in one file: `{name}` would be ignored"),
    )
    .label("only a file's first graph is used")
    .help(format!(
        "move `graph {name}` into a file of its own and `use` it as a subgraph"
    ))
}

/// A `use` or subgraph path that cannot be read; `dir` is the referring file's folder.
pub fn unreadable_reference(
    span: Span,
    path: &str,
    error: impl std::fmt::Display,
    dir: &Path,
) -> Diagnostic {
    Diagnostic::new(
        codes::UNREADABLE_REFERENCE,
        span,
        format!("cannot read `{path}`: {error}"),
    )
    .label("file not found")
    .help(format!(
        "paths are relative to this file's folder ({})",
        dir.display()
    ))
}

/// `subgraph alias` where no `use … as alias` exists; `aliases` are the imported ones.
pub fn unknown_subgraph_alias(span: Span, alias: &str, aliases: &[&str]) -> Diagnostic {
    Diagnostic::new(
        codes::UNREADABLE_REFERENCE,
        span,
        format!("`{alias}` is not an imported graph"),
    )
    .label("unknown subgraph")
    .help(if aliases.is_empty() {
        format!("import it first: `use \"{alias}.ag\" as {alias}`")
    } else {
        suggestion("imports", alias, aliases.iter().copied())
    })
}

/// The compiler met a file the project did not load.
pub fn not_loaded(path: &Path) -> Diagnostic {
    Diagnostic::new(
        codes::UNREADABLE_REFERENCE,
        Span::default(),
        format!("{} was not loaded", path.display()),
    )
}

/// The compiler met an alias no file of the folder imports.
pub fn not_imported(span: Span, alias: &str) -> Diagnostic {
    Diagnostic::new(
        codes::UNREADABLE_REFERENCE,
        span,
        format!("`{alias}` is not imported"),
    )
}

/// A subgraph that failed without a diagnostic of its own.
pub fn subgraph_does_not_compile(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::UNREADABLE_REFERENCE,
        span,
        "the subgraph does not compile",
    )
}

/// A reference that closes an import cycle; `chain` names the files around it.
pub fn import_cycle(span: Span, chain: &[String]) -> Diagnostic {
    Diagnostic::new(
        codes::IMPORT_CYCLE,
        span,
        format!("import cycle: {}", chain.join(" -> ")),
    )
    .label("this reference closes the cycle")
    .help("a graph cannot contain itself; move the shared part into a third file")
}

/// `file("…")` naming a file that exists but cannot be read (`why`: not a regular file, too
/// large, not UTF-8).
pub fn unreadable_prompt_file(span: Span, path: &str, why: &str) -> Diagnostic {
    Diagnostic::new(
        codes::MISSING_PROMPT_FILE,
        span,
        format!("prompt file `{path}` cannot be read: {why}"),
    )
    .label("unreadable file")
    .help("a prompt file is a regular UTF-8 text file of at most 10 MB")
}

/// `file("…")` naming a file that does not exist; `dir` is the graph file's folder.
pub fn missing_prompt_file(span: Span, path: &str, dir: &Path) -> Diagnostic {
    Diagnostic::new(
        codes::MISSING_PROMPT_FILE,
        span,
        format!("prompt file `{path}` does not exist"),
    )
    .label("file not found")
    .help(format!(
        "paths are relative to this file's folder ({})",
        dir.display()
    ))
}

/// `file(…)` anywhere but as the whole value of `prompt name = file("…")`.
pub fn file_outside_prompt(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::FILE_OUTSIDE_PROMPT,
        span,
        "`file(…)` is read only as the whole value of a prompt",
    )
    .label("not read here")
    .help("declare `prompt name = file(\"path\")` and use `name` here")
}
