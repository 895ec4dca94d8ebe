//! `agentgraph store check|export|import`: what a `--db` store can still read, and every
//! thread's checkpoints out to a portable JSON Lines file and back
//! (`agentgraph_runtime::checkpoint::portable`).

use crate::exit;
use crate::graph::{self, Ctx};
use agentgraph_runtime::checkpoint::portable::{self, PortableStats};
use agentgraph_runtime::checkpoint::Checkpointer;
use serde_json::json;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;

/// The `store` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum StoreCmd {
    /// Read every thread as a run would (each checkpoint, its pending writes, every blob its
    /// channels reach) and say which are readable; exit 1 when one is not.
    Check,
    /// Write every thread's checkpoints as JSON Lines (to stdout, or --out FILE).
    Export {
        /// The file to write (default: stdout).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Leave out threads that cannot be read (listed on stderr) instead of stopping.
        #[arg(long)]
        skip_damaged: bool,
    },
    /// Read an export into the store (`-` for stdin); the store must not hold its threads.
    Import {
        /// The export file.
        file: PathBuf,
    },
}

fn summary(what: &str, s: &PortableStats) -> String {
    format!(
        "{what} {} threads, {} checkpoints, {} blobs, {} pending writes",
        s.threads, s.checkpoints, s.blobs, s.writes
    )
}

fn report_damaged(s: &PortableStats) {
    for d in &s.damaged {
        eprintln!("damaged: thread {:?}: {}", d.thread, d.error);
    }
}

/// Runs a `store` subcommand on the `--db` store.
pub async fn store(ctx: &Ctx, cmd: StoreCmd) -> u8 {
    if !matches!(cmd, StoreCmd::Import { .. }) && !ctx.db.is_dir() {
        eprintln!(
            "error: no store at {} (pass the folder runs used with --db)",
            ctx.db.display()
        );
        return exit::USAGE;
    }
    let cp = match graph::store(ctx) {
        Ok(cp) => cp,
        Err(code) => return code,
    };
    let cp: &dyn Checkpointer = cp.as_ref();
    match cmd {
        StoreCmd::Check => match portable::check(cp).await {
            Ok(s) => {
                if ctx.json {
                    println!("{}", json!(s));
                } else {
                    println!("{}", summary("readable:", &s));
                    report_damaged(&s);
                    if !s.damaged.is_empty() {
                        eprintln!(
                            "{} damaged threads: `agentgraph store export --skip-damaged --out F` \
                             saves the readable ones; restore the others from a backup \
                             (docs/deploy.md, \"Backups\")",
                            s.damaged.len()
                        );
                    }
                }
                if s.damaged.is_empty() {
                    exit::DONE
                } else {
                    exit::FAILED
                }
            }
            Err(e) => graph::fail(e, exit::FAILED),
        },
        StoreCmd::Export { out, skip_damaged } => {
            let result = match &out {
                Some(path) => match std::fs::File::create(path) {
                    Ok(f) => {
                        let mut w = BufWriter::new(f);
                        portable::export(cp, &mut w, skip_damaged).await
                    }
                    Err(e) => {
                        return graph::fail(
                            format!("cannot create {}: {e}", path.display()),
                            exit::FAILED,
                        )
                    }
                },
                None => {
                    let mut w = BufWriter::new(std::io::stdout());
                    portable::export(cp, &mut w, skip_damaged).await
                }
            };
            match result {
                Ok(s) => {
                    report_damaged(&s);
                    eprintln!("{}", summary("exported", &s));
                    exit::DONE
                }
                Err(e) => graph::fail(e, exit::FAILED),
            }
        }
        StoreCmd::Import { file } => {
            let result = if file.as_os_str() == "-" {
                let mut r = BufReader::new(std::io::stdin());
                portable::import(cp, &mut r).await
            } else {
                match std::fs::File::open(&file) {
                    Ok(f) => portable::import(cp, &mut BufReader::new(f)).await,
                    Err(e) => {
                        return graph::fail(
                            format!("cannot read {}: {e}", file.display()),
                            exit::USAGE,
                        )
                    }
                }
            };
            match result {
                Ok(s) => {
                    if ctx.json {
                        println!("{}", json!(s));
                    } else {
                        println!("{}", summary("imported", &s));
                    }
                    exit::DONE
                }
                Err(e) => graph::fail(e, exit::FAILED),
            }
        }
    }
}
