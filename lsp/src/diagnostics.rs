//! The check's diagnostics of one open document, as LSP diagnostics.

use crate::position::LineIndex;
use agentgraph_dsl::{Project, Registry, Severity};
use lsp_types::{
    Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Url,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// How a file is named among the open documents and in a project: canonical when it exists.
pub fn file_key(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Checks the document `text` at `path`: referenced files come from `open` (unsaved texts by
/// [`file_key`]) before the disk.
pub fn check(
    reg: &Registry,
    uri: &Url,
    path: &Path,
    text: &str,
    open: &HashMap<PathBuf, String>,
) -> Vec<Diagnostic> {
    let read = |p: &Path| match open.get(p) {
        Some(t) => Ok(t.clone()),
        None => std::fs::read_to_string(p),
    };
    let project = Project::from_source_with(path, text.to_string(), &read);
    let Some(root) = project.root_source() else {
        return Vec::new();
    };
    let index = LineIndex::new(text);
    let all = project.check(reg);
    let mut out: Vec<Diagnostic> = all
        .iter()
        .filter(|d| d.file == root.name)
        .map(|d| {
            let mut message = d.message.clone();
            if !d.label.is_empty() && d.label != d.message {
                message.push_str(&format!(" ({})", d.label));
            }
            if let Some(help) = &d.help {
                message.push_str(&format!("\nhelp: {help}"));
            }
            let related: Vec<DiagnosticRelatedInformation> = d
                .labels
                .iter()
                .map(|l| DiagnosticRelatedInformation {
                    location: Location::new(uri.clone(), index.range(l.span)),
                    message: l.message.clone(),
                })
                .collect();
            Diagnostic {
                range: index.range(d.span),
                severity: Some(match d.severity {
                    Severity::Error => DiagnosticSeverity::ERROR,
                    Severity::Warning => DiagnosticSeverity::WARNING,
                }),
                code: Some(NumberOrString::String(d.code.to_string())),
                source: Some("agentgraph".into()),
                message,
                related_information: (!related.is_empty()).then_some(related),
                ..Diagnostic::default()
            }
        })
        .collect();
    out.extend(referenced_errors(&project, &all, path, &index));
    out
}

/// One error at each reference to a file that has errors: its first error and how many more.
fn referenced_errors(
    project: &Project,
    all: &[agentgraph_dsl::Diagnostic],
    path: &Path,
    index: &LineIndex<'_>,
) -> Vec<Diagnostic> {
    let (Some(ast), Some(dir)) = (
        project.root_source().and_then(|r| r.ast.as_ref()),
        path.parent(),
    ) else {
        return Vec::new();
    };
    agentgraph_dsl::project::references(ast)
        .into_iter()
        .filter_map(|lit| {
            let source = project.sources.get(&file_key(&dir.join(&lit.value)))?;
            if source.path == project.root {
                return None;
            }
            let errors: Vec<&agentgraph_dsl::Diagnostic> = all
                .iter()
                .filter(|d| d.file == source.name && d.is_error())
                .collect();
            let first = errors.first()?;
            let (line, column) =
                agentgraph_dsl::diagnostic::line_col(&source.text, first.span.start);
            let more = match errors.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            Some(Diagnostic {
                range: index.range(lit.span),
                severity: Some(DiagnosticSeverity::ERROR),
                code: Some(NumberOrString::String(first.code.to_string())),
                source: Some("agentgraph".into()),
                message: format!(
                    "{} has errors: {} (line {line}, column {column}){more}",
                    lit.value, first.message
                ),
                ..Diagnostic::default()
            })
        })
        .collect()
}
