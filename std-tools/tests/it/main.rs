//! The standard tools' integration tests, one binary: each former test file is a module. The
//! tests on the real n8n catalogue read `AGENTGRAPH_N8N_CATALOGUE`, the corpus tests
//! `AGENTGRAPH_N8N_WORKFLOWS` (see `agentgraph-test-support`).

mod best_practices;
mod builder_tools;
mod catalogue;
mod general_tools;
mod operations;
mod recorded_batch;
mod recorded_discovery;
mod recorded_gmail_tool;
mod recorded_model_step;
mod recorded_names;
mod recorded_repeated_add;
mod recorded_trigger_step;
mod trim;
mod unknown_parameters;
mod update_parameters;
mod validate;
mod validate_corpus;
mod workflow_corpus;
