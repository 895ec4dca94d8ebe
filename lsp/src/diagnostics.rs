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
    project
        .check(reg)
        .into_iter()
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
        .collect()
}
