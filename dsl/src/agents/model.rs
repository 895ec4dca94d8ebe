//! Building chat models from `model` declarations.
//!
//! ```text
//! model main = anthropic { model: "claude-sonnet-4-5", max_tokens: 4096 }
//! model local = openai { model: env("OPENAI_MODEL", "llama3.1"), base_url: env("OPENAI_BASE_URL") }
//! model demo = scripted { script: "scripts/demo.json" }
//! model any = auto { anthropic: "claude-sonnet-4-5", openai: "gpt-4o-mini", script: "scripts/demo.json" }
//! ```
//!
//! `auto` picks the provider from the environment: `AGENTGRAPH_PROVIDER`
//! (`anthropic`, `openai` or `scripted`) when set, else Anthropic when `ANTHROPIC_API_KEY` is
//! set, else OpenAI (or a compatible server) when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set.
//! With none of them it fails with a message saying what to set. `OPENAI_MODEL` and
//! `ANTHROPIC_MODEL` override the model names of an `auto` block.
//!
//! Every HTTP model block may set `api_key` (read with `env(…)`; a literal key is an error),
//! `base_url`, `max_tokens`, `temperature` and `pricing` (`{input, output, cache_read,
//! cache_write}` in US dollars per million tokens). Without `api_key`, the key comes from the
//! SDK variable (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`). Other options are an error (E0243).
//!
//! Commands that compile a graph only to read its threads (`state`, `history`, `update`) call
//! [`defer_model_errors`]: a model that cannot be built (no provider configured, no key) then
//! becomes a placeholder that fails only if it is called, with the same message.

use super::const_value;
use crate::ast::ModelDecl;
use agentgraph_agents::models::anthropic::AnthropicModel;
use agentgraph_agents::models::openai::OpenAiModel;
use agentgraph_agents::models::scripted::ScriptedModel;
use agentgraph_agents::models::{CallContext, ModelRequest, ModelResponse};
use agentgraph_agents::models::{ChatModel, ModelError, Pricing};
use async_trait::async_trait;
use serde_json::Value;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

static DEFER_MODEL_ERRORS: AtomicBool = AtomicBool::new(false);

/// From now on, in this process, a model block that cannot be built (no provider configured,
/// a missing key) compiles to a placeholder that fails when called, instead of failing the
/// compilation. For commands that only read a graph's threads.
pub fn defer_model_errors() {
    DEFER_MODEL_ERRORS.store(true, Ordering::Relaxed);
}

/// A model that could not be built; every call fails with why.
struct UnavailableModel {
    name: String,
    reason: String,
}

#[async_trait]
impl ChatModel for UnavailableModel {
    fn name(&self) -> String {
        format!("unavailable/{}", self.name)
    }

    async fn complete(
        &self,
        _req: &ModelRequest,
        _ctx: &CallContext,
    ) -> Result<ModelResponse, ModelError> {
        Err(ModelError::Config(format!(
            "model `{}` is not available: {}",
            self.name, self.reason
        )))
    }
}

/// The environment variable that forces the provider of `auto` model blocks.
pub const PROVIDER_VAR: &str = "AGENTGRAPH_PROVIDER";

/// A directory where scripted models save their per-thread cursors
/// (`<dir>/<script file stem>.json`), so a resumed thread continues its script. The CLI sets
/// it to `<db>/scripted`.
pub const SCRIPT_STATE_VAR: &str = "AGENTGRAPH_SCRIPT_STATE";

/// A model declaration's options, evaluated.
struct Options<'a> {
    decl: &'a ModelDecl,
}

impl Options<'_> {
    fn get(&self, key: &str) -> Result<Option<Value>, String> {
        self.decl
            .options
            .get(key)
            .map(const_value)
            .transpose()
            .map(|v| v.filter(|v| !v.is_null()))
    }

    fn text(&self, key: &str) -> Result<Option<String>, String> {
        Ok(self.get(key)?.and_then(|v| v.as_str().map(str::to_owned)))
    }
}

fn env(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.trim().is_empty())
}

/// Which provider an `auto` block resolves to in this environment, or what to set.
pub fn auto_provider(lookup: impl Fn(&str) -> Option<String>) -> Result<&'static str, String> {
    if let Some(p) = lookup(PROVIDER_VAR) {
        return match p.as_str() {
            "anthropic" => Ok("anthropic"),
            "openai" => Ok("openai"),
            "scripted" => Ok("scripted"),
            other => Err(format!(
                "{PROVIDER_VAR}={other} is not a provider; use anthropic, openai or scripted"
            )),
        };
    }
    if lookup("ANTHROPIC_API_KEY").is_some() {
        return Ok("anthropic");
    }
    if lookup("OPENAI_API_KEY").is_some() || lookup("OPENAI_BASE_URL").is_some() {
        return Ok("openai");
    }
    Err("no model provider is configured. Set one of:\n  \
         ANTHROPIC_API_KEY=…                         (Anthropic)\n  \
         OPENAI_API_KEY=…                            (OpenAI)\n  \
         OPENAI_BASE_URL=http://localhost:11434/v1   (an OpenAI-compatible server: Ollama, \
         vLLM, llama.cpp; OPENAI_MODEL picks the model)\n\
         or try the scripted offline demo (canned answers): AGENTGRAPH_PROVIDER=scripted"
        .into())
}

/// The model a `model` declaration describes. Declarations with the same provider, options and
/// folder share one instance in a process (so the nodes of a graph, and the graphs of a
/// multi-graph project, share one HTTP client, and one scripted model plays one script).
pub fn build_model(m: &ModelDecl, base_dir: &Path) -> Result<Arc<dyn ChatModel>, String> {
    match build_cached(m, base_dir) {
        Err(reason) if DEFER_MODEL_ERRORS.load(Ordering::Relaxed) => {
            Ok(Arc::new(UnavailableModel {
                name: m.name.name.clone(),
                reason,
            }))
        }
        other => other,
    }
}

fn build_cached(m: &ModelDecl, base_dir: &Path) -> Result<Arc<dyn ChatModel>, String> {
    static MODELS: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, Arc<dyn ChatModel>>>,
    > = std::sync::OnceLock::new();
    let opts = Options { decl: m };
    let mut evaluated = serde_json::Map::new();
    for (key, _) in &m.options.entries {
        evaluated.insert(
            key.name.clone(),
            opts.get(&key.name)?.unwrap_or(Value::Null),
        );
    }
    let provider = match m.provider.name.as_str() {
        "auto" => auto_provider(env)?.to_string(),
        p => p.to_string(),
    };
    let key = format!(
        "{}|{provider}|{}|{:?}",
        base_dir.display(),
        Value::Object(evaluated),
        std::env::var_os(SCRIPT_STATE_VAR)
    );
    let cache = MODELS.get_or_init(Default::default);
    if let Some(m) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(m.clone());
    }
    let model = build_new(m, base_dir)?;
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, model.clone());
    Ok(model)
}

fn build_new(m: &ModelDecl, base_dir: &Path) -> Result<Arc<dyn ChatModel>, String> {
    let opts = Options { decl: m };
    let (provider, model_name) = match m.provider.name.as_str() {
        "auto" => {
            let p = auto_provider(env)?;
            let name = match p {
                "anthropic" => env("ANTHROPIC_MODEL").or(opts.text("anthropic")?),
                "openai" => env("OPENAI_MODEL").or(opts.text("openai")?),
                _ => None,
            };
            if p != "scripted" && name.is_none() {
                return Err(format!(
                    "model `{}` picked {p} from the environment but names no {p} model; add \
                     `{p}: \"…\"` to the block or set {}_MODEL",
                    m.name.name,
                    p.to_uppercase()
                ));
            }
            (p, name.unwrap_or_default())
        }
        other => (other, opts.text("model")?.unwrap_or_default()),
    };
    let max_tokens = opts
        .get("max_tokens")?
        .and_then(|v| v.as_u64())
        .map(|n| n.min(u64::from(u32::MAX)) as u32);
    let temperature = opts.get("temperature")?.and_then(|v| v.as_f64());
    let offline = |e: ModelError| {
        format!(
            "{e}; to run without a provider, use the scripted model (`model {} = scripted {{ \
             script: \"answers.json\" }}`, or AGENTGRAPH_PROVIDER=scripted for an `auto` block; \
             see docs/scripted-model.md)",
            m.name.name
        )
    };
    let base_url = opts.text("base_url")?;
    // `api_key: env("MY_KEY")` in the block wins over the SDK variable.
    let api_key = opts.text("api_key")?;
    if api_key.is_none() && m.options.get("api_key").is_some() {
        return Err(format!(
            "model `{}`: its `api_key` is empty (is the variable it reads from set?)",
            m.name.name
        ));
    }
    let key_var = match provider {
        "anthropic" => "ANTHROPIC_API_KEY",
        _ => "OPENAI_API_KEY",
    };
    // The block's `base_url` too: the provider decides some defaults by its endpoint.
    let url_var = match provider {
        "anthropic" => "ANTHROPIC_BASE_URL",
        _ => "OPENAI_BASE_URL",
    };
    let lookup = |var: &str| match (&api_key, &base_url) {
        (Some(k), _) if var == key_var => Some(k.clone()),
        (_, Some(u)) if var == url_var => Some(u.clone()),
        _ => env(var),
    };
    // Both HTTP providers take the same optional settings.
    macro_rules! configured {
        ($model:expr) => {{
            let mut model = $model.map_err(offline)?;
            if let Some(u) = base_url {
                model = model.with_base_url(u);
            }
            if let Some(n) = max_tokens {
                model = model.with_max_tokens(n);
            }
            if let Some(t) = temperature {
                model = model.with_temperature(t);
            }
            Ok(Arc::new(model))
        }};
    }
    match provider {
        "anthropic" => configured!(AnthropicModel::from_lookup(model_name, lookup)),
        "openai" => configured!(OpenAiModel::from_lookup(model_name, lookup)),
        "scripted" => {
            let script = opts.text("script")?.ok_or_else(|| {
                format!(
                    "model `{}` runs scripted but has no `script: \"file.json\"`",
                    m.name.name
                )
            })?;
            let path = base_dir.join(&script);
            let mut model = ScriptedModel::from_file(&path).map_err(|e| e.to_string())?;
            if let Some(dir) = std::env::var_os(SCRIPT_STATE_VAR).filter(|d| !d.is_empty()) {
                let stem = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "script".into());
                model = model
                    .with_state_file(Path::new(&dir).join(format!("{stem}.json")))
                    .map_err(|e| e.to_string())?;
            }
            Ok(Arc::new(model))
        }
        other => Err(format!("no model provider `{other}` in this build")),
    }
}

/// The `pricing` option of a model block, if any.
pub fn pricing(m: &ModelDecl) -> Result<Option<Pricing>, String> {
    let opts = Options { decl: m };
    opts.get("pricing")?
        .map(|v| {
            serde_json::from_value(v).map_err(|e| {
                format!(
                    "`pricing` of model `{}`: {e}; write {{input: 3.0, output: 15.0, \
                     cache_read: 0.3, cache_write: 3.75}} (US dollars per million tokens)",
                    m.name.name
                )
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn auto_picks_by_environment() {
        assert_eq!(
            auto_provider(lookup(&[("ANTHROPIC_API_KEY", "k")])),
            Ok("anthropic")
        );
        assert_eq!(
            auto_provider(lookup(&[("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")])),
            Ok("openai")
        );
        assert_eq!(
            auto_provider(lookup(&[
                ("ANTHROPIC_API_KEY", "k"),
                (PROVIDER_VAR, "scripted")
            ])),
            Ok("scripted")
        );
        let none = auto_provider(lookup(&[])).unwrap_err();
        assert!(none.contains("ANTHROPIC_API_KEY") && none.contains("OPENAI_BASE_URL"));
        assert!(none.contains("AGENTGRAPH_PROVIDER=scripted"));
        assert!(auto_provider(lookup(&[(PROVIDER_VAR, "gpt")])).is_err());
    }
}
