//! `agentgraph threads`: per thread, the graph that ran it, its status, and the time and step
//! of its latest checkpoint. Status and step come from the newest root checkpoint and its
//! pending writes; the graph from the small record runs leave under `<db>/cli-threads/`, or
//! for threads `agentgraph serve` ran, from its event store (the graph's name there).

use crate::exit;
use crate::graph::{fail, store, Ctx};
use agentgraph_runtime::checkpoint::special;
use agentgraph_runtime::{CheckpointTuple, Checkpointer, SledCheckpointer};
use serde::Serialize;
use std::path::Path;

/// The folder, under the store, where runs record which graph started each thread.
const GRAPHS_DIR: &str = "cli-threads";

/// Where a thread stands, read from its newest checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing left to run.
    Done,
    /// Waiting for `resume` (an `interrupt` or a breakpoint).
    Interrupted,
    /// A task failed; `resume` retries it.
    Failed,
    /// Tasks are pending and nothing says why: a run in progress, or one that was killed.
    Pending,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Done => "done",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
            Status::Pending => "pending",
        }
    }
}

/// One row of the listing.
#[derive(Debug, Serialize)]
pub struct ThreadRow {
    thread_id: String,
    graph: Option<String>,
    status: Option<Status>,
    step: Option<i64>,
    updated: Option<String>,
}

/// The status a checkpoint and its pending writes show.
fn status(t: &CheckpointTuple) -> Status {
    let has = |channel: &str| t.pending_writes.iter().any(|w| w.channel == channel);
    if t.checkpoint.next.is_empty() {
        Status::Done
    } else if has(special::ERROR.0) {
        Status::Failed
    } else if has(special::INTERRUPT.0) {
        Status::Interrupted
    } else {
        Status::Pending
    }
}

/// Records that `graph` (a file) runs `thread`; a failure only costs the listing its graph
/// column, so it is reported and ignored.
pub fn record_graph(db: &Path, thread: &str, graph: &Path) {
    let dir = db.join(GRAPHS_DIR);
    let name = graph.display().to_string();
    if let Err(e) =
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join(thread), name))
    {
        tracing::warn!("cannot record the graph of thread {thread}: {e}");
    }
}

/// The graph recorded for `thread` ([`record_graph`]), if any.
pub fn recorded_graph(db: &Path, thread: &str) -> Option<String> {
    std::fs::read_to_string(db.join(GRAPHS_DIR).join(thread)).ok()
}

/// The event store of `agentgraph serve` on this store, which names the graph of each thread
/// it ran: the `server-events` folder when there is one (an older server's, or the one a
/// server on PostgreSQL keeps beside it; read where it is, never moved from here), else the
/// tree in the checkpoints' database. `None` when it cannot be read.
fn server_events(cp: &SledCheckpointer) -> Option<agentgraph_server::EventStore> {
    // Limits only bound appends; nothing is appended here.
    let limits = agentgraph_server::EventLimits {
        events: usize::MAX,
        bytes: usize::MAX,
    };
    let folder = cp.store().path().join(agentgraph_server::LEGACY_FOLDER);
    if folder.is_dir() {
        return agentgraph_server::EventStore::open(&folder, limits).ok();
    }
    agentgraph_server::EventStore::beside(cp.store(), limits).ok()
}

/// `agentgraph threads`.
pub async fn threads(ctx: &Ctx) -> u8 {
    if !ctx.db.is_dir() {
        eprintln!(
            "error: no store at {} (runs create it; pass the folder they used with --db)",
            ctx.db.display()
        );
        return exit::USAGE;
    }
    let cp = match store(ctx) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let ids = match cp.list_threads().await {
        Ok(ids) => ids,
        Err(e) => return fail(e, exit::FAILED),
    };
    let served = server_events(&cp);
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        let latest = match cp.get(&id, "", None).await {
            Ok(t) => t,
            Err(e) => return fail(e, exit::FAILED),
        };
        rows.push(ThreadRow {
            graph: recorded_graph(&ctx.db, &id).or_else(|| {
                served
                    .as_ref()
                    .and_then(|events| events.graph_of(&id).ok().flatten())
            }),
            status: latest.as_ref().map(status),
            step: latest.as_ref().map(|t| t.checkpoint.step),
            updated: latest
                .as_ref()
                .map(|t| utc(t.checkpoint.id.timestamp_micros() / 1_000_000)),
            thread_id: id,
        });
    }
    if ctx.json {
        match serde_json::to_string(&rows) {
            Ok(s) => println!("{s}"),
            Err(e) => return fail(e, exit::FAILED),
        }
    } else {
        print!("{}", table(&rows));
    }
    exit::DONE
}

/// The rows as an aligned text table with a header.
fn table(rows: &[ThreadRow]) -> String {
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                r.thread_id.clone(),
                r.graph.clone().unwrap_or_else(|| "-".into()),
                r.status.map_or("-", Status::as_str).to_string(),
                r.step.map_or_else(|| "-".into(), |s| s.to_string()),
                r.updated.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let header = ["THREAD", "GRAPH", "STATUS", "STEP", "UPDATED"].map(String::from);
    let mut widths = header.clone().map(|h| h.len());
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&cells) {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
fn utc(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
    let rem = secs % 86_400;
    // Days to civil date (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn utc_times() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
