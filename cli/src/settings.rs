//! `agentgraph.toml`: project or user defaults for the store, the served graphs, the model
//! provider and name, and the n8n address. Precedence, highest first: a command-line flag, an
//! environment variable, the config file, the built-in default. The file is the
//! `agentgraph.toml` of the current folder or its nearest parent (a project), else
//! `agentgraph/agentgraph.toml` in the user's config folder; `$AGENTGRAPH_CONFIG` names one
//! explicitly. Relative paths in the file are relative to the file's folder.
//!
//! ```toml
//! provider = "scripted"        # AGENTGRAPH_PROVIDER
//! model = "claude-sonnet-4-5"  # ANTHROPIC_MODEL / OPENAI_MODEL, for the provider in use
//! db = ".agentgraph"           # --db, AGENTGRAPH_DB
//! graphs = "graphs"            # serve --graphs, AGENTGRAPH_GRAPHS
//! [n8n]
//! url = "http://localhost:5678" # --n8n-url, N8N_API_URL
//! ```

use crate::exit;
use clap::parser::ValueSource;
use clap::ArgMatches;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The file name searched for.
pub const FILE_NAME: &str = "agentgraph.toml";
/// Names a config file explicitly (no search).
pub const CONFIG_VAR: &str = "AGENTGRAPH_CONFIG";
/// The store folder, below `--db`.
pub const DB_VAR: &str = "AGENTGRAPH_DB";
/// The folder `serve` serves, below `--graphs`.
pub const GRAPHS_VAR: &str = "AGENTGRAPH_GRAPHS";
/// The n8n instance, below `--n8n-url`.
pub const N8N_URL_VAR: &str = "N8N_API_URL";

/// A config file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// It cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not valid TOML or holds unknown keys.
    #[error("{path} is not a valid agentgraph config: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: Box<toml::de::Error>,
    },
}

/// The `[n8n]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct N8nSection {
    url: Option<String>,
}

/// What `agentgraph.toml` may hold.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    provider: Option<String>,
    model: Option<String>,
    db: Option<PathBuf>,
    graphs: Option<PathBuf>,
    #[serde(default)]
    n8n: N8nSection,
}

/// Where an effective setting came from.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "kind", content = "name", rename_all = "lowercase")]
pub enum Source {
    /// A command-line flag.
    Flag(String),
    /// An environment variable.
    Env(String),
    /// The config file.
    File(PathBuf),
    /// The built-in default.
    Default,
    /// Not set anywhere.
    Unset,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag(n) => write!(f, "flag {n}"),
            Source::Env(n) => write!(f, "env {n}"),
            Source::File(p) => write!(f, "{}", p.display()),
            Source::Default => write!(f, "default"),
            Source::Unset => write!(f, "not set"),
        }
    }
}

/// One effective setting.
#[derive(Debug, Clone, Serialize)]
pub struct Setting {
    /// Its key in the file.
    pub key: &'static str,
    /// Its value, if any.
    pub value: Option<String>,
    /// Where the value came from.
    pub source: Source,
}

/// The settings in force for this command.
#[derive(Debug, Clone, Serialize)]
pub struct Effective {
    /// The config file used, if any.
    pub file: Option<PathBuf>,
    /// Each setting.
    pub settings: Vec<Setting>,
}

static EFFECTIVE: OnceLock<Effective> = OnceLock::new();

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The config file for a command started in `cwd`, if there is one.
pub fn find(cwd: &Path) -> Option<PathBuf> {
    if let Some(p) = env(CONFIG_VAR) {
        return Some(PathBuf::from(p));
    }
    cwd.ancestors()
        .map(|d| d.join(FILE_NAME))
        .find(|p| p.is_file())
        .or_else(|| {
            dirs::config_dir()
                .map(|d| d.join("agentgraph").join(FILE_NAME))
                .filter(|p| p.is_file())
        })
}

fn load(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        source: Box::new(e),
    })
}

/// Whether `arg` of `matches` was given on the command line.
fn from_flag(matches: Option<&ArgMatches>, arg: &str) -> bool {
    matches
        .and_then(|m| m.try_get_raw(arg).ok().flatten().and(m.value_source(arg)))
        .is_some_and(|s| s == ValueSource::CommandLine)
}

/// Resolves a path setting: flag, then `var`, then the file (relative to its folder).
fn path_setting(
    key: &'static str,
    flag: Option<(&str, &Path)>,
    var: &str,
    file: Option<(&Path, Option<&PathBuf>)>,
    default: Option<&Path>,
) -> (Option<PathBuf>, Setting) {
    let (value, source) = if let Some((name, v)) = flag {
        (Some(v.to_path_buf()), Source::Flag(name.into()))
    } else if let Some(v) = env(var) {
        (Some(PathBuf::from(v)), Source::Env(var.into()))
    } else if let Some((path, Some(v))) = file {
        let dir = path.parent().unwrap_or(Path::new("."));
        (Some(dir.join(v)), Source::File(path.to_path_buf()))
    } else if let Some(d) = default {
        (Some(d.to_path_buf()), Source::Default)
    } else {
        (None, Source::Unset)
    };
    let shown = value.as_ref().map(|v| v.display().to_string());
    (
        value,
        Setting {
            key,
            value: shown,
            source,
        },
    )
}

/// Sets `var` from the file unless the environment already has it; says where it came from.
fn env_setting(key: &'static str, var: &str, file: Option<(&Path, Option<&String>)>) -> Setting {
    if let Some(v) = env(var) {
        return Setting {
            key,
            value: Some(v),
            source: Source::Env(var.into()),
        };
    }
    match file {
        Some((path, Some(v))) => {
            std::env::set_var(var, v);
            Setting {
                key,
                value: Some(v.clone()),
                source: Source::File(path.to_path_buf()),
            }
        }
        _ => Setting {
            key,
            value: None,
            source: Source::Unset,
        },
    }
}

/// Applies the config file to the parsed command line: fills `--db` and `serve --graphs`
/// unless given, and sets the environment variables of the other settings unless they are
/// set. Call it before any thread starts (it changes the environment).
pub fn apply(matches: &ArgMatches, cli: &mut crate::Cli) -> Result<(), ConfigError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let file = find(&cwd);
    let config = match &file {
        Some(p) => load(p)?,
        None => FileConfig::default(),
    };
    let at = |v| file.as_deref().map(|p| (p, v));
    let mut settings = Vec::new();

    let provider = env_setting(
        "provider",
        agentgraph_dsl::agents::model::PROVIDER_VAR,
        at(config.provider.as_ref()),
    );
    settings.push(provider);
    // The model name goes to the variable of the provider `auto` blocks resolve to.
    let model_var = agentgraph_dsl::agents::model::auto_provider(env)
        .ok()
        .and_then(|p| match p {
            "anthropic" => Some("ANTHROPIC_MODEL"),
            "openai" => Some("OPENAI_MODEL"),
            _ => None,
        });
    settings.push(match model_var {
        Some(var) => env_setting("model", var, at(config.model.as_ref())),
        None => Setting {
            key: "model",
            value: config.model.clone(),
            source: match (&file, &config.model) {
                (Some(p), Some(_)) => Source::File(p.clone()),
                _ => Source::Unset,
            },
        },
    });

    let db_flag = from_flag(Some(matches), "db").then_some(("--db", cli.db.as_path()));
    let (db, s) = path_setting(
        "db",
        db_flag,
        DB_VAR,
        file.as_deref().map(|p| (p, config.db.as_ref())),
        Some(cli.db.as_path()),
    );
    if let Some(db) = db {
        cli.db = db;
    }
    settings.push(s);

    let serve = matches.subcommand_matches("serve");
    let graphs_flag = match &cli.cmd {
        crate::Cmd::Serve { graphs, .. } if from_flag(serve, "graphs") => {
            Some(("--graphs", graphs.as_path()))
        }
        _ => None,
    };
    let (graphs, s) = path_setting(
        "graphs",
        graphs_flag,
        GRAPHS_VAR,
        file.as_deref().map(|p| (p, config.graphs.as_ref())),
        Some(Path::new("graphs")),
    );
    if let (crate::Cmd::Serve { graphs: g, .. }, Some(v)) = (&mut cli.cmd, graphs) {
        *g = v;
    }
    settings.push(s);

    settings.push(env_setting(
        "n8n.url",
        N8N_URL_VAR,
        at(config.n8n.url.as_ref()),
    ));
    let _ = EFFECTIVE.set(Effective { file, settings });
    Ok(())
}

/// The graphs folder in force (`graphs` of agentgraph.toml, `$AGENTGRAPH_GRAPHS`, default
/// `graphs`), as `apply` resolved it.
pub fn graphs_folder() -> Option<PathBuf> {
    EFFECTIVE
        .get()?
        .settings
        .iter()
        .find(|s| s.key == "graphs")?
        .value
        .as_ref()
        .map(PathBuf::from)
}

/// `agentgraph config`: the effective settings and where each came from.
pub fn show(json: bool) -> u8 {
    let Some(effective) = EFFECTIVE.get() else {
        return crate::graph::fail("the settings were not resolved", exit::FAILED);
    };
    if json {
        return match serde_json::to_string(effective) {
            Ok(s) => {
                println!("{s}");
                exit::DONE
            }
            Err(e) => crate::graph::fail(e, exit::FAILED),
        };
    }
    match &effective.file {
        Some(p) => println!("config file: {}", p.display()),
        None => println!("config file: none ({FILE_NAME} in this folder or a parent, or in the user config folder)"),
    }
    let width = effective
        .settings
        .iter()
        .map(|s| s.key.len())
        .max()
        .unwrap_or(0);
    for s in &effective.settings {
        println!(
            "{:<width$}  {}  ({})",
            s.key,
            s.value.as_deref().unwrap_or("-"),
            s.source
        );
    }
    exit::DONE
}
