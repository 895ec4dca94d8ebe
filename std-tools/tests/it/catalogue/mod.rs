//! Catalogue tests on the built-in catalogue and on the real n8n catalogue
//! (`$AGENTGRAPH_N8N_CATALOGUE`; those tests skip without it, and fail under `CI=true`).

use std::sync::OnceLock;
use std::time::Instant;

use agentgraph_std_tools::catalogue::{resolve_ports, resolve_ports_strict, Catalogue, PortsSpec};
use serde_json::json;

mod builtin;
mod real;

/// The real n8n catalogue (`$AGENTGRAPH_N8N_CATALOGUE`), loaded once; `None` records a skip.
fn real() -> Option<&'static Catalogue> {
    let dir = agentgraph_test_support::n8n_catalogue()?;
    static CAT: OnceLock<Catalogue> = OnceLock::new();
    Some(CAT.get_or_init(|| {
        let t = Instant::now();
        let c = Catalogue::load_n8n_dir(dir).expect("real catalogue loads");
        eprintln!(
            "loaded real catalogue ({} types) in {:?}",
            c.len(),
            t.elapsed()
        );
        c
    }))
}

const LC: &str = "@n8n/n8n-nodes-langchain";
