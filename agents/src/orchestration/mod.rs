//! Deep-agent primitives any graph can use from the DSL: sub-agents run as child runs
//! ([`subagent`], the [`DelegateTool`]), planned tasks ([`PlanTool`]), deferred tools
//! ([`SearchToolsTool`], [`LoadToolTool`], and [`crate::nodes::LlmNode::deferred`]), and human
//! confirmation ([`confirm`], [`AskUserTool`]), and per-host approval of web access
//! ([`gate_url`]), the verify loop's state machine ([`ReportVerdictTool`]), enforced by the
//! graph through [`verify_stopped`] and [`VerifyStopNode`], and background tasks
//! ([`background`]: detached sub-agent runs the orchestrator steers).
//!
//! Nothing here knows a product: the tools a sub-agent may use come from a pool the
//! application registers ([`ToolPool`]).

mod ask_user;
pub mod background;
mod child_usage;
mod confirm;
mod deferred;
mod delegate;
mod domains;
mod plan;
pub mod subagent;
mod verify;
mod verify_gate;

pub use ask_user::{AskUserTool, ASK_USER};
pub use background::{Background, CANCEL_TASK, SEND_TO_TASK, START_BACKGROUND_TASK, TASK_STATUS};
pub use child_usage::{usage_channel, ChildUsage, USAGE};
pub use confirm::{approved, confirm, Confirmation};
pub use deferred::{
    DeferredTools, LoadToolTool, SearchToolsTool, LOADED_TOOLS, LOAD_TOOL, SEARCH_TOOLS,
};
pub use delegate::{DelegateTool, DELEGATE};
pub use domains::{gate_url, host_of, Remember, APPROVED_DOMAINS};
pub use plan::{PlanTool, PlannedTask, TaskRunner, PLAN};
pub use subagent::{SubAgent, DEFAULT_MAX_STEPS};
pub use verify::{ReportVerdictTool, MAX_ATTEMPTS, REPORT_VERDICT, VERIFY_LOOP};
pub use verify_gate::{stopped_subjects, verify_stopped, VerifyStopNode, FAILED_TERMINAL};

use crate::tools::Tool;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The tools sub-agents may be given, by name (the application's registered tools, minus the
/// orchestration tools themselves).
pub type ToolPool = Arc<BTreeMap<String, Arc<dyn Tool>>>;

/// Tools a sub-agent is never given: with them it could delegate, plan, start or steer
/// background tasks, or change what its orchestrator is offered.
pub const ORCHESTRATION_TOOLS: [&str; 8] = [
    DELEGATE,
    PLAN,
    SEARCH_TOOLS,
    LOAD_TOOL,
    START_BACKGROUND_TASK,
    TASK_STATUS,
    SEND_TO_TASK,
    CANCEL_TASK,
];

/// The orchestration tools over `pool`: `delegate`, `plan` (its `research` tasks get
/// `research_tools`; the kinds of `runners` run through them), `search_tools`, `load_tool`,
/// `ask_user`, and the background tools over the same pool ([`Background`]).
/// ([`ReportVerdictTool`] is a pool tool: sub-agents may be given it.)
pub fn orchestration_tools(
    pool: ToolPool,
    research_tools: Vec<String>,
    runners: Vec<(String, Arc<dyn TaskRunner>)>,
) -> Vec<Arc<dyn Tool>> {
    let mut plan = PlanTool::new(pool.clone(), research_tools);
    for (kind, runner) in runners {
        plan = plan.with_runner(kind, runner);
    }
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(DelegateTool::new(pool.clone())),
        Arc::new(plan),
        Arc::new(SearchToolsTool::new(pool.clone())),
        Arc::new(LoadToolTool::new(pool.clone())),
        Arc::new(AskUserTool),
    ];
    tools.extend(Background::new(pool).tools());
    tools
}
