//! Every workload at small N, on every store where it is valid: the checksum of the state the
//! run returned equals the table of `WORKLOADS.md` §3, and the step/task counts equal the spec's.

use agentgraph_bench::{
    run, BenchConfig, BenchError, DurabilityArg, Flavor, Report, StoreKind, Workload,
};

/// `WORKLOADS.md` §3 (plus `wide 12`, `threads 10` from `expected_checksums.py`).
const EXPECTED: &[(Workload, usize, &str)] = &[
    (Workload::Chain, 3, "00746dd9577f1eb2"),
    (Workload::Chain, 10, "0aae66bb2db5aed0"),
    (Workload::Chain, 100, "4ec3c41321fd6b97"),
    (Workload::Fanout, 10, "dd885d5e5fb4fd22"),
    (Workload::Fanout, 100, "7045c94b6be7946a"),
    (Workload::Loop, 10, "7556d9330aa25314"),
    (Workload::Loop, 100, "bf7b33bac90c480b"),
    (Workload::Wide, 10, "df0c65557452b7af"),
    // python3 expected_checksums.py wide 12: keys sort bytewise (k10, k11 before k2).
    (Workload::Wide, 12, "a5652bda1dbd879a"),
    (Workload::Wide, 100, "0c69c1f680fc8016"),
    // python3 expected_checksums.py threads 10
    (Workload::Threads, 10, "413096f94356f10c"),
    (Workload::Threads, 100, "b32690693ee5451d"),
    (Workload::Resume, 10, "54b8420de2f18a38"),
    (Workload::Resume, 100, "0579cf99235272e7"),
    // python3 expected_checksums.py threads-concurrent 10 / 100
    (Workload::ThreadsConcurrent, 10, "40e9f0589fd0d7ca"),
    (Workload::ThreadsConcurrent, 100, "2b45e4998c1b703f"),
];

fn expected(workload: Workload, n: usize) -> &'static str {
    EXPECTED
        .iter()
        .find(|(w, m, _)| *w == workload && *m == n)
        .map(|(_, _, c)| *c)
        .unwrap_or_else(|| panic!("no expected checksum for {workload} {n}"))
}

/// `(steps, tasks)` of the timed region, from the spec.
fn expected_counts(workload: Workload, n: u64) -> (u64, u64) {
    match workload {
        Workload::Chain => (n, n),
        Workload::Fanout => (3, n + 2),
        Workload::Loop => (2 * n + 1, 2 * n + 1),
        Workload::Wide => (2, n + 1),
        Workload::Threads | Workload::ThreadsConcurrent => (3 * n, 3 * n),
        Workload::Resume => (1, 1),
    }
}

fn bench(cfg: BenchConfig) -> Report {
    let label = format!(
        "{} n={} store={} durability={}",
        cfg.workload,
        cfg.n,
        cfg.store.arg_name(),
        cfg.durability.name()
    );
    let r = run(&cfg).unwrap_or_else(|e| panic!("{label}: {e}"));
    assert_eq!(
        r.checksum,
        expected(cfg.workload, cfg.n),
        "{label}: canonical string was {}",
        r.canonical
    );
    assert!(r.checksum_ok, "{label}: the oracle disagrees");
    let (steps, tasks) = expected_counts(cfg.workload, cfg.n as u64);
    assert_eq!((r.steps, r.tasks), (steps, tasks), "{label}: steps, tasks");
    if cfg.store.has_checkpointer() && cfg.durability == DurabilityArg::Exit {
        assert!(r.checkpoints_written >= 1, "{label}: no checkpoint");
    } else if cfg.store.has_checkpointer() {
        assert!(
            r.checkpoints_written >= r.steps,
            "{label}: {} checkpoints for {} steps",
            r.checkpoints_written,
            r.steps
        );
    } else {
        assert_eq!(r.checkpoints_written, 0, "{label}");
    }
    if cfg.store.is_durable() {
        assert!(
            r.sqlite_bytes.is_some_and(|b| b > 0),
            "{label}: sqlite_bytes"
        );
    } else {
        assert_eq!(r.sqlite_bytes, None, "{label}");
    }
    if cfg.store.has_checkpointer() {
        assert!(
            r.store_logical_bytes.is_some_and(|b| b > 0),
            "{label}: logical bytes"
        );
    }
    assert!(r.wall_s > 0.0 && r.peak_rss_mb > 0.0, "{label}");
    r
}

/// Every size of `workload` in the table, on none (where valid), memory and sled (async flush,
/// to keep the test fast; `sled_sync_*` covers the per-checkpoint flush).
fn all_sizes(workload: Workload) {
    for &(w, n, _) in EXPECTED.iter().filter(|(w, _, _)| *w == workload) {
        for store in [StoreKind::None, StoreKind::Memory, StoreKind::Sled] {
            if w == Workload::Resume && store == StoreKind::None {
                continue;
            }
            let cfg = BenchConfig::new(w, n, store)
                .durability(DurabilityArg::Async)
                .warmup(false);
            bench(cfg);
        }
    }
}

#[test]
fn chain_checksums() {
    all_sizes(Workload::Chain);
}

#[test]
fn fanout_checksums() {
    all_sizes(Workload::Fanout);
}

#[test]
fn loop_checksums() {
    all_sizes(Workload::Loop);
}

#[test]
fn wide_checksums() {
    all_sizes(Workload::Wide);
}

#[test]
fn threads_checksums() {
    all_sizes(Workload::Threads);
    let r = bench(BenchConfig::new(Workload::Threads, 10, StoreKind::Memory));
    assert!(r.threads_per_s.is_some_and(|t| t > 0.0));
}

#[test]
fn threads_concurrent_checksums() {
    all_sizes(Workload::ThreadsConcurrent);
    let r = bench(BenchConfig::new(
        Workload::ThreadsConcurrent,
        10,
        StoreKind::Memory,
    ));
    assert!(r.threads_per_s.is_some_and(|t| t > 0.0));
    assert_eq!(r.concurrency, Some(64));
    assert!(r.p50_run_ms.is_some() && r.p99_run_ms >= r.p50_run_ms);
}

/// With `sync` durability each run waits for a flush after every checkpoint. One run at a time
/// issues one flush per checkpoint; 32 runs at once share them (group commit), so the store
/// issues fewer flushes than it stores checkpoints.
#[test]
fn concurrent_durable_runs_share_flushes() {
    let one_at_a_time = bench(
        BenchConfig::new(Workload::ThreadsConcurrent, 10, StoreKind::Sled)
            .concurrency(1)
            .warmup(false),
    );
    let flushes = one_at_a_time.fsyncs.expect("sled counts flushes");
    assert!(
        flushes >= one_at_a_time.checkpoints_written,
        "{flushes} flushes for {} checkpoints one run at a time",
        one_at_a_time.checkpoints_written
    );
    let together = bench(
        BenchConfig::new(Workload::ThreadsConcurrent, 100, StoreKind::Sled)
            .concurrency(32)
            .warmup(false),
    );
    let flushes = together.fsyncs.expect("sled counts flushes");
    assert!(
        flushes * 2 < together.checkpoints_written,
        "{flushes} flushes for {} checkpoints of 32 concurrent runs",
        together.checkpoints_written
    );
    assert!(together.fsync_floor_us.is_some_and(|f| f > 0.0));
}

#[test]
fn resume_checksums_and_first_run() {
    all_sizes(Workload::Resume);
    for n in [10usize, 100] {
        let r = bench(BenchConfig::new(Workload::Resume, n, StoreKind::Memory));
        assert_eq!(r.first_run_steps, Some(n as u64 - 1), "first run steps");
        assert!(r.first_run_s.is_some_and(|s| s > 0.0));
        assert_eq!(r.checkpoints_written, 1, "the resume stores one checkpoint");
    }
}

#[test]
fn sled_sync_with_warmup() {
    for (w, n) in [
        (Workload::Chain, 10),
        (Workload::Fanout, 10),
        (Workload::Loop, 10),
        (Workload::Wide, 10),
        (Workload::Threads, 10),
        (Workload::Resume, 10),
    ] {
        let r = bench(BenchConfig::new(w, n, StoreKind::Sqlite));
        assert_eq!(r.store, "sled");
        assert_eq!(r.checkpointer, "sqlite");
        assert_eq!(r.durability, Some("sync"));
        assert!(r.warmup);
    }
}

#[test]
fn exit_durability_and_current_thread() {
    for w in Workload::ALL {
        for store in [StoreKind::Memory, StoreKind::Sled] {
            let mut cfg = BenchConfig::new(w, 10, store).durability(DurabilityArg::Exit);
            cfg.flavor = Flavor::Current;
            let r = bench(cfg);
            assert_eq!(r.tokio, "current_thread");
        }
    }
}

#[test]
fn json_line_has_the_required_fields() {
    let r = bench(BenchConfig::new(Workload::Resume, 10, StoreKind::Sled).warmup(false));
    let v: serde_json::Value = serde_json::from_str(&r.to_json_line()).unwrap();
    for key in [
        "workload",
        "n",
        "checkpointer",
        "store",
        "wall_s",
        "steps",
        "tasks",
        "checkpoints_written",
        "peak_rss_mb",
        "checksum",
        "sqlite_bytes",
        "first_run_s",
        "per_step_us",
        "per_task_us",
        "durability",
        "flush_policy",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    assert_eq!(v["checksum"].as_str().map(str::len), Some(16));
    let r = bench(BenchConfig::new(Workload::Threads, 10, StoreKind::None).warmup(false));
    let v: serde_json::Value = serde_json::from_str(&r.to_json_line()).unwrap();
    assert!(v["threads_per_s"].as_f64().is_some());
    assert!(v["durability"].is_null());
    assert!(v.get("sqlite_bytes").is_none());
}

#[test]
fn bad_configurations_are_usage_errors() {
    let r = run(&BenchConfig::new(Workload::Resume, 10, StoreKind::None));
    assert!(matches!(r, Err(BenchError::Usage(_))), "{r:?}");
    let r = run(&BenchConfig::new(Workload::Resume, 1, StoreKind::Memory));
    assert!(matches!(r, Err(BenchError::Usage(_))), "{r:?}");
    let r = run(&BenchConfig::new(Workload::Chain, 0, StoreKind::Memory));
    assert!(matches!(r, Err(e) if e.exit_code() == 2));
}
