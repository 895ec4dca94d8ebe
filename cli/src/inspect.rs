//! state, history, update, prune.

use crate::exit;
use crate::graph::{fail, json_arg, load_with_store, store, Ctx};
use agentgraph_runtime::{CheckpointId, Checkpointer, ListQuery};
use serde_json::json;
use std::path::Path;

fn parse_id(text: &str) -> Result<CheckpointId, u8> {
    text.parse().map_err(|e| {
        eprintln!("error: {e} (see `agentgraph history`)");
        exit::USAGE
    })
}

/// Compiles a graph to read or edit its threads without running it: a model that cannot be
/// built here (no provider configured) is no reason to refuse.
fn load_for_reading(ctx: &Ctx, path: &Path) -> Result<agentgraph_runtime::CompiledGraph, u8> {
    existing_store(ctx)?;
    agentgraph_dsl::agents::defer_model_errors();
    load_with_store(ctx, path)
}

/// Commands that read or edit threads never create a store: a mistyped `--db` is an error,
/// not an empty store that "has no checkpoint".
fn existing_store(ctx: &Ctx) -> Result<(), u8> {
    if ctx.db.is_dir() {
        return Ok(());
    }
    eprintln!(
        "error: no store at {} (runs create it; pass the folder they used with --db)",
        ctx.db.display()
    );
    Err(exit::USAGE)
}

/// An unknown thread is bad usage (exit 2), for `state` and `history` as for `resume`.
fn no_such_thread(thread: &str) -> u8 {
    eprintln!(
        "error: thread {thread:?} has no checkpoint (list threads with `agentgraph threads`)"
    );
    exit::USAGE
}

/// `agentgraph state`.
pub async fn state(ctx: &Ctx, path: &Path, thread: &str, checkpoint: Option<String>) -> u8 {
    let id = match checkpoint.as_deref().map(parse_id).transpose() {
        Ok(id) => id,
        Err(c) => return c,
    };
    let graph = match load_for_reading(ctx, path) {
        Ok(g) => g,
        Err(c) => return c,
    };
    match graph.get_state(thread, id).await {
        Ok(Some(s)) => {
            let v = json!({"values": s.values, "next": s.next, "checkpoint_id": s.checkpoint_id,
                "step": s.step, "interrupts": s.interrupts});
            if ctx.json {
                println!("{v}");
            } else {
                println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            }
            exit::DONE
        }
        Ok(None) => no_such_thread(thread),
        Err(e) => fail(e, exit::FAILED),
    }
}

/// `agentgraph history`.
/// Checkpoints `history` lists when not told otherwise.
pub const HISTORY_PAGE: usize = 50;

/// Which checkpoints of a thread `history` lists.
pub struct Page {
    /// At most this many (`None`: all).
    pub limit: Option<usize>,
    /// Only those older than this checkpoint id.
    pub before: Option<String>,
}

/// `agentgraph history`: one page, newest first; when older checkpoints exist, the command for
/// the next page goes to stderr.
pub async fn history(ctx: &Ctx, path: &Path, thread: &str, page: Page) -> u8 {
    if page.limit == Some(0) {
        eprintln!("error: --limit 0 lists nothing; give at least 1");
        return exit::USAGE;
    }
    let before = match page.before.as_deref().map(parse_id).transpose() {
        Ok(b) => b,
        Err(c) => return c,
    };
    let graph = match load_for_reading(ctx, path) {
        Ok(g) => g,
        Err(c) => return c,
    };
    let q = ListQuery {
        // One more than the page: whether there is a next page.
        limit: page.limit.map(|l| l.saturating_add(1)),
        before,
        ..ListQuery::default()
    };
    match graph.history(thread, q).await {
        Ok(entries) if entries.is_empty() && before.is_none() => no_such_thread(thread),
        Ok(mut entries) => {
            let more = page.limit.is_some_and(|l| entries.len() > l);
            if let Some(l) = page.limit {
                entries.truncate(l);
            }
            let oldest = entries.last().map(|h| h.checkpoint_id);
            for h in entries {
                if ctx.json {
                    println!(
                        "{}",
                        json!({"checkpoint_id": h.checkpoint_id, "parent_id": h.parent_id, "step": h.step,
                            "source": h.source, "next": h.next, "writes": h.writes})
                    );
                } else {
                    println!(
                        "{}  step {:>3}  {:<6}  next={:<20} writes={}",
                        h.checkpoint_id,
                        h.step,
                        h.source.as_str(),
                        format!("{:?}", h.next),
                        h.writes
                    );
                }
            }
            if let (true, Some(oldest)) = (more, oldest) {
                eprintln!(
                    "older checkpoints: agentgraph history {} --thread {thread} --before {oldest} \
                     (or --all)",
                    path.display()
                );
            }
            exit::DONE
        }
        Err(e) => fail(e, exit::FAILED),
    }
}

/// `agentgraph update`.
pub async fn update(
    ctx: &Ctx,
    path: &Path,
    thread: &str,
    values: &str,
    as_node: Option<String>,
) -> u8 {
    let v = match json_arg("--values", values) {
        Ok(v) => v,
        Err(c) => return c,
    };
    let graph = match load_for_reading(ctx, path) {
        Ok(g) => g,
        Err(c) => return c,
    };
    match graph
        .update_state(thread, None, v, as_node.as_deref())
        .await
    {
        Ok(id) => {
            if ctx.json {
                println!("{}", json!({"checkpoint_id": id}));
            } else {
                println!("{id}");
            }
            exit::DONE
        }
        Err(e) => fail(e, exit::USAGE),
    }
}

/// `agentgraph prune`.
pub async fn prune(ctx: &Ctx, thread: Option<String>, keep: usize) -> u8 {
    if let Err(code) = existing_store(ctx) {
        return code;
    }
    let cp = match store(ctx) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let result = cp.prune(thread.as_deref(), keep).await;
    let flushed = cp.flush().await;
    match (result, flushed) {
        (Ok(s), Ok(())) => {
            if ctx.json {
                println!(
                    "{}",
                    json!({"checkpoints": s.checkpoints, "blobs": s.blobs, "writes": s.writes})
                );
            } else {
                println!(
                    "removed {} checkpoints, {} blobs, {} pending writes",
                    s.checkpoints, s.blobs, s.writes
                );
            }
            exit::DONE
        }
        (Err(e), _) | (_, Err(e)) => fail(e, exit::FAILED),
    }
}
