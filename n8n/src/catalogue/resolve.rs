//! The order in which a catalogue is chosen, step by step, so that a command can say which one
//! it uses and why (`agentgraph catalogue show`).

use super::store::{data_dir, DataDirError, Store};
use super::{CatalogueSource, Origin, CATALOGUE_ENV};
use std::path::PathBuf;

/// What the automatic order reads from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// `$AGENTGRAPH_N8N_CATALOGUE` (unset or empty: `None`).
    pub env_dir: Option<PathBuf>,
    /// agentgraph's data folder, or why there is none.
    pub data_dir: Result<PathBuf, DataDirError>,
}

impl Lookup {
    /// From this process's environment.
    pub fn from_env() -> Self {
        Lookup {
            env_dir: std::env::var_os(CATALOGUE_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            data_dir: data_dir(),
        }
    }

    /// With `data_dir` as the data folder.
    pub fn new(env_dir: Option<PathBuf>, data_dir: impl Into<PathBuf>) -> Self {
        Lookup {
            env_dir,
            data_dir: Ok(data_dir.into()),
        }
    }
}

/// One step of the order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `--catalogue DIR`.
    Flag,
    /// `$AGENTGRAPH_N8N_CATALOGUE`.
    Env,
    /// The catalogue fetched from npm.
    Npm,
    /// The catalogue saved from an n8n instance.
    Instance,
    /// The built-in catalogue.
    Builtin,
}

impl Step {
    /// How people know the step.
    pub fn label(self) -> &'static str {
        match self {
            Step::Flag => "--catalogue DIR",
            Step::Env => "$AGENTGRAPH_N8N_CATALOGUE",
            Step::Npm => "fetched from npm",
            Step::Instance => "saved from an n8n instance",
            Step::Builtin => "built-in",
        }
    }
}

/// What a step found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepState {
    /// This step's catalogue is the one used.
    Used,
    /// There is a catalogue, but an earlier step's is used.
    Shadowed,
    /// Nothing there.
    Absent,
    /// Something there that cannot be read (it is passed over).
    Broken,
}

/// One step as inspected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepReport {
    /// The step.
    pub step: Step,
    /// What it found.
    pub state: StepState,
    /// Where it looked and what it saw.
    pub note: String,
}

/// The catalogue chosen, and every step of the order as inspected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The catalogue chosen.
    pub origin: Origin,
    /// Each step in order.
    pub steps: Vec<StepReport>,
}

impl Resolution {
    /// The line commands print on start: `catalogue: …` ([`Origin::describe`] with the count
    /// known without loading).
    pub fn start_line(&self) -> String {
        format!(
            "catalogue: {}",
            self.origin.describe(self.origin.known_types())
        )
    }
}

impl CatalogueSource {
    /// Which catalogue this source means with `lookup` as the environment: for
    /// [`CatalogueSource::Auto`], the first of `$AGENTGRAPH_N8N_CATALOGUE`, the fetched
    /// catalogue, the instance's, the built-in one (a stored catalogue whose `SOURCE.json`
    /// cannot be read is passed over).
    pub fn resolve_with(&self, lookup: &Lookup) -> Resolution {
        if *self == CatalogueSource::Builtin {
            return Resolution {
                origin: Origin::Builtin,
                steps: vec![StepReport {
                    step: Step::Builtin,
                    state: StepState::Used,
                    note: "asked for".into(),
                }],
            };
        }
        let flag = match self {
            CatalogueSource::Dir(d) => Found::Yes(Origin::Dir(d.clone()), d.display().to_string()),
            _ => Found::No("not given".into()),
        };
        let env = match &lookup.env_dir {
            Some(d) => Found::Yes(Origin::Env(d.clone()), d.display().to_string()),
            None => Found::No("not set".into()),
        };
        let (npm, instance) = match &lookup.data_dir {
            Ok(dir) => stored(&Store::new(dir)),
            Err(e) => (Found::No(e.to_string()), Found::No(e.to_string())),
        };
        let builtin = Found::Yes(Origin::Builtin, "always there".into());
        let mut origin = None;
        let steps = [
            (Step::Flag, flag),
            (Step::Env, env),
            (Step::Npm, npm),
            (Step::Instance, instance),
            (Step::Builtin, builtin),
        ]
        .into_iter()
        .map(|(step, found)| {
            let (state, note) = match found {
                Found::Yes(o, note) if origin.is_none() => {
                    origin = Some(o);
                    (StepState::Used, note)
                }
                Found::Yes(_, note) => (StepState::Shadowed, note),
                Found::No(note) => (StepState::Absent, note),
                Found::Broken(note) => (StepState::Broken, note),
            };
            StepReport { step, state, note }
        })
        .collect();
        Resolution {
            origin: origin.unwrap_or(Origin::Builtin),
            steps,
        }
    }
}

enum Found {
    Yes(Origin, String),
    No(String),
    Broken(String),
}

/// The npm and instance steps of a data folder.
fn stored(store: &Store) -> (Found, Found) {
    let npm_dir = store.npm_dir();
    let npm = match store.npm() {
        Ok(Some(source)) => {
            let note = format!(
                "{}: {}, fetched {}",
                npm_dir.display(),
                source.packages_line(),
                source.fetched_at
            );
            Found::Yes(
                Origin::Npm {
                    dir: npm_dir,
                    source,
                },
                note,
            )
        }
        Ok(None) => Found::No(format!(
            "{}: none ('agentgraph catalogue fetch' fetches it)",
            npm_dir.display()
        )),
        Err(e) => Found::Broken(e.to_string()),
    };
    let file = store.instance_file();
    let instance = match store.instance() {
        Ok(Some(source)) => {
            let note = format!(
                "{}: {}, saved {}",
                file.display(),
                source.url,
                source.fetched_at
            );
            Found::Yes(Origin::Instance { file, source }, note)
        }
        Ok(None) => Found::No(format!(
            "{}: none ('agentgraph catalogue from-n8n URL' saves it)",
            store.instance_dir().display()
        )),
        Err(e) => Found::Broken(e.to_string()),
    };
    (npm, instance)
}
