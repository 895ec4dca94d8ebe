//! `agentgraph catalogue fetch|from-n8n|show`: store the real n8n node-type catalogue in the
//! data folder (from npm, or from a running n8n) and say which catalogue commands use; and the
//! `--catalogue DIR` option of `chat`, `serve` and `validate`.

use crate::exit;
use crate::graph::fail;
use agentgraph_n8n::catalogue::fetch::{fetch, npm_registry, FetchOptions};
use agentgraph_n8n::catalogue::instance::save_from_n8n;
use agentgraph_n8n::catalogue::store::Store;
use agentgraph_n8n::catalogue::{StepState, CATALOGUE_ENV};
use agentgraph_n8n::CatalogueSource;
use serde_json::json;
use std::path::PathBuf;

/// The `--catalogue DIR` option.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct CatalogueOpt {
    /// A directory holding n8n's nodes.json files (n8n-nodes-base/, n8n-nodes-langchain/),
    /// used instead of $AGENTGRAPH_N8N_CATALOGUE, the fetched catalogue, the instance's, the
    /// built-in one (in that order; `agentgraph catalogue show` says which).
    #[arg(long, value_name = "DIR")]
    pub catalogue: Option<PathBuf>,
}

impl CatalogueOpt {
    /// The source this option means.
    pub fn source(&self) -> CatalogueSource {
        CatalogueSource::dir_or_auto(self.catalogue.clone())
    }
}

/// `agentgraph catalogue …`.
#[derive(clap::Subcommand)]
pub enum CatalogueCmd {
    /// Fetch n8n's node types from the npm registry (the packages n8n-nodes-base and
    /// @n8n/n8n-nodes-langchain) into the data folder, where chat, serve and validate find
    /// them. The registry is $NPM_CONFIG_REGISTRY,
    /// else `npm config get registry`; the data folder $AGENTGRAPH_DATA_DIR, else
    /// $XDG_DATA_HOME/agentgraph, else ~/.local/share/agentgraph.
    Fetch {
        /// A dist-tag of the node packages (each at its own), or an n8n version such as 1.123.0
        /// (the node packages that release ships).
        #[arg(long, default_value = "latest")]
        version: String,
    },
    /// Save the node types of a running n8n (community nodes included) into the data folder;
    /// used when no catalogue was fetched from npm.
    #[command(name = "from-n8n")]
    FromN8n {
        /// The instance's address, e.g. http://localhost:5678.
        url: String,
        /// The login's email (default: $N8N_EMAIL).
        #[arg(long)]
        email: Option<String>,
        /// The login's password (default: $N8N_PASSWORD).
        #[arg(long)]
        password: Option<String>,
    },
    /// Which catalogue chat, serve and validate would use, and why.
    #[command(alias = "status")]
    Show {
        #[command(flatten)]
        opt: CatalogueOpt,
    },
}

/// Runs a `catalogue` command; returns the exit code.
pub async fn run(cmd: CatalogueCmd, as_json: bool) -> u8 {
    match cmd {
        CatalogueCmd::Fetch { version } => fetch_cmd(version, as_json).await,
        CatalogueCmd::FromN8n {
            url,
            email,
            password,
        } => from_n8n(&url, email, password, as_json).await,
        CatalogueCmd::Show { opt } => show(&opt, as_json),
    }
}

fn store() -> Result<Store, u8> {
    Store::from_env().map_err(|e| fail(e, exit::USAGE))
}

/// Says that `$AGENTGRAPH_N8N_CATALOGUE`, when set, comes before what was just stored.
fn note_env_first() {
    if std::env::var_os(CATALOGUE_ENV).is_some_and(|v| !v.is_empty()) {
        eprintln!("note: ${CATALOGUE_ENV} is set and comes first; unset it to use this catalogue");
    }
}

async fn fetch_cmd(version: String, as_json: bool) -> u8 {
    let registry = match npm_registry() {
        Ok(r) => r,
        Err(e) => return fail(e, exit::USAGE),
    };
    let store = match store() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let progress = move |step: &str| {
        if !as_json {
            eprintln!("{step}…");
        }
    };
    let opts = FetchOptions { registry, version };
    match fetch(&store, &opts, &progress).await {
        Ok(source) => {
            let dir = store.npm_dir();
            if as_json {
                println!("{}", json!({"dir": dir, "source": source}));
            } else {
                let release = source
                    .n8n_version
                    .as_ref()
                    .map(|v| format!(" (n8n {v})"))
                    .unwrap_or_default();
                println!(
                    "fetched {}{release}: {} node types into {}",
                    source.packages_line(),
                    source.node_types,
                    dir.display()
                );
                note_env_first();
            }
            exit::DONE
        }
        Err(e) => fail(e, exit::FAILED),
    }
}

/// `value`, else the environment variable `var`, else a usage error naming `flag`.
fn flag_or_env(value: Option<String>, var: &str, flag: &str) -> Result<String, u8> {
    value
        .or_else(|| std::env::var(var).ok())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| fail(format!("give {flag} or set {var}"), exit::USAGE))
}

async fn from_n8n(url: &str, email: Option<String>, password: Option<String>, as_json: bool) -> u8 {
    let (email, password) = match (
        flag_or_env(email, "N8N_EMAIL", "--email"),
        flag_or_env(password, "N8N_PASSWORD", "--password"),
    ) {
        (Ok(e), Ok(p)) => (e, p),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let store = match store() {
        Ok(s) => s,
        Err(code) => return code,
    };
    match save_from_n8n(&store, url, &email, &password).await {
        Ok(source) => {
            let file = store.instance_file();
            if as_json {
                println!("{}", json!({"file": file, "source": source}));
            } else {
                println!(
                    "saved {} node types of {} into {}",
                    source.node_types,
                    source.url,
                    file.display()
                );
                note_env_first();
                if matches!(store.npm(), Ok(Some(_))) {
                    eprintln!(
                        "note: the catalogue fetched from npm comes first; remove {} to use this one",
                        store.npm_dir().display()
                    );
                }
            }
            exit::DONE
        }
        Err(e) => fail(e, exit::FAILED),
    }
}

fn show(opt: &CatalogueOpt, as_json: bool) -> u8 {
    let resolution = opt.source().resolve();
    let state = |s: StepState| match s {
        StepState::Used => "used",
        StepState::Shadowed => "shadowed",
        StepState::Absent => "none",
        StepState::Broken => "broken",
    };
    if as_json {
        let origin = &resolution.origin;
        let steps: Vec<_> = resolution
            .steps
            .iter()
            .map(|s| json!({"step": s.step.label(), "state": state(s.state), "note": s.note}))
            .collect();
        println!(
            "{}",
            json!({
                "catalogue": {
                    "source": origin.kind(),
                    "path": origin.path(),
                    "types": origin.known_types(),
                    "description": origin.describe(origin.known_types()),
                },
                "steps": steps,
            })
        );
        return exit::DONE;
    }
    println!("{}", resolution.start_line());
    println!("order:");
    for (i, s) in resolution.steps.iter().enumerate() {
        println!(
            "  {}. {:<28} {:<9} {}",
            i + 1,
            s.step.label(),
            state(s.state),
            s.note
        );
    }
    exit::DONE
}
