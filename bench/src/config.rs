//! What one benchmark invocation runs: the workload, its size, the store and how runs flush.

use agentgraph_runtime::Durability;
use std::fmt;
use std::path::PathBuf;

/// The six workloads of `WORKLOADS.md` §2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Workload {
    /// `n0 → … → n{N-1}`: one task per step (§2.1).
    Chain,
    /// `split` routes N sends to `work`, then `reduce` (§2.2).
    Fanout,
    /// `agent ↔ tools` with `add_messages` (§2.3).
    Loop,
    /// N branches from START joined into `sink` (§2.4).
    Wide,
    /// T sequential runs of a 3-node chain on one store (§2.5).
    Threads,
    /// A chain interrupted before its last node, then resumed (§2.6).
    Resume,
    /// T runs of the 3-node chain on one store, C at a time (§2.7).
    ThreadsConcurrent,
}

impl Workload {
    /// Every workload, in spec order.
    pub const ALL: [Workload; 7] = [
        Workload::Chain,
        Workload::Fanout,
        Workload::Loop,
        Workload::Wide,
        Workload::Threads,
        Workload::Resume,
        Workload::ThreadsConcurrent,
    ];

    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Chain => "chain",
            Workload::Fanout => "fanout",
            Workload::Loop => "loop",
            Workload::Wide => "wide",
            Workload::Threads => "threads",
            Workload::Resume => "resume",
            Workload::ThreadsConcurrent => "threads-concurrent",
        }
    }

    /// The size of the untimed warm-up run (§1.2: `min(N, 3)`, `resume`: 2).
    pub fn warmup_size(self, n: usize) -> usize {
        match self {
            Workload::Resume => 2,
            _ => n.min(3),
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The `--checkpointer` argument. `sqlite` is accepted for symmetry with the LangGraph
/// harness and maps to the sled store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum StoreKind {
    /// No checkpointer.
    None,
    /// The in-process `MemoryCheckpointer` (not durable).
    Memory,
    /// The sled-backed `SledCheckpointer` in a fresh temporary folder.
    Sled,
    /// Alias of `sled` (the durable store of the Rust runtime).
    Sqlite,
    /// The PostgreSQL checkpointer, in a fresh schema dropped afterwards (needs
    /// `--postgres-url` or `AGENTGRAPH_BENCH_POSTGRES_URL`).
    Postgres,
}

impl StoreKind {
    /// The argument as given.
    pub fn arg_name(self) -> &'static str {
        match self {
            StoreKind::None => "none",
            StoreKind::Memory => "memory",
            StoreKind::Sled => "sled",
            StoreKind::Sqlite => "sqlite",
            StoreKind::Postgres => "postgres",
        }
    }

    /// The store actually used (`sqlite` → `sled`).
    pub fn store_name(self) -> &'static str {
        match self {
            StoreKind::Sqlite => "sled",
            other => other.arg_name(),
        }
    }

    /// Whether checkpoints go to disk.
    pub fn is_durable(self) -> bool {
        matches!(
            self,
            StoreKind::Sled | StoreKind::Sqlite | StoreKind::Postgres
        )
    }

    /// Whether a checkpointer is attached at all.
    pub fn has_checkpointer(self) -> bool {
        self != StoreKind::None
    }
}

/// The `--durability` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum DurabilityArg {
    /// Each checkpoint is flushed before the next step starts (the runtime's default).
    Sync,
    /// Checkpoints are flushed in the background; the run's end waits for the last flush.
    Async,
    /// One checkpoint at the end of the run.
    Exit,
}

impl DurabilityArg {
    /// The runtime's mode.
    pub fn mode(self) -> Durability {
        match self {
            DurabilityArg::Sync => Durability::Sync,
            DurabilityArg::Async => Durability::Async,
            DurabilityArg::Exit => Durability::Exit,
        }
    }

    /// The name used in the report.
    pub fn name(self) -> &'static str {
        match self {
            DurabilityArg::Sync => "sync",
            DurabilityArg::Async => "async",
            DurabilityArg::Exit => "exit",
        }
    }
}

/// The tokio scheduler the runs execute on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Flavor {
    /// `Builder::new_multi_thread()` (what `#[tokio::main]` gives).
    Multi,
    /// `Builder::new_current_thread()`.
    Current,
}

impl Flavor {
    /// The name used in the report.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Multi => "multi_thread",
            Flavor::Current => "current_thread",
        }
    }
}

/// The default C of `threads-concurrent`.
pub const DEFAULT_CONCURRENCY: usize = 64;

/// One benchmark configuration.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Which workload.
    pub workload: Workload,
    /// Its size (T for `threads`).
    pub n: usize,
    /// Which checkpointer.
    pub store: StoreKind,
    /// When checkpoints are flushed.
    pub durability: DurabilityArg,
    /// The tokio scheduler.
    pub flavor: Flavor,
    /// Run the untimed warm-up first (§1.2).
    pub warmup: bool,
    /// Parent folder of the sled store (default: the system temp folder).
    pub db_dir: Option<PathBuf>,
    /// `threads-concurrent`: runs in flight at once (C).
    pub concurrency: usize,
    /// `postgres`: the server's URL.
    pub postgres_url: Option<String>,
}

impl BenchConfig {
    /// A configuration with the defaults of the command line.
    pub fn new(workload: Workload, n: usize, store: StoreKind) -> Self {
        BenchConfig {
            workload,
            n,
            store,
            durability: DurabilityArg::Sync,
            flavor: Flavor::Multi,
            warmup: true,
            db_dir: None,
            concurrency: DEFAULT_CONCURRENCY,
            postgres_url: None,
        }
    }

    /// Sets the durability mode.
    pub fn durability(mut self, d: DurabilityArg) -> Self {
        self.durability = d;
        self
    }

    /// Turns the warm-up on or off.
    pub fn warmup(mut self, on: bool) -> Self {
        self.warmup = on;
        self
    }

    /// Sets the number of runs in flight for `threads-concurrent`.
    pub fn concurrency(mut self, c: usize) -> Self {
        self.concurrency = c;
        self
    }

    /// Checks the combination; the message explains what to change.
    pub fn validate(&self) -> Result<(), String> {
        if self.n < 1 {
            return Err("--n must be at least 1".into());
        }
        if self.store == StoreKind::Postgres && self.postgres_url.is_none() {
            return Err(
                "--checkpointer postgres needs --postgres-url or AGENTGRAPH_BENCH_POSTGRES_URL"
                    .into(),
            );
        }
        if self.concurrency < 1 {
            return Err("--concurrency must be at least 1".into());
        }
        if self.workload == Workload::Resume {
            if self.n < 2 {
                return Err("resume needs --n of at least 2 (it interrupts before the last node of the chain)".into());
            }
            if !self.store.has_checkpointer() {
                return Err(
                    "resume needs a checkpointer: use --checkpointer memory or sled (sqlite)"
                        .into(),
                );
            }
        }
        Ok(())
    }
}
