//! `agentgraph validate FILE [--catalogue DIR] [--json]`: runs every workflow validator on an
//! n8n workflow file and prints located, coded findings. Exit codes: 0 no error finding, 1
//! error findings, 2 bad input (unreadable file, invalid JSON, not a workflow, bad catalogue).

use std::path::{Path, PathBuf};

use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::validate::validate as run_validators;
use agentgraph_std_tools::workflow::Workflow;
use serde_json::json;

use crate::exit;

/// The environment variable naming a real n8n catalogue directory.
pub const CATALOGUE_ENV: &str = "AGENTGRAPH_N8N_CATALOGUE";

/// Which catalogue was used, for the output.
pub(crate) struct Source {
    kind: &'static str,
    path: Option<PathBuf>,
    types: usize,
}

/// The catalogue in `dir`, else in `$AGENTGRAPH_N8N_CATALOGUE`, else the built-in one.
pub(crate) fn load_catalogue(dir: Option<PathBuf>) -> Result<(Catalogue, Source), String> {
    let dir = dir.or_else(|| {
        std::env::var_os(CATALOGUE_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    match dir {
        Some(dir) => {
            let c = Catalogue::load_n8n_dir(&dir)
                .map_err(|e| format!("cannot load the n8n catalogue: {e}"))?;
            let types = c.len();
            Ok((
                c,
                Source {
                    kind: "n8n",
                    path: Some(dir),
                    types,
                },
            ))
        }
        None => {
            let c = Catalogue::builtin()
                .map_err(|e| format!("cannot load the built-in catalogue: {e}"))?;
            let types = c.len();
            Ok((
                c,
                Source {
                    kind: "builtin",
                    path: None,
                    types,
                },
            ))
        }
    }
}

/// Runs the command; returns the exit code.
pub fn validate(file: &Path, catalogue: Option<PathBuf>, as_json: bool) -> u8 {
    let shown = file.display().to_string();
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {shown}: cannot read the file: {e}");
            return exit::USAGE;
        }
    };
    let workflow = match Workflow::from_json_str(&text) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {shown}: {e}");
            return exit::USAGE;
        }
    };
    let (catalogue, source) = match load_catalogue(catalogue) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    let report = run_validators(&workflow, &catalogue);
    if as_json {
        let mut out = report.to_json();
        out["file"] = json!(shown);
        out["catalogue"] = json!({
            "source": source.kind,
            "path": source.path.as_ref().map(|p| p.display().to_string()),
            "types": source.types,
        });
        println!("{out}");
    } else {
        match &source.path {
            Some(p) => println!(
                "catalogue: n8n node types from {} ({} types)",
                p.display(),
                source.types
            ),
            None => println!(
                "catalogue: built-in compact catalogue ({} types; pass --catalogue DIR or set \
                 {CATALOGUE_ENV} for the real n8n one)",
                source.types
            ),
        }
        print!("{}", report.render_text(&format!("{shown}: ")));
    }
    if report.has_errors() {
        exit::FAILED
    } else {
        exit::DONE
    }
}
