//! Background tasks (`agentgraph_agents::orchestration::background`) driven by the
//! request-function model of `agentgraph_e2e::background`: the status block on the next
//! model call and the next turn, corrections, the limit per thread, the three ways to cancel,
//! and a SIGKILL while two tasks run (the `background-worker` binary).

mod crash;
mod in_process;
