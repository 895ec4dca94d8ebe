//! `agentgraph keys create|list|revoke`: the API keys `agentgraph serve` accepts, kept hashed
//! in `api-keys.json` of the `--db` folder. A running server sees changes on its next request.

use crate::exit;
use crate::graph::fail;
use agentgraph_server::auth::{ApiKey, KeyError, KeyStore};
use serde_json::json;
use std::path::Path;

/// The `keys` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum KeysCmd {
    /// Create a key and print it on stdout: it is shown only this once (only its hash is
    /// stored). Requests send it as `Authorization: Bearer KEY`.
    Create {
        /// A unique name, for `list` and `revoke`.
        #[arg(long)]
        name: String,
        /// A scope (repeatable); `admin` sees and acts on every thread.
        #[arg(long = "scope", value_name = "SCOPE")]
        scopes: Vec<String>,
        /// The user the key acts for (default: the name); keys and JWTs (`sub`) of the same
        /// user and tenant share threads.
        #[arg(long)]
        user: Option<String>,
        /// The tenant (default `default`).
        #[arg(long)]
        tenant: Option<String>,
    },
    /// List the keys: name, id, created, scopes, user, tenant, revoked (never the key).
    List,
    /// Revoke a key by name or id: requests with it get 401 from the next one on.
    Revoke {
        /// The key's name or id.
        name_or_id: String,
    },
}

fn failed(e: KeyError) -> u8 {
    let code = match e {
        KeyError::Io { .. } | KeyError::Format { .. } => exit::FAILED,
        _ => exit::USAGE,
    };
    fail(e, code)
}

fn as_json(k: &ApiKey) -> serde_json::Value {
    json!({
        "name": k.name, "id": k.id, "created": k.created, "scopes": k.scopes,
        "user": k.user, "tenant": k.tenant, "revoked": k.revoked,
    })
}

/// Runs a `keys` subcommand on the keys of `db`.
pub fn keys(db: &Path, cmd: KeysCmd, json: bool) -> u8 {
    let store = KeyStore::in_dir(db);
    match cmd {
        KeysCmd::Create {
            name,
            scopes,
            user,
            tenant,
        } => match store.create(&name, user.as_deref(), tenant.as_deref(), scopes) {
            Ok((entry, key)) => {
                if json {
                    let mut v = as_json(&entry);
                    v["key"] = json!(key);
                    println!("{v}");
                } else {
                    println!("{key}");
                    eprintln!(
                        "created key `{}` (id {}, user {}, tenant {}, scopes [{}]) in {}; it is \
                         shown only now",
                        entry.name,
                        entry.id,
                        entry.user,
                        entry.tenant,
                        entry.scopes.join(", "),
                        store.path().display()
                    );
                }
                exit::DONE
            }
            Err(e) => failed(e),
        },
        KeysCmd::List => match store.list() {
            Ok(list) if json => {
                let all: Vec<_> = list.iter().map(as_json).collect();
                println!("{}", serde_json::Value::Array(all));
                exit::DONE
            }
            Ok(list) => {
                println!(
                    "{:<16} {:<12} {:<20} {:<16} {:<16} {:<12} REVOKED",
                    "NAME", "ID", "CREATED", "SCOPES", "USER", "TENANT"
                );
                for k in list {
                    println!(
                        "{:<16} {:<12} {:<20} {:<16} {:<16} {:<12} {}",
                        k.name,
                        k.id,
                        k.created,
                        k.scopes.join(","),
                        k.user,
                        k.tenant,
                        k.revoked.as_deref().unwrap_or("-")
                    );
                }
                exit::DONE
            }
            Err(e) => failed(e),
        },
        KeysCmd::Revoke { name_or_id } => match store.revoke(&name_or_id) {
            Ok(k) => {
                if json {
                    println!("{}", as_json(&k));
                } else {
                    println!("revoked key `{}` (id {})", k.name, k.id);
                }
                exit::DONE
            }
            Err(e) => failed(e),
        },
    }
}
