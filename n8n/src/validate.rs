//! Validating an n8n workflow file: every structure and configuration rule, with located,
//! coded findings (the `agentgraph validate` command).

use crate::catalogue::{CatalogueLoadError, CatalogueSource, LoadedCatalogue};
use agentgraph_std_tools::validate::{validate as run_validators, Report};
use agentgraph_std_tools::workflow::Workflow;
use serde_json::{json, Value};
use std::path::Path;

/// Why a file could not be validated (bad input, not findings).
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    /// The file cannot be read.
    #[error("{file}: cannot read the file: {source}")]
    Read {
        /// The file as given.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a workflow.
    #[error("{file}: {message}")]
    NotAWorkflow {
        /// The file as given.
        file: String,
        /// Why it does not parse.
        message: String,
    },
    /// The catalogue could not be loaded.
    #[error(transparent)]
    Catalogue(#[from] CatalogueLoadError),
}

/// The findings on one file, and the catalogue they were checked against.
pub struct Validation {
    /// The file as given.
    pub file: String,
    /// The findings.
    pub report: Report,
    /// The catalogue used.
    pub catalogue: LoadedCatalogue,
}

/// Validates the workflow in `file` against the catalogue of `source`.
pub fn validate_file(file: &Path, source: &CatalogueSource) -> Result<Validation, ValidateError> {
    let shown = file.display().to_string();
    let text = std::fs::read_to_string(file).map_err(|source| ValidateError::Read {
        file: shown.clone(),
        source,
    })?;
    let workflow = Workflow::from_json_str(&text).map_err(|e| ValidateError::NotAWorkflow {
        file: shown.clone(),
        message: e.to_string(),
    })?;
    let catalogue = source.load()?;
    let report = run_validators(&workflow, &catalogue.catalogue);
    Ok(Validation {
        file: shown,
        report,
        catalogue,
    })
}

impl Validation {
    /// Whether any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.report.has_errors()
    }

    /// The report as JSON, with `file` and `catalogue: {source, path, types}` (`source`:
    /// `n8n`, `npm`, `instance` or `builtin`).
    pub fn to_json(&self) -> Value {
        let mut out = self.report.to_json();
        out["file"] = json!(self.file);
        out["catalogue"] = json!({
            "source": self.catalogue.kind(),
            "path": self.catalogue.origin.path().map(|p| p.display().to_string()),
            "types": self.catalogue.catalogue.len(),
        });
        out
    }

    /// The report for people: which catalogue, then `file: node "X" [CODE] severity: message`
    /// lines.
    pub fn to_text(&self) -> String {
        format!(
            "catalogue: {}\n{}",
            self.catalogue.describe(),
            self.report.render_text(&format!("{}: ", self.file))
        )
    }
}
