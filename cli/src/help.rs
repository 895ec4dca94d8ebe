//! The command definition with examples: each subcommand's `--help` ends with an `Examples:`
//! section (clap `after_help`), added here so the command list in `main` stays short.

use clap::CommandFactory;

/// Examples shown after each subcommand's help, by subcommand name.
const EXAMPLES: &[(&str, &str)] = &[
    ("run", "agentgraph run graphs/examples/counter.ag --input '{\"limit\": 5}'\n  agentgraph run hello/hello.ag --input-file input.json --thread t1 --json"),
    ("resume", "agentgraph resume graphs/examples/approval.ag --thread t1 --value '\"yes\"'"),
    ("fork", "agentgraph history graphs/examples/counter.ag --thread t1   # pick a checkpoint id\n  agentgraph fork graphs/examples/counter.ag --thread t1 --checkpoint <id> --values '{\"count\": 0}'"),
    ("state", "agentgraph state graphs/examples/counter.ag --thread t1\n  agentgraph state graphs/examples/counter.ag --thread t1 --checkpoint <id> --json"),
    ("history", "agentgraph history graphs/examples/counter.ag --thread t1 --limit 5\n  agentgraph history graphs/examples/counter.ag --thread t1 --before <oldest id shown>\n  agentgraph history graphs/examples/counter.ag --thread t1 --all --json"),
    ("update", "agentgraph update graphs/examples/counter.ag --thread t1 --values '{\"limit\": 10}' --as-node bump"),
    ("threads", "agentgraph threads\n  agentgraph threads --json --db ./.agentgraph"),
    ("prune", "agentgraph prune --keep 10\n  agentgraph prune --thread t1 --keep 1"),
    ("check", "agentgraph check graphs/examples/counter.ag\n  agentgraph check hello/hello.ag --json"),
    ("fmt", "agentgraph fmt graphs/                 # rewrite every .ag file under graphs/\n  agentgraph fmt --check graphs/         # exit 1 and list the files to format\n  agentgraph fmt --diff hello/hello.ag   # show what would change"),
    ("new", "agentgraph new hello                   # an llm agent on the scripted model\n  agentgraph new counter --plain         # a graph without a model"),
    ("completions", "agentgraph completions bash > ~/.local/share/bash-completion/completions/agentgraph\n  agentgraph completions zsh > \"${fpath[1]}/_agentgraph\"\n  agentgraph completions fish > ~/.config/fish/completions/agentgraph.fish"),
    ("config", "agentgraph config          # effective settings and where each comes from\n  agentgraph config --json"),
    ("validate", "agentgraph validate workflow.json\n  agentgraph validate workflow.json --json"),
    ("catalogue", "agentgraph catalogue show\n  agentgraph catalogue fetch"),
    ("chat", "agentgraph chat\n  AGENTGRAPH_PROVIDER=scripted agentgraph chat --graph single"),
    ("serve", "agentgraph serve --graphs graphs/examples --addr 127.0.0.1:8080\n  agentgraph serve --postgres postgres://user:pass@localhost/agentgraph\n  agentgraph keys create --name me && agentgraph serve --addr 0.0.0.0:8080 --allowed-host agents.example.com"),
    ("store", "agentgraph store check                      # which threads are readable\n  agentgraph store export --out backup.jsonl\n  agentgraph --db ./restored store import backup.jsonl"),
    ("keys", "agentgraph keys create --name ci              # prints the key once\n  agentgraph keys create --name ops --scope admin\n  agentgraph keys list\n  agentgraph keys revoke ci"),
    ("n8n", "agentgraph n8n run workflow.json\n  agentgraph n8n run --thread t1"),
    ("eval", "agentgraph eval --set quick --graph single\n  agentgraph eval compare before.jsonl after.jsonl"),
    ("mcp", "agentgraph mcp --graphs graphs/examples\n  agentgraph mcp --builder-tools --http 127.0.0.1:8090"),
    ("viz", "agentgraph viz graphs/examples/counter.ag\n  agentgraph viz graphs/examples/counter.ag --format dot | dot -Tsvg > counter.svg"),
];

/// The `agentgraph` command with the examples attached (used to parse the command line and
/// to generate completions).
pub fn command() -> clap::Command {
    let mut cmd = crate::Cli::command().after_help(
        "Examples:\n  agentgraph new hello && cd hello   # a project with a graph and its test\n  \
         agentgraph run hello.ag --input-file tests/input.json\n  \
         agentgraph threads\n\n\
         Settings: flags > environment > agentgraph.toml > defaults (see `agentgraph config`).",
    );
    for (name, text) in EXAMPLES {
        cmd = cmd.mut_subcommand(*name, |sub| sub.after_help(format!("Examples:\n  {text}")));
    }
    cmd
}
