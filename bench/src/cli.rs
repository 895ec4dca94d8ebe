//! The command line: `agentgraph-bench WORKLOAD --n N [--checkpointer …] [--durability …]`.

use crate::config::{BenchConfig, DurabilityArg, Flavor, StoreKind, Workload};
use std::path::PathBuf;

/// Runs one workload of `WORKLOADS.md` on the agentgraph runtime and prints one JSON line.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "agentgraph-bench", version, about, long_about = None)]
pub struct Cli {
    /// Which workload.
    #[arg(value_enum)]
    pub workload: Workload,
    /// Its size (the number of threads T for `threads`).
    #[arg(long)]
    pub n: usize,
    /// The checkpointer; `sqlite` means the sled store (the report's `store` says so).
    #[arg(long, value_enum, default_value = "none")]
    pub checkpointer: StoreKind,
    /// When checkpoints are flushed to the store.
    #[arg(long, value_enum, default_value = "sync")]
    pub durability: DurabilityArg,
    /// The tokio scheduler the runs execute on.
    #[arg(long = "runtime", value_enum, default_value = "multi")]
    pub flavor: Flavor,
    /// Print one JSON line (always on; accepted for symmetry with the LangGraph harness).
    #[arg(long)]
    pub json: bool,
    /// Skip the small untimed warm-up run.
    #[arg(long)]
    pub no_warmup: bool,
    /// Parent folder of the sled store (default: the system temp folder).
    #[arg(long)]
    pub db_dir: Option<PathBuf>,
    /// `threads-concurrent`: how many runs are in flight at once.
    #[arg(long, default_value_t = crate::config::DEFAULT_CONCURRENCY)]
    pub concurrency: usize,
    /// `--checkpointer postgres`: the server (each run uses a fresh schema, dropped after).
    #[arg(long, env = "AGENTGRAPH_BENCH_POSTGRES_URL")]
    pub postgres_url: Option<String>,
    /// Print the canonical result string to stderr (debugging).
    #[arg(long)]
    pub print_canonical: bool,
}

impl Cli {
    /// The configuration the arguments describe (checked by [`BenchConfig::validate`]).
    pub fn config(&self) -> BenchConfig {
        BenchConfig {
            workload: self.workload,
            n: self.n,
            store: self.checkpointer,
            durability: self.durability,
            flavor: self.flavor,
            warmup: !self.no_warmup,
            db_dir: self.db_dir.clone(),
            concurrency: self.concurrency,
            postgres_url: self.postgres_url.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn parses_the_spec_command_line() {
        let cli = Cli::try_parse_from([
            "agentgraph-bench",
            "chain",
            "--n",
            "1000",
            "--checkpointer",
            "sqlite",
            "--json",
        ])
        .unwrap();
        let cfg = cli.config();
        assert_eq!(cfg.workload, Workload::Chain);
        assert_eq!(cfg.n, 1000);
        assert_eq!(cfg.store.store_name(), "sled");
        assert_eq!(cfg.durability, DurabilityArg::Sync);
        assert!(cfg.warmup);
    }

    #[test]
    fn rejects_bad_usage() {
        assert!(Cli::try_parse_from(["agentgraph-bench", "chain"]).is_err());
        assert!(Cli::try_parse_from(["agentgraph-bench", "nope", "--n", "3"]).is_err());
        assert!(Cli::try_parse_from(["agentgraph-bench", "chain", "--n", "-3"]).is_err());
        let cli = Cli::try_parse_from(["agentgraph-bench", "resume", "--n", "10"]).unwrap();
        assert!(cli.config().validate().is_err());
        let cli = Cli::try_parse_from(["agentgraph-bench", "chain", "--n", "0"]).unwrap();
        assert!(cli.config().validate().is_err());
    }
}
