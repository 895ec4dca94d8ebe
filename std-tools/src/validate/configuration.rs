//! Configuration rules: agent prompts, tool parameters, webhook response mode.

use serde_json::Value;

use super::codes::*;
use super::{Ctx, Finding, NodeInfo};
use crate::catalogue::property_visible;

const AGENT: &str = "@n8n/n8n-nodes-langchain.agent";
const RESPOND_TO_WEBHOOK: &str = "n8n-nodes-base.respondToWebhook";

pub(crate) fn check(ctx: &Ctx, out: &mut Vec<Finding>) {
    for n in &ctx.nodes {
        if n.node.node_type == AGENT {
            agent_prompts(n, out);
        }
        if n.is_tool() {
            tool_parameters(n, out);
        }
    }
    webhook_response(ctx, out);
}

/// Whether a string is empty once the expression marker and blanks are removed.
pub(crate) fn blank(s: &str) -> bool {
    let t = s.trim();
    t.strip_prefix('=').unwrap_or(t).trim().is_empty()
}

fn agent_prompts(n: &NodeInfo, out: &mut Vec<Finding>) {
    let prompt_type = n.params.get("promptType").and_then(Value::as_str);
    if prompt_type == Some("define") {
        match n.params.get("text") {
            Some(Value::String(text)) if !blank(text) => {
                if !text.contains("{{") {
                    out.push(
                        Finding::new(
                            AGENT_STATIC_PROMPT,
                            Some(n.name()),
                            "the agent's prompt is fixed text without any expression, so every \
                             run sends the same prompt whatever the input; include the input, \
                             e.g. `={{ $json.chatInput }}`",
                        )
                        .at("text"),
                    );
                }
            }
            _ => out.push(
                Finding::new(
                    AGENT_NO_PROMPT,
                    Some(n.name()),
                    "the agent is set to define its prompt below (promptType `define`) but the \
                     prompt (`text`) is empty; set it, usually to an expression of the input",
                )
                .at("text"),
            ),
        }
    }
    let agent_kind = n.params.get("agent").and_then(Value::as_str);
    let has_system_message = matches!(
        agent_kind,
        None | Some("toolsAgent") | Some("conversationalAgent") | Some("openAiFunctionsAgent")
    );
    if !has_system_message {
        return;
    }
    let system = n
        .params
        .get("options")
        .and_then(|o| o.get("systemMessage"))
        .and_then(Value::as_str);
    if system.is_none_or(blank) {
        out.push(
            Finding::new(
                AGENT_NO_SYSTEM_PROMPT,
                Some(n.name()),
                "the agent has no system message; set options.systemMessage to describe its \
                 role, tools and rules",
            )
            .at("options.systemMessage"),
        );
    }
}

fn meaningful(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => !blank(s),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    }
}

fn tool_parameters(n: &NodeInfo, out: &mut Vec<Finding>) {
    if n.node.parameters.values().any(meaningful) {
        return;
    }
    let Some(desc) = n.desc else { return };
    let needs = desc.properties.iter().find(|p| {
        if matches!(
            p.kind.as_str(),
            "notice" | "callout" | "hidden" | "button" | "credentialsSelect"
        ) || !property_visible(p, &n.params, n.version)
        {
            return false;
        }
        let empty_default = p.default.as_ref().is_none_or(|d| !meaningful(d));
        empty_default && (p.is_required() || matches!(p.kind.as_str(), "string" | "json"))
    });
    if let Some(p) = needs {
        out.push(Finding::new(
            TOOL_NO_PARAMETERS,
            Some(n.name()),
            format!(
                "this tool has no parameters set (e.g. `{}` is empty), so the agent cannot use \
                 it meaningfully; configure it, using $fromAI() for values the agent should fill",
                p.name
            ),
        ));
    }
}

/// Whether the node is set to answer its webhook call with a Respond to Webhook node.
fn responds_with_node(n: &NodeInfo) -> Option<&'static str> {
    let is_mode = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .is_some_and(|s| s.starts_with("responseNode"))
    };
    if is_mode(n.node.parameters.get("responseMode")) {
        return Some("responseMode");
    }
    if is_mode(
        n.node
            .parameters
            .get("options")
            .and_then(|o| o.get("responseMode")),
    ) {
        return Some("options.responseMode");
    }
    None
}

fn webhook_response(ctx: &Ctx, out: &mut Vec<Finding>) {
    let enabled = || ctx.nodes.iter().filter(|n| !n.node.is_disabled());
    let has_respond = enabled().any(|n| n.node.node_type == RESPOND_TO_WEBHOOK);
    let mut any_mode = false;
    for n in enabled() {
        if let Some(path) = responds_with_node(n) {
            any_mode = true;
            if !has_respond {
                out.push(
                    Finding::new(
                        WEBHOOK_RESPOND_NODE_MISSING,
                        Some(n.name()),
                        "the node is set to respond 'using Respond to Webhook node' but the \
                         workflow has no Respond to Webhook node, so callers never get an \
                         answer; add n8n-nodes-base.respondToWebhook at the end of the flow or \
                         change the response mode",
                    )
                    .at(path),
                );
            }
        }
    }
    if !any_mode {
        for n in enabled().filter(|n| n.node.node_type == RESPOND_TO_WEBHOOK) {
            out.push(Finding::new(
                RESPOND_NODE_WITHOUT_RESPONSE_MODE,
                Some(n.name()),
                "there is a Respond to Webhook node but no Webhook/Form/Chat trigger is set to \
                 respond with it; set the trigger's responseMode to `responseNode` or remove \
                 this node",
            ));
        }
    }
}
