//! `agentgraph-bench WORKLOAD --n N [--checkpointer none|memory|sled|sqlite]
//! [--durability sync|async|exit] [--json]`: one workload instance, one JSON line.
//! Exit codes: 0 ok, 1 the run failed or its checksum is wrong, 2 bad usage.

use agentgraph_bench::cli::Cli;
use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match agentgraph_bench::run(&cli.config()) {
        Ok(report) => {
            if cli.print_canonical {
                eprintln!("{}", report.canonical);
            }
            println!("{}", report.to_json_line());
            if report.checksum_ok {
                ExitCode::SUCCESS
            } else {
                eprintln!(
                    "agentgraph-bench: checksum {} does not match the spec's value for {} n={}",
                    report.checksum, report.workload, report.n
                );
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("agentgraph-bench: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
