//! `agentgraph validate FILE [--catalogue DIR] [--json]`: runs every workflow validator on an
//! n8n workflow file ([`agentgraph_n8n::validate_file`]) against the catalogue the automatic
//! order picks (or `--catalogue DIR`) and prints located, coded findings.
//! Exit codes: 0 no error finding, 1 error findings, 2 bad input (unreadable file, invalid
//! JSON, not a workflow, bad catalogue).

use crate::exit;
use agentgraph_n8n::{validate_file, CatalogueSource};
use std::path::Path;

/// Runs the command; returns the exit code.
pub fn validate(file: &Path, catalogue: CatalogueSource, as_json: bool) -> u8 {
    let v = match validate_file(file, &catalogue) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    if as_json {
        println!("{}", v.to_json());
    } else {
        print!("{}", v.to_text());
    }
    if v.has_errors() {
        exit::FAILED
    } else {
        exit::DONE
    }
}
