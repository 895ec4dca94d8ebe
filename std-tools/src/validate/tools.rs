//! The `validate_structure` and `validate_configuration` tools.

use std::sync::Arc;

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Value};

use super::{validate_configuration, validate_structure, Report};
use crate::catalogue::Catalogue;
use crate::workflow::Workflow;

/// The state channel the tools read the workflow from unless told otherwise.
pub const DEFAULT_WORKFLOW_CHANNEL: &str = "workflow";

/// Reads the workflow from `channel` (`null` or absent: an empty workflow).
fn workflow_from(ctx: &ToolContext, channel: &str) -> Result<Workflow, ToolError> {
    match ctx.state().get(channel) {
        None | Some(Value::Null) => Ok(Workflow::default()),
        Some(v) => Workflow::from_value_ref(v).map_err(|e| {
            ToolError::new(
                "INVALID_WORKFLOW",
                format!("the workflow in state channel `{channel}` cannot be read: {e}"),
            )
        }),
    }
}

fn channel<'a>(ctx: &'a ToolContext, own: &'a str) -> &'a str {
    match ctx
        .settings()
        .get("workflow_channel")
        .and_then(Value::as_str)
    {
        Some(c) if !c.is_empty() => c,
        _ => own,
    }
}

fn schema() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

macro_rules! validation_tool {
    ($ty:ident, $name:literal, $scope:literal, $run:ident, $desc:literal) => {
        #[doc = concat!("The `", $name, "` tool: ", $desc)]
        ///
        /// Arguments: `{}`. Reads the workflow from the state channel `workflow` (another with
        /// [`Self::with_workflow_channel`] or the `workflow_channel` tool setting; `null` is an
        /// empty workflow) and returns a `<validation_result>` block listing the findings, or
        /// saying the workflow is valid. Error: `INVALID_WORKFLOW` (the channel does not hold a
        /// workflow).
        #[derive(Debug, Clone)]
        pub struct $ty {
            catalogue: Arc<Catalogue>,
            workflow_channel: String,
        }

        impl $ty {
            /// The tool over this catalogue.
            pub fn new(catalogue: Arc<Catalogue>) -> Self {
                $ty {
                    catalogue,
                    workflow_channel: DEFAULT_WORKFLOW_CHANNEL.to_string(),
                }
            }

            /// Reads the workflow from `channel` instead of `workflow`.
            pub fn with_workflow_channel(mut self, channel: impl Into<String>) -> Self {
                self.workflow_channel = channel.into();
                self
            }

            /// The report for a workflow (what the tool renders).
            pub fn report(&self, workflow: &Workflow) -> Report {
                $run(workflow, &self.catalogue)
            }
        }

        #[async_trait]
        impl Tool for $ty {
            fn name(&self) -> &str {
                $name
            }

            fn description(&self) -> &str {
                $desc
            }

            fn input_schema(&self) -> Value {
                schema()
            }

            async fn call(&self, _args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
                let wf = workflow_from(ctx, channel(ctx, &self.workflow_channel))?;
                Ok(ToolOutput::text(self.report(&wf).render_block($scope)))
            }
        }
    };
}

validation_tool!(
    ValidateStructure,
    "validate_structure",
    "structure",
    validate_structure,
    "Check the current workflow's structure: a trigger exists, every node type exists, \
     connections have types both ends support and valid indexes, required inputs (e.g. an \
     agent's language model) are connected, sub-nodes are connected to a parent, every node is \
     reachable from a trigger, and expressions only reference existing nodes. Call it before \
     finishing the structure."
);

validation_tool!(
    ValidateConfiguration,
    "validate_configuration",
    "configuration",
    validate_configuration,
    "Check the current workflow's node parameters: agents have a prompt and a system message, \
     tool nodes are configured, $fromAI() is only used in tool nodes, no API keys or passwords \
     are hard-coded, webhook response modes match Respond to Webhook nodes, required parameters \
     are set and options have valid values. Call it before finishing the configuration."
);
