//! Structure rules: triggers, node types, ports, inputs, connection types and indexes, merge
//! inputs, sub-nodes and reachability.

use std::collections::{HashSet, VecDeque};

use super::codes::*;
use super::{Ctx, Finding, NodeInfo};
use crate::workflow::MAIN;

pub(crate) fn check(ctx: &Ctx, out: &mut Vec<Finding>) {
    triggers(ctx, out);
    types_and_ports(ctx, out);
    connections(ctx, out);
    required_inputs(ctx, out);
    sub_nodes(ctx, out);
    reachability(ctx, out);
}

fn triggers(ctx: &Ctx, out: &mut Vec<Finding>) {
    if ctx.nodes.is_empty() {
        out.push(Finding::new(
            EMPTY_WORKFLOW,
            None,
            "the workflow has no nodes (sticky notes aside), so there is nothing to run; add a \
             trigger node (e.g. n8n-nodes-base.manualTrigger, scheduleTrigger, webhook) and \
             the nodes that do the work, then connect them",
        ));
        return;
    }
    let any = ctx
        .nodes
        .iter()
        .any(|n| n.is_trigger() && !n.node.is_disabled());
    if !any {
        out.push(Finding::new(
            NO_TRIGGER,
            None,
            "the workflow has no enabled trigger node, so it can never start; add one (e.g. \
             n8n-nodes-base.manualTrigger, scheduleTrigger, webhook, or \
             @n8n/n8n-nodes-langchain.chatTrigger) and connect it to the first node",
        ));
    }
}

fn types_and_ports(ctx: &Ctx, out: &mut Vec<Finding>) {
    for n in &ctx.nodes {
        let Some(desc) = n.desc else {
            out.push(Finding::new(
                NODE_TYPE_NOT_FOUND,
                Some(n.name()),
                format!(
                    "node type `{}` is not in the node catalogue; use search_nodes to find an \
                     existing type",
                    n.node.node_type
                ),
            ));
            continue;
        };
        let asked = n.node.version();
        if !desc.version.contains(asked) {
            out.push(Finding::new(
                NODE_VERSION_NOT_FOUND,
                Some(n.name()),
                format!(
                    "typeVersion {} of `{}` is not a known version (known: {}); checked as \
                     version {}",
                    n.node.type_version,
                    n.node.node_type,
                    desc.version
                        .versions()
                        .iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    n.version
                ),
            ));
        }
        if let Some(Err(e)) = &n.ports {
            out.push(Finding::new(
                PORTS_UNRESOLVABLE,
                Some(n.name()),
                format!("the node's inputs/outputs cannot be resolved: {e}"),
            ));
        }
    }
}

fn is_merge(n: &NodeInfo) -> bool {
    n.node.node_type == "n8n-nodes-base.merge"
}

fn connections(ctx: &Ctx, out: &mut Vec<Finding>) {
    let mut missing_reported: HashSet<(&str, &str)> = HashSet::new();
    for e in &ctx.edges {
        let source = ctx.get(&e.source);
        let target = ctx.get(&e.target.node);
        if !ctx.has_node(&e.source) && missing_reported.insert((e.source.as_str(), "source")) {
            out.push(Finding::new(
                CONNECTION_NODE_MISSING,
                Some(&e.source),
                format!(
                    "connections are listed from node \"{}\", which is not in the workflow; \
                         remove them",
                    e.source
                ),
            ));
        }
        if !ctx.has_node(&e.target.node) {
            if missing_reported.insert((e.target.node.as_str(), "target")) {
                out.push(Finding::new(
                    CONNECTION_NODE_MISSING,
                    Some(&e.source),
                    format!(
                        "a {} connection goes to node \"{}\", which is not in the workflow; \
                         remove it",
                        e.kind, e.target.node
                    ),
                ));
            }
            continue;
        }
        if e.kind != e.target.kind {
            out.push(Finding::new(
                UNSUPPORTED_CONNECTION_TYPE,
                Some(&e.source),
                format!(
                    "the connection to \"{}\" is listed under {} but targets a {} input; both \
                     ends of a connection must have the same type",
                    e.target.node, e.kind, e.target.kind
                ),
            ));
            continue;
        }
        if let Some(outputs) = source.and_then(NodeInfo::outputs) {
            let mut count = outputs.iter().filter(|p| p.kind == e.kind).count();
            // `onError: continueErrorOutput` adds an error output after the main ones.
            if e.kind == MAIN
                && source.is_some_and(|s| {
                    s.node.extra.get("onError").and_then(|v| v.as_str())
                        == Some("continueErrorOutput")
                })
            {
                count += 1;
            }
            if count == 0 {
                out.push(Finding::new(
                    UNSUPPORTED_CONNECTION_TYPE,
                    Some(&e.source),
                    format!(
                        "\"{}\" has no {} output (its outputs: {}), but connects to \"{}\" \
                         with that type",
                        e.source,
                        e.kind,
                        kinds(outputs),
                        e.target.node
                    ),
                ));
                continue;
            } else if e.source_output >= count {
                out.push(Finding::new(
                    OUTPUT_INDEX_OUT_OF_RANGE,
                    Some(&e.source),
                    format!(
                        "the connection to \"{}\" leaves {} output {} but the node has {} {} \
                         output(s)",
                        e.target.node, e.kind, e.source_output, count, e.kind
                    ),
                ));
            }
        }
        let Some(t) = target else { continue };
        if let Some(inputs) = t.inputs() {
            let count = inputs.iter().filter(|p| p.kind == e.kind).count();
            let index = e.target.index as usize;
            if count == 0 {
                out.push(Finding::new(
                    UNSUPPORTED_CONNECTION_TYPE,
                    Some(&e.target.node),
                    format!(
                        "\"{}\" does not accept {} connections (its inputs: {}), but \"{}\" \
                         connects to it with that type",
                        e.target.node,
                        e.kind,
                        kinds(inputs),
                        e.source
                    ),
                ));
            } else if index >= count {
                let code = if is_merge(t) && e.kind == MAIN {
                    MERGE_INPUT_OUT_OF_RANGE
                } else {
                    INPUT_INDEX_OUT_OF_RANGE
                };
                let hint = if code == MERGE_INPUT_OUT_OF_RANGE {
                    format!(
                        "; raise numberInputs to at least {} or connect to another input",
                        index + 1
                    )
                } else {
                    String::new()
                };
                out.push(Finding::new(
                    code,
                    Some(&e.target.node),
                    format!(
                        "\"{}\" connects to {} input index {} but the node has {} {} input(s) \
                         (indexes 0–{}){hint}",
                        e.source,
                        e.kind,
                        index,
                        count,
                        e.kind,
                        count - 1
                    ),
                ));
            }
        }
    }
}

fn kinds(ports: &[crate::catalogue::Port]) -> String {
    let mut ks: Vec<&str> = Vec::new();
    for p in ports {
        if !ks.contains(&p.kind.as_str()) {
            ks.push(&p.kind);
        }
    }
    if ks.is_empty() {
        "none".into()
    } else {
        ks.join(", ")
    }
}

fn required_inputs(ctx: &Ctx, out: &mut Vec<Finding>) {
    for n in &ctx.nodes {
        if n.node.is_disabled() {
            continue;
        }
        let Some(inputs) = n.inputs() else { continue };
        let mut seen: Vec<&str> = Vec::new();
        for p in inputs.iter().filter(|p| p.required) {
            if seen.contains(&p.kind.as_str()) {
                continue;
            }
            seen.push(&p.kind);
            let connected = ctx
                .edges
                .iter()
                .any(|e| e.target.node == n.node.name && e.target.kind == p.kind);
            if !connected {
                let label = p
                    .display_name
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default();
                let example = sub_node_example(&p.kind)
                    .map(|t| format!(" (for example `{t}`)"))
                    .unwrap_or_default();
                out.push(Finding::new(
                    MISSING_REQUIRED_INPUT,
                    Some(n.name()),
                    format!(
                        "the required {}{label} input has no connection; connect a node that \
                         outputs {}{example} to it",
                        p.kind, p.kind
                    ),
                ));
            }
        }
    }
}

/// A common node type that outputs `kind`, named in a missing-input finding: a small model
/// told only "connect a node that outputs ai_languageModel" added the AI Agent again.
fn sub_node_example(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "ai_languageModel" => "@n8n/n8n-nodes-langchain.lmChatOpenAi",
        "ai_memory" => "@n8n/n8n-nodes-langchain.memoryBufferWindow",
        "ai_embedding" => "@n8n/n8n-nodes-langchain.embeddingsOpenAi",
        "ai_document" => "@n8n/n8n-nodes-langchain.documentDefaultDataLoader",
        "ai_textSplitter" => "@n8n/n8n-nodes-langchain.textSplitterRecursiveCharacterTextSplitter",
        "ai_vectorStore" => "@n8n/n8n-nodes-langchain.vectorStoreInMemory",
        "ai_outputParser" => "@n8n/n8n-nodes-langchain.outputParserStructured",
        _ => return None,
    })
}

/// Whether the node is a sub-node: its outputs are all `ai_*` (or, when its ports are
/// unknown, its connections all leave as `ai_*`).
pub(crate) fn is_sub_node(ctx: &Ctx, n: &NodeInfo) -> bool {
    match n.outputs() {
        Some(outputs) => !outputs.is_empty() && outputs.iter().all(|p| p.kind.starts_with("ai_")),
        None => {
            let mut any = false;
            for e in ctx.edges.iter().filter(|e| e.source == n.node.name) {
                if !e.kind.starts_with("ai_") {
                    return false;
                }
                any = true;
            }
            any
        }
    }
}

fn sub_nodes(ctx: &Ctx, out: &mut Vec<Finding>) {
    for n in &ctx.nodes {
        if n.node.is_disabled() || !is_sub_node(ctx, n) {
            continue;
        }
        let connected = ctx
            .edges
            .iter()
            .any(|e| e.source == n.node.name && ctx.has_node(&e.target.node));
        if !connected {
            let kinds = n.outputs().map(kinds).unwrap_or_else(|| "ai_*".into());
            out.push(Finding::new(
                SUB_NODE_NOT_CONNECTED,
                Some(n.name()),
                format!(
                    "this sub-node (output: {kinds}) is not connected to any parent node, so it \
                     is never used; connect it to the agent, chain or vector store that should \
                     use it"
                ),
            ));
        }
    }
}

fn reachability(ctx: &Ctx, out: &mut Vec<Finding>) {
    let starts: Vec<usize> = ctx
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| {
            n.is_trigger()
                || n.inputs()
                    .is_some_and(|i| !i.iter().any(|p| p.kind == MAIN))
                    && !is_sub_node(ctx, n)
                    && ctx.edges.iter().any(|e| e.source == n.node.name)
        })
        .map(|(i, _)| i)
        .collect();
    if !ctx.nodes.iter().any(|n| n.is_trigger()) {
        return; // NO_TRIGGER says it already
    }
    let mut seen = vec![false; ctx.nodes.len()];
    let mut queue: VecDeque<usize> = starts.into_iter().collect();
    for &i in &queue {
        seen[i] = true;
    }
    let mut main_out: std::collections::HashMap<&str, Vec<&str>> = Default::default();
    for e in ctx.edges.iter().filter(|e| e.kind == MAIN) {
        main_out
            .entry(e.source.as_str())
            .or_default()
            .push(e.target.node.as_str());
    }
    while let Some(i) = queue.pop_front() {
        let name = ctx.nodes[i].node.name.as_str();
        for t in main_out.get(name).into_iter().flatten() {
            if let Some(&j) = ctx.by_name.get(t) {
                if !seen[j] {
                    seen[j] = true;
                    queue.push_back(j);
                }
            }
        }
    }
    if ctx.nodes.len() > 1 {
        for n in ctx
            .nodes
            .iter()
            .filter(|n| n.is_trigger() && !n.node.is_disabled())
        {
            if !main_out.contains_key(n.node.name.as_str())
                && !ctx.edges.iter().any(|e| e.source == n.node.name)
            {
                out.push(Finding::new(
                    TRIGGER_NOT_CONNECTED,
                    Some(n.name()),
                    "this trigger is not connected to any node, so it starts nothing; connect \
                     it to the first node of the flow or remove it",
                ));
            }
        }
    }
    for (i, n) in ctx.nodes.iter().enumerate() {
        if seen[i] || n.node.is_disabled() || is_sub_node(ctx, n) {
            continue;
        }
        let connected = ctx
            .edges
            .iter()
            .any(|e| e.source == n.node.name || e.target.node == n.node.name);
        let why = if connected {
            "no trigger leads to it through main connections"
        } else {
            "it has no connections at all"
        };
        out.push(Finding::new(
            UNREACHABLE_NODE,
            Some(n.name()),
            format!("the node never runs: {why}; connect it after the trigger or remove it"),
        ));
    }
}
