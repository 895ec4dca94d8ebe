//! Authentication and isolation over real HTTP on loopback: the auth matrix (endpoints ×
//! principals), CSRF and `Host` checks, memory sessions confined per principal, per-principal
//! limits, and the refusal to serve off loopback without authentication.

use agentgraph_server::auth::{AuthConfig, JwtConfig, KeyStore, Limits};
use agentgraph_server::{serve_on, Page, ServerConfig, ServerState, Storage};
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

mod guard;
mod isolation;
mod matrix;
mod openapi;

/// The HS256 secret the servers of these tests accept.
const HS_SECRET: &[u8] = b"a test secret, not a real one";

/// The RSA key (test only) RS256 tokens are signed with.
const RSA_PEM: &str = include_str!("test-only-rsa.pem");

fn graphs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/graphs")
}

struct Srv {
    base: String,
    stop: Option<oneshot::Sender<()>>,
    handle: JoinHandle<Result<(), agentgraph_server::ServerError>>,
    http: reqwest::Client,
}

impl Srv {
    async fn start(config: ServerConfig) -> Srv {
        let state = ServerState::new(&config).expect("state");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(serve_on(listener, state, async move {
            let _ = rx.await;
        }));
        Srv {
            base: format!("http://{addr}"),
            stop: Some(tx),
            handle,
            http: reqwest::Client::new(),
        }
    }

    async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        tokio::time::timeout(Duration::from_secs(30), self.handle)
            .await
            .expect("shutdown in time")
            .expect("join")
            .expect("serve");
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `method path` with `token` as the bearer (when given) and `body` as JSON (POST).
    async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = match method {
            "GET" => self.http.get(self.url(path)),
            _ => self.http.post(self.url(path)),
        };
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.expect("send");
        let status = r.status().as_u16();
        let is_sse = r
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        if is_sse {
            // An open stream: its status is all that is asked.
            return (status, Value::Null);
        }
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Waits until no run is active on `thread` (read as `token`).
    async fn wait_idle(&self, thread: &str, token: &str) {
        for _ in 0..3000 {
            let (_, v) = self
                .call(
                    "GET",
                    &format!("/threads/{thread}/state"),
                    Some(token),
                    None,
                )
                .await;
            if v["active"] == false {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("thread {thread} still active");
    }
}

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

/// An HS256 token with `claims`.
fn hs256(claims: Value) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(HS_SECRET),
    )
    .expect("sign")
}

/// An RS256 token with `claims`, signed by the fixture key (`kid` "k1").
fn rs256(claims: Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("k1".into());
    let key = EncodingKey::from_rsa_pem(RSA_PEM.as_bytes()).expect("rsa key");
    jsonwebtoken::encode(&header, &claims, &key).expect("sign")
}

/// Writes the JWK set of the fixture key's public half (`kid` "k1") to `path`.
fn write_jwks(path: &Path) {
    let b64: String = RSA_PEM
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("pem body");
    let pair = ring::rsa::KeyPair::from_pkcs8(&der).expect("pkcs8");
    let public: ring::rsa::PublicKeyComponents<Vec<u8>> = pair.public().into();
    let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let jwks = json!({"keys": [{
        "kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
        "n": url.encode(&public.n), "e": url.encode(&public.e),
    }]});
    std::fs::write(path, jwks.to_string()).expect("write jwks");
}

/// The keys of a test: users alice and bob, an admin, and a revoked key.
struct Keys {
    alice: String,
    bob: String,
    admin: String,
    revoked: String,
}

fn make_keys(store: &KeyStore) -> Keys {
    let (_, alice) = store.create("alice", None, None, vec![]).expect("key");
    let (_, bob) = store.create("bob", None, None, vec![]).expect("key");
    let (_, admin) = store
        .create("ops", Some("root"), None, vec!["admin".into()])
        .expect("key");
    let (_, revoked) = store
        .create("old", Some("alice"), None, vec![])
        .expect("key");
    store.revoke("old").expect("revoke");
    Keys {
        alice,
        bob,
        admin,
        revoked,
    }
}

/// A server on a sled folder in `dir` with API keys there, HS256 and RS256 JWTs, a page at
/// `/`, and `limits`.
fn config(dir: &Path, limits: Limits) -> ServerConfig {
    let jwks = dir.join("jwks.json");
    write_jwks(&jwks);
    let jwt = JwtConfig::default()
        .with_hs256_secret(HS_SECRET)
        .expect("secret")
        .with_jwks_file(&jwks)
        .expect("jwks");
    let db = dir.join("db");
    ServerConfig::new(graphs_dir(), &db)
        .auth(AuthConfig {
            keys: Some(KeyStore::in_dir(&db)),
            jwt,
            limits,
            ..AuthConfig::default()
        })
        .page(Page::html("/", "<p>page</p>"))
}

/// A server in memory without authentication (loopback), for the checks that apply anyway.
fn open_config() -> ServerConfig {
    ServerConfig::new(graphs_dir(), "unused").storage(Storage::Memory)
}
