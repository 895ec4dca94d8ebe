//! The JSON line one invocation prints (`WORKLOADS.md` §1.1) and the numbers that go into it.

use serde::Serialize;

/// One benchmark result. The required fields of §1.1 keep their meaning; the rest are extras.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Echo of the workload argument.
    pub workload: &'static str,
    /// Echo of `--n` (T for `threads`).
    pub n: usize,
    /// Echo of `--checkpointer` (`sqlite` stays `sqlite`; see `store`).
    pub checkpointer: &'static str,
    /// The store actually used: `none`, `memory` or `sled`.
    pub store: &'static str,
    /// Durability mode (`null` without a checkpointer).
    pub durability: Option<&'static str>,
    /// When the store is flushed, in words (`null` without a durable store).
    pub flush_policy: Option<&'static str>,
    /// Seconds of the timed region (§1.2).
    pub wall_s: f64,
    /// Super-steps in which at least one node ran, in the timed region.
    pub steps: u64,
    /// Node executions in the timed region.
    pub tasks: u64,
    /// `wall_s / steps` in µs.
    pub per_step_us: Option<f64>,
    /// `wall_s / tasks` in µs.
    pub per_task_us: Option<f64>,
    /// Checkpoint records stored in the timed region.
    pub checkpoints_written: u64,
    /// `ru_maxrss` at the end of the process, MiB.
    pub peak_rss_mb: f64,
    /// `ru_maxrss` before the warm-up, MiB.
    pub baseline_rss_mb: f64,
    /// FNV-1a 64 of the canonical result string, 16 hex digits.
    pub checksum: String,
    /// Whether `checksum` equals the spec's value for this workload and size (computed from
    /// the canonical string the spec defines, independently of the run).
    pub checksum_ok: bool,
    /// sled: bytes on disk after flush and close (same field name as the LangGraph harness).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sqlite_bytes: Option<u64>,
    /// sled: disk space its files occupy (`st_blocks` × 512), next to `sqlite_bytes`
    /// (`st_size`; sled preallocates 512 KiB segments).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sled_allocated_bytes: Option<u64>,
    /// memory and sled: bytes of keys and values the store holds at the end (the payload,
    /// without the store's own overhead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_logical_bytes: Option<u64>,
    /// `threads` only: `T / wall_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads_per_s: Option<f64>,
    /// sled: ms to move the write-ahead log's backlog into sled after the timed region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain_ms: Option<f64>,
    /// `threads` workloads on sled: `T / (wall_s + drain)`, the rate with the merge's backlog
    /// paid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads_per_s_with_drain: Option<f64>,
    /// `threads-concurrent` only: runs in flight at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<usize>,
    /// `threads-concurrent` only: median run latency, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50_run_ms: Option<f64>,
    /// `threads-concurrent` only: 99th percentile run latency, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_run_ms: Option<f64>,
    /// Durable writes issued during the timed region: sled flushes (each an fdatasync) or
    /// Postgres commits (each a WAL flush).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsyncs: Option<u64>,
    /// `fsyncs / wall_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsyncs_per_s: Option<f64>,
    /// sled: the disk's floor, median µs of a 4 KiB overwrite plus `fdatasync` in the store's
    /// parent folder, measured in the same process after the timed region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsync_floor_us: Option<f64>,
    /// `resume` only: seconds of the first (interrupted) run, not part of `wall_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_run_s: Option<f64>,
    /// `resume` only: steps of the first run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_run_steps: Option<u64>,
    /// `resume` only: checkpoints of the first run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_run_checkpoints: Option<u64>,
    /// Seconds to build and compile the graph (untimed).
    pub build_s: f64,
    /// Whether the untimed warm-up ran.
    pub warmup: bool,
    /// The tokio scheduler.
    pub tokio: &'static str,
    /// Tokio worker threads (multi-thread scheduler) or 1.
    pub worker_threads: usize,
    /// Which harness printed this line.
    pub runtime: &'static str,
    /// The runtime crate's version.
    pub agentgraph: &'static str,
    /// The canonical result string (not printed; `--print-canonical` shows it on stderr).
    #[serde(skip)]
    pub canonical: String,
}

impl Report {
    /// The report as one JSON line.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

/// The checksum of a canonical string as 16 lowercase hex digits.
pub fn checksum_hex(canonical: &str) -> String {
    format!("{:016x}", agentgraph_runtime::fnv1a64(canonical.as_bytes()))
}

/// `getrusage(RUSAGE_SELF).ru_maxrss / 1024`: peak resident set in MiB (Linux reports KiB).
pub fn peak_rss_mb() -> f64 {
    // SAFETY: `rusage` is plain old data, so all-zero bytes are a valid value, and
    // `getrusage` only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, exclusively borrowed `rusage` for the duration of the call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return f64::NAN;
    }
    round_to(ru.ru_maxrss as f64 / 1024.0, 1)
}

/// Rounds to `digits` decimals (keeps the JSON short without losing what matters).
pub fn round_to(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// `seconds / count` in µs, `None` when `count` is 0.
pub fn per_us(seconds: f64, count: u64) -> Option<f64> {
    (count > 0).then(|| round_to(seconds / count as f64 * 1e6, 3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_matches_the_spec_example() {
        assert_eq!(
            checksum_hex("chain;count=3;trace=n0,n1,n2"),
            "00746dd9577f1eb2"
        );
    }

    #[test]
    fn per_us_handles_zero() {
        assert_eq!(per_us(1.0, 0), None);
        assert_eq!(per_us(0.002, 1000), Some(2.0));
    }

    #[test]
    fn rss_is_positive() {
        assert!(peak_rss_mb() > 0.0);
    }
}
