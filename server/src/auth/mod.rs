//! Authentication and tenant isolation: who a request acts for ([`Principal`], from an API key
//! or a bearer JWT), which threads it may see (the ones it created; `admin` sees all), which
//! `Host` and `Origin` headers are accepted, and how much it may use at once ([`Limits`]).
//!
//! Authentication is on when a keys file exists ([`KeyStore::exists`]: once a key was ever
//! created, even if every key is revoked since) or JWT keys are configured. Without either, a
//! server on a loopback address serves everyone as before; on any other address it refuses to
//! start unless [`AuthConfig::insecure_no_auth`] is set. `Host`, content-type and `Origin`
//! checks apply in every case.
//!
//! Handlers behind the guard, an application's own routes included, can take the
//! `Extension<Caller>` it adds to each request.

mod guard;
mod jwt;
mod keys;
mod limits;
mod owners;
mod principal;

pub use jwt::{JwtConfig, JwtConfigError};
pub use keys::{ApiKey, KeyError, KeyStore, KEYS_FILE};
pub use limits::{Limiter, Limits, Permit};
pub use principal::{Caller, Principal, ADMIN_SCOPE, DEFAULT_TENANT};

pub(crate) use guard::{check_host, guard};
pub(crate) use owners::Owners;

use crate::error::ServerError;
use std::net::SocketAddr;
use std::sync::OnceLock;

/// How requests are authenticated and confined (part of [`crate::ServerConfig`]).
#[derive(Clone, Debug, Default)]
pub struct AuthConfig {
    /// The API keys (`None`: no keys). [`crate::ServerConfig::new`] points it at
    /// [`KEYS_FILE`] in the database folder.
    pub keys: Option<KeyStore>,
    /// Bearer JWT verification (default: none).
    pub jwt: JwtConfig,
    /// Serve off loopback without authentication (logged as a warning).
    pub insecure_no_auth: bool,
    /// More `Host` names accepted besides `localhost`, `127.0.0.1`, `[::1]` and the bound
    /// address: `name` (any port) or `name:port`.
    pub allowed_hosts: Vec<String>,
    /// Origins (`https://app.example.com`) allowed to call the API from a browser: CORS
    /// preflights are answered for them and their state-changing requests accepted.
    pub cors_origins: Vec<String>,
    /// Per-principal limits.
    pub limits: Limits,
}

impl AuthConfig {
    /// Whether requests must authenticate now (see the module documentation).
    pub fn enabled(&self) -> bool {
        self.jwt.is_configured() || self.keys.as_ref().is_some_and(KeyStore::exists)
    }

    /// Refuses a configuration that would serve off loopback with nobody able to
    /// authenticate (no JWT keys and no active API key) unless `insecure_no_auth` says so.
    /// Also refuses a CORS origin that is not `http(s)://host[:port]`.
    pub fn check_startup(&self, addr: SocketAddr) -> Result<(), ServerError> {
        for origin in &self.cors_origins {
            let o = origin.trim().trim_end_matches('/');
            let authority = o
                .strip_prefix("https://")
                .or_else(|| o.strip_prefix("http://"));
            if authority.is_none_or(|a| a.is_empty() || a.contains(['/', '?', '#', ' '])) {
                return Err(ServerError::Config(format!(
                    "CORS origin `{origin}` is not `http(s)://host[:port]`"
                )));
            }
        }
        if addr.ip().is_loopback() {
            return Ok(());
        }
        let active_key = match &self.keys {
            Some(k) => k
                .has_active()
                .map_err(|e| ServerError::Config(e.to_string()))?,
            None => false,
        };
        if self.jwt.is_configured() || active_key {
            return Ok(());
        }
        if self.insecure_no_auth {
            tracing::warn!(
                %addr,
                "serving off loopback WITHOUT authentication (--insecure-no-auth): anyone who \
                 reaches this address can run graphs and read every thread"
            );
            return Ok(());
        }
        Err(ServerError::Config(format!(
            "refusing to serve on {addr} without authentication: it is not a loopback address. \
             Create an API key (`agentgraph keys create --name NAME`), or give \
             --jwt-secret-file or --jwks, or pass --insecure-no-auth to serve unauthenticated"
        )))
    }
}

/// The server's authentication state.
pub(crate) struct AuthState {
    pub(crate) config: AuthConfig,
    pub(crate) limiter: Limiter,
    pub(crate) owners: Owners,
    /// The address the server was configured with and the one it is bound to.
    pub(crate) configured_addr: SocketAddr,
    pub(crate) bound: OnceLock<SocketAddr>,
}

impl AuthState {
    pub(crate) fn new(config: AuthConfig, addr: SocketAddr, owners: Owners) -> Self {
        AuthState {
            limiter: Limiter::new(config.limits),
            config,
            owners,
            configured_addr: addr,
            bound: OnceLock::new(),
        }
    }

    /// The principal of a bearer token (an API key or a JWT); `None` when it is not valid.
    pub(crate) fn authenticate(&self, token: &str) -> Result<Option<Principal>, ServerError> {
        if JwtConfig::looks_like_jwt(token) {
            return Ok(self.config.jwt.verify(token));
        }
        match &self.config.keys {
            Some(keys) => keys
                .verify(token)
                .map_err(|e| ServerError::Storage(e.to_string())),
            None => Ok(None),
        }
    }
}
