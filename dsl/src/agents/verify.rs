//! The verify loop enforced by the graph ([`agentgraph_agents::orchestration::VerifyStopNode`]):
//! the function `verify_stopped(<verify_loop channel>)` says whether a verified subject just
//! became terminal, and the kind `verify_stop` tells the user and marks it reported.
//!
//! ```text
//! node verify_stop: verify_stop { verify_loop: verify_loop, messages: messages }
//! tools -> route {
//!   verify_stopped(verify_loop) => verify_stop
//!   else                        => agent
//! }
//! verify_stop -> END
//! ```

use crate::extensions::Function;
use crate::registry::{EntrySpec, NodeBuild, NodeFactory, Registry};
use crate::types::Ty;
use agentgraph_agents::orchestration::{stopped_subjects, VerifyStopNode};
use agentgraph_runtime::Node;
use serde_json::Value;
use std::sync::Arc;

/// Registers the `verify_stop` kind and the `verify_stopped` function.
pub fn register(reg: &mut Registry) {
    reg.register_kind(
        "verify_stop",
        vec![
            EntrySpec::writes("verify_loop"),
            EntrySpec::writes("messages"),
        ],
        "ends a verify loop that reached failed_terminal: tells the user why and marks the \
         subject reported (route to it when `verify_stopped(verify_loop)`)",
        Arc::new(VerifyStopFactory),
    );
    reg.register_function(
        "verify_stopped",
        Function {
            min: 1,
            max: 1,
            returns: Ty::Bool,
            doc: "whether a report_verdict loop state holds a subject that became \
                  failed_terminal and was not reported yet"
                .into(),
            call: Arc::new(|args| {
                Ok(Value::Bool(
                    !stopped_subjects(args.first().unwrap_or(&Value::Null)).is_empty(),
                ))
            }),
        },
    );
}

struct VerifyStopFactory;

impl NodeFactory for VerifyStopFactory {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let mut node = VerifyStopNode::default();
        if let Some(ch) = b.channel("verify_loop") {
            node.channel = ch.to_string();
        }
        if let Some(ch) = b.channel("messages") {
            node.messages_channel = ch.to_string();
        }
        Ok(Arc::new(node))
    }
}
