//! The authentication and request-checking options of `agentgraph serve`: JWT keys, the
//! off-loopback opt-out, the `Host` and CORS allow-lists, and per-principal limits. API keys
//! come from `agentgraph keys` (the `--db` folder's `api-keys.json`).

use agentgraph_server::auth::{JwtConfig, Limits};
use agentgraph_server::ServerConfig;
use std::path::PathBuf;

/// The environment variable holding an HS256 secret (when `--jwt-secret-file` is not given).
pub const JWT_SECRET_VAR: &str = "AGENTGRAPH_JWT_SECRET";

/// `serve`'s authentication options.
#[derive(clap::Args, Debug, Clone)]
pub struct AuthOpts {
    /// Accept HS256 bearer JWTs signed with the secret in FILE (else with $AGENTGRAPH_JWT_SECRET
    /// when set). Claims: `sub` (user), `tenant`, `scope`/`scopes`; `exp` required.
    #[arg(long, value_name = "FILE")]
    pub jwt_secret_file: Option<PathBuf>,
    /// Accept RS256 bearer JWTs signed by a key of this JWK set (picked by `kid`).
    #[arg(long, value_name = "FILE")]
    pub jwks: Option<PathBuf>,
    /// Require JWTs' `aud` to be this.
    #[arg(long, value_name = "AUD")]
    pub jwt_audience: Option<String>,
    /// Require JWTs' `iss` to be this.
    #[arg(long, value_name = "ISS")]
    pub jwt_issuer: Option<String>,
    /// Serve on a non-loopback address without authentication (refused otherwise); a warning
    /// is logged.
    #[arg(long)]
    pub insecure_no_auth: bool,
    /// Also accept requests whose `Host` is NAME (any port) or NAME:PORT (repeatable);
    /// `localhost`, `127.0.0.1`, `[::1]` and the listening address always are. Others get 421.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// Let pages of ORIGIN (`https://app.example.com`) call the API from a browser (CORS
    /// preflights answered, its POSTs accepted); repeatable.
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    pub cors_origins: Vec<String>,
    /// Runs one principal may have in flight at once (more get 429).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_concurrent_runs)]
    pub max_concurrent_runs: usize,
    /// Runs (and resumes) one principal may start per rolling minute (more get 429).
    #[arg(long, value_name = "N", default_value_t = Limits::default().runs_per_minute)]
    pub runs_per_minute: usize,
    /// Event streams one principal may hold open (more get 429).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_streams)]
    pub max_streams: usize,
}

impl AuthOpts {
    /// `config` with these options.
    pub fn apply(&self, mut config: ServerConfig) -> Result<ServerConfig, String> {
        let mut jwt = JwtConfig::default();
        if let Some(file) = &self.jwt_secret_file {
            jwt = jwt
                .with_hs256_secret_file(file)
                .map_err(|e| e.to_string())?;
        } else if let Some(secret) = std::env::var_os(JWT_SECRET_VAR).filter(|s| !s.is_empty()) {
            jwt = jwt
                .with_hs256_secret(secret.as_encoded_bytes())
                .map_err(|e| e.to_string())?;
        }
        if let Some(file) = &self.jwks {
            jwt = jwt.with_jwks_file(file).map_err(|e| e.to_string())?;
        }
        if let Some(a) = &self.jwt_audience {
            jwt = jwt.with_audience(a);
        }
        if let Some(i) = &self.jwt_issuer {
            jwt = jwt.with_issuer(i);
        }
        let auth = &mut config.auth;
        auth.jwt = jwt;
        auth.insecure_no_auth = self.insecure_no_auth;
        auth.allowed_hosts = self.allowed_hosts.clone();
        auth.cors_origins = self.cors_origins.clone();
        auth.limits = Limits {
            max_concurrent_runs: self.max_concurrent_runs,
            runs_per_minute: self.runs_per_minute,
            max_streams: self.max_streams,
        };
        Ok(config)
    }
}

/// One line saying how requests authenticate.
pub fn describe(config: &ServerConfig) -> String {
    let auth = &config.auth;
    if !auth.enabled() {
        return "authentication: off (no API keys or JWT keys; `agentgraph keys create` turns \
                it on)"
            .to_string();
    }
    let mut ways = Vec::new();
    if let Some(k) = auth.keys.as_ref().filter(|k| k.exists()) {
        ways.push(format!("API keys ({})", k.path().display()));
    }
    if auth.jwt.is_configured() {
        ways.push(auth.jwt.describe());
    }
    format!("authentication: {}", ways.join(", "))
}
