//! `agentgraph completions SHELL`: a completion script for bash, zsh, fish, PowerShell or
//! elvish, generated from the command definition by `clap_complete`.

use crate::exit;
use clap_complete::Shell;

/// Prints the completion script of `shell` on stdout.
pub fn completions(shell: Shell) -> u8 {
    let mut cmd = crate::help::command();
    let mut out = std::io::stdout();
    clap_complete::generate(shell, &mut cmd, "agentgraph", &mut out);
    exit::DONE
}
