//! `connect_nodes`: connects two nodes, inferring the connection type from their resolved ports,
//! turning an `ai_*` connection given in the wrong direction around, and validating indexes.
//!
//! Arguments: `{"sourceNodeId", "targetNodeId", "sourceOutputIndex"?: 0, "targetInputIndex"?: 0,
//! "connectionType"?}` (ids, or names as a fallback). Queues one `mergeConnections` operation and
//! answers `Connected "OpenAI Chat Model" to "AI Agent" via ai_languageModel` (plus
//! ` (swapped for correct direction …)` when the ends were turned around).
//!
//! Inference: the types the source outputs and the target accepts; when none, the `ai_*` types
//! the target outputs and the source accepts (the model named the consumer first: swap). One
//! type: use it; several: `AMBIGUOUS_CONNECTION_TYPE`; none: `INCOMPATIBLE_CONNECTION`. An
//! `ai_*` connection needs a sub-node at one end, and the sub-node is always the source.

use super::search_nodes::with_known_labels;
use super::state::{
    codes, current_workflow, depends_on_batch, find_node, is_sub_node, node_ports, opt_index,
    output_with_operations, req_str,
};
use crate::catalogue::{Catalogue, Ports};
use crate::operations::Operation;
use crate::workflow::{Connection, Connections, Workflow, WorkflowNode, MAIN};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The `connect_nodes` tool.
#[derive(Debug, Clone)]
pub struct ConnectNodes {
    catalogue: Arc<Catalogue>,
}

/// A validated connection, ready to queue.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedConnection {
    /// Source node name.
    pub source: String,
    /// Target node name.
    pub target: String,
    /// Connection type.
    pub kind: String,
    /// Source output index (among the source's outputs of `kind`).
    pub source_output_index: usize,
    /// Target input index (among the target's inputs of `kind`).
    pub target_input_index: usize,
    /// Whether source and target were swapped.
    pub swapped: bool,
}

impl PlannedConnection {
    /// The `mergeConnections` operation adding this connection.
    pub fn operation(&self) -> Operation {
        let mut outputs: Vec<Option<Vec<Connection>>> =
            vec![Some(Vec::new()); self.source_output_index];
        outputs.push(Some(vec![Connection::new(
            &self.target,
            &self.kind,
            u32::try_from(self.target_input_index).unwrap_or(u32::MAX),
        )]));
        let mut by_type = BTreeMap::new();
        by_type.insert(self.kind.clone(), outputs);
        let mut connections = Connections::new();
        connections.insert(self.source.clone(), by_type);
        Operation::MergeConnections { connections }
    }

    /// The tool message for this connection.
    pub fn message(&self) -> String {
        let mut m = format!(
            "Connected \"{}\" to \"{}\" via {}",
            self.source, self.target, self.kind
        );
        if self.source_output_index != 0 || self.target_input_index != 0 {
            m.push_str(&format!(
                " (output {} → input {})",
                self.source_output_index, self.target_input_index
            ));
        }
        if self.swapped {
            m.push_str(&format!(
                " (swapped for correct direction: the sub-node \"{}\" is the source of an {} \
                 connection and \"{}\" consumes it)",
                self.source, self.kind, self.target
            ));
        }
        m
    }
}

fn list(kinds: &[&str]) -> String {
    if kinds.is_empty() {
        "none".into()
    } else {
        kinds.join(", ")
    }
}

fn intersect<'a>(outs: &[&'a str], ins: &[&str]) -> Vec<&'a str> {
    outs.iter().copied().filter(|k| ins.contains(k)).collect()
}

impl ConnectNodes {
    /// The tool over `catalogue`.
    pub fn new(catalogue: Arc<Catalogue>) -> Self {
        ConnectNodes { catalogue }
    }

    /// Validates a connection request against `wf` (see the module docs).
    pub fn plan(&self, wf: &Workflow, args: &Value) -> Result<PlannedConnection, ToolError> {
        let source_key = req_str(args, "sourceNodeId")?;
        let target_key = req_str(args, "targetNodeId")?;
        let out_idx = opt_index(args, "sourceOutputIndex")?.unwrap_or(0);
        let in_idx = opt_index(args, "targetInputIndex")?.unwrap_or(0);
        let requested = args
            .get("connectionType")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let mut src = find_node(wf, source_key, "sourceNodeId")?;
        let mut tgt = find_node(wf, target_key, "targetNodeId")?;
        if src.name == tgt.name {
            return Err(ToolError::new(
                codes::SAME_NODE,
                format!(
                    "cannot connect node \"{}\" to itself; give two different node ids",
                    src.name
                ),
            ));
        }
        let mut sp = with_known_labels(&src.node_type, node_ports(&self.catalogue, src)?);
        let mut tp = with_known_labels(&tgt.node_type, node_ports(&self.catalogue, tgt)?);
        let (kind, swap) = infer(src, tgt, &sp, &tp, requested).map_err(|mut e| {
            // A `…Tool` node in the main flow: name the node type that belongs there.
            if let Some(main) = [tgt, src].into_iter().find_map(|n| {
                super::main_flow::main_flow_variant(&self.catalogue, wf, &n.node_type)
                    .map(|m| (n.name.clone(), m))
            }) {
                e.message.push_str(&format!(
                    ". \"{}\" is a tool variant that only an AI Agent calls (ai_tool) and this \
                     workflow has no agent: for a step of the main flow, remove it and add `{}` \
                     instead",
                    main.0, main.1
                ));
            }
            if let Some(hint) = super::model_chain::model_hint(&self.catalogue, wf, tgt) {
                e.message.push_str(&hint);
            }
            e
        })?;
        if swap {
            std::mem::swap(&mut src, &mut tgt);
            std::mem::swap(&mut sp, &mut tp);
        }
        if kind.starts_with("ai_") && !is_sub_node(&sp) && !is_sub_node(&tp) {
            return Err(ToolError::new(
                codes::SUB_NODE_REQUIRED,
                format!(
                    "{kind} connections link a sub-node (chat model, tool, memory, …) to the \
                     node using it, but neither \"{}\" nor \"{}\" is a sub-node; check the \
                     nodes' connectionParameters (e.g. a vector store used as a tool needs \
                     mode \"retrieve-as-tool\")",
                    src.name, tgt.name
                ),
            ));
        }
        let n_out = sp.outputs.iter().filter(|p| p.kind == kind).count();
        if out_idx >= n_out {
            return Err(ToolError::new(
                codes::INVALID_OUTPUT_INDEX,
                format!(
                    "sourceOutputIndex {out_idx} is out of range: \"{}\" has {n_out} {kind} \
                     output(s){}; use an index from 0 to {}{}",
                    src.name,
                    port_labels(&sp, &kind, false),
                    n_out.saturating_sub(1),
                    output_index_hint(src)
                ),
            ));
        }
        let in_ports: Vec<_> = tp.inputs.iter().filter(|p| p.kind == kind).collect();
        let Some(in_port) = in_ports.get(in_idx) else {
            return Err(ToolError::new(
                codes::INVALID_INPUT_INDEX,
                format!(
                    "targetInputIndex {in_idx} is out of range: \"{}\" has {} {kind} input(s){}; \
                     use an index from 0 to {}{}",
                    tgt.name,
                    in_ports.len(),
                    port_labels(&tp, &kind, true),
                    in_ports.len().saturating_sub(1),
                    input_index_hint(tgt)
                ),
            ));
        };
        let target_conn =
            Connection::new(&tgt.name, &kind, u32::try_from(in_idx).unwrap_or(u32::MAX));
        let existing = wf
            .connections
            .get(&src.name)
            .and_then(|t| t.get(&kind))
            .and_then(|o| o.get(out_idx))
            .and_then(Option::as_ref);
        if existing.is_some_and(|slot| slot.contains(&target_conn)) {
            return Err(ToolError::new(
                codes::ALREADY_CONNECTED,
                format!(
                    "\"{}\" output {out_idx} is already connected to \"{}\" input {in_idx} via \
                     {kind}; nothing to do",
                    src.name, tgt.name
                ),
            ));
        }
        if let Some(max) = in_port.max_connections {
            let incoming: Vec<String> = wf
                .incoming(&tgt.name, Some(&kind))
                .into_iter()
                .filter(|e| e.target.index as usize == in_idx)
                .map(|e| e.source)
                .collect();
            if incoming.len() >= max as usize {
                return Err(ToolError::new(
                    codes::INPUT_FULL,
                    format!(
                        "the {kind} input {in_idx} of \"{}\" accepts at most {max} connection(s) \
                         and already has one from {}; remove the existing connection first \
                         (remove_connection where available, otherwise remove_node on the node \
                         it comes from) or connect elsewhere",
                        tgt.name,
                        incoming
                            .iter()
                            .map(|s| format!("\"{s}\""))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        Ok(PlannedConnection {
            source: src.name.clone(),
            target: tgt.name.clone(),
            kind,
            source_output_index: out_idx,
            target_input_index: in_idx,
            swapped: swap,
        })
    }
}

/// Whether a planning error says the two ends have no connection type in common (inferred or
/// asked for).
fn incompatible(e: &ToolError) -> bool {
    matches!(
        e.code.as_str(),
        codes::INCOMPATIBLE_CONNECTION | codes::INVALID_CONNECTION_TYPE
    )
}

impl ConnectNodes {
    /// The connection planned after turning one end into its main-flow type, when the
    /// connection is then possible ([`super::main_flow`]): a tool-variant end (target first) in
    /// a workflow without an agent, or a trigger as the target beside another trigger.
    fn plan_as_main_flow(
        &self,
        wf: &Workflow,
        args: &Value,
    ) -> Option<(super::main_flow::MainFlowNode, PlannedConnection)> {
        let ends = ["targetNodeId", "sourceNodeId"]
            .into_iter()
            .filter_map(|k| args.get(k).and_then(Value::as_str).map(|v| (k, v)))
            .filter_map(|(k, key)| find_node(wf, key, "").ok().map(|n| (k, n)));
        for (end, node) in ends {
            let change =
                super::main_flow::as_main_flow_node(&self.catalogue, wf, node).or_else(|| {
                    (end == "targetNodeId")
                        .then(|| super::main_flow::as_action_node(&self.catalogue, wf, node))
                        .flatten()
                });
            let Some(change) = change else {
                continue;
            };
            if let Ok(plan) = self.plan(&change.workflow, args) {
                if plan.kind == MAIN {
                    return Some((change, plan));
                }
            }
        }
        None
    }
}

impl ConnectNodes {
    /// The connection planned without the `connectionType` asked for, when that type is
    /// impossible and the ends leave no doubt: a trigger connects through `main`,
    /// and a sub-node asked for `main` through its own `ai_*` type (another `ai_*` type stays
    /// refused: the model may have meant another node). A small model connected
    /// its schedule trigger to a Basic LLM Chain "via ai_languageModel", was refused, and never
    /// connected them. With a note saying so; `None` otherwise.
    fn plan_without_type(
        &self,
        wf: &Workflow,
        args: &Value,
        error: &ToolError,
    ) -> Option<(String, PlannedConnection)> {
        if error.code != codes::INVALID_CONNECTION_TYPE {
            return None;
        }
        let requested = args.get("connectionType").and_then(Value::as_str)?;
        let key = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default();
        let source = find_node(wf, key("sourceNodeId"), "").ok()?;
        let ports = node_ports(&self.catalogue, source).ok()?;
        let trigger = self
            .catalogue
            .get(&source.node_type, Some(source.version()))
            .is_some_and(|d| d.is_trigger());
        let plain = trigger || (is_sub_node(&ports) && requested == MAIN);
        if !plain {
            return None;
        }
        let mut without = args.clone();
        without.as_object_mut()?.remove("connectionType");
        let plan = self.plan(wf, &without).ok()?;
        let note = format!(
            "connectionType \"{requested}\" is not possible between \"{}\" and \"{}\"; they \
             connect via {} only. ",
            plan.source, plan.target, plan.kind
        );
        Some((note, plan))
    }

    /// A language model asked for as the target of a main-flow node: run through a Basic LLM
    /// Chain inserted between them ([`super::model_chain`]).
    fn plan_through_chain(
        &self,
        wf: &Workflow,
        args: &Value,
        ctx: &ToolContext,
    ) -> Option<super::model_chain::ThroughChain> {
        let key = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default();
        let source = find_node(wf, key("sourceNodeId"), "").ok()?;
        let target = find_node(wf, key("targetNodeId"), "").ok()?;
        super::model_chain::through_chain(self, &self.catalogue, ctx, wf, source, target)
    }
}

/// A node-type-specific hint for an output index beyond the node's outputs.
fn output_index_hint(node: &WorkflowNode) -> &'static str {
    match crate::catalogue::short_name(&node.node_type) {
        "switch" => {
            " (a Switch node has one output per routing rule: set its `rules` (one entry in \
             rules.values per output) or `mode: \"expression\"` with `numberOutputs` — in \
             add_nodes connectionParameters, or with update_node_parameters — then connect)"
        }
        _ => "",
    }
}

/// A node-type-specific hint for an input index beyond the node's inputs.
fn input_index_hint(node: &WorkflowNode) -> &'static str {
    match crate::catalogue::short_name(&node.node_type) {
        "merge" => {
            " (a Merge node gets more inputs from its `numberInputs` parameter: set it in \
             add_nodes connectionParameters or with update_node_parameters, then connect)"
        }
        _ => "",
    }
}

fn port_labels(ports: &Ports, kind: &str, inputs: bool) -> String {
    let side = if inputs {
        &ports.inputs
    } else {
        &ports.outputs
    };
    let labels: Vec<String> = side
        .iter()
        .filter(|p| p.kind == kind)
        .enumerate()
        .filter_map(|(i, p)| p.display_name.as_ref().map(|d| format!("{i}: {d}")))
        .collect();
    if labels.is_empty() {
        String::new()
    } else {
        format!(" ({})", labels.join(", "))
    }
}

/// The connection type and whether to swap the ends.
fn infer(
    src: &WorkflowNode,
    tgt: &WorkflowNode,
    sp: &Ports,
    tp: &Ports,
    requested: Option<&str>,
) -> Result<(String, bool), ToolError> {
    let (s_out, s_in, t_out, t_in) = (
        sp.output_kinds(),
        sp.input_kinds(),
        tp.output_kinds(),
        tp.input_kinds(),
    );
    if let Some(k) = requested {
        let forward = s_out.contains(&k) && t_in.contains(&k);
        let reverse = k.starts_with("ai_") && t_out.contains(&k) && s_in.contains(&k);
        return match (forward, reverse) {
            (true, true) => Ok((k.to_string(), !is_sub_node(sp) && is_sub_node(tp))),
            (true, false) => Ok((k.to_string(), false)),
            (false, true) => Ok((k.to_string(), true)),
            (false, false) => {
                let what = if !s_out.contains(&k) {
                    format!(
                        "source node \"{}\" does not output {k} (its outputs: {})",
                        src.name,
                        list(&s_out)
                    )
                } else {
                    format!(
                        "target node \"{}\" does not accept {k} (its inputs: {})",
                        tgt.name,
                        list(&t_in)
                    )
                };
                Err(ToolError::new(
                    codes::INVALID_CONNECTION_TYPE,
                    format!(
                        "cannot connect \"{}\" to \"{}\" via {k}: {what}. Omit connectionType to \
                         infer it, or change the nodes' connectionParameters",
                        src.name, tgt.name
                    ),
                ))
            }
        };
    }
    let forward = intersect(&s_out, &t_in);
    let reverse: Vec<&str> = intersect(&t_out, &s_in)
        .into_iter()
        .filter(|k| k.starts_with("ai_"))
        .collect();
    match (forward.as_slice(), reverse.as_slice()) {
        ([k], _) => {
            let swap =
                k.starts_with("ai_") && !is_sub_node(sp) && is_sub_node(tp) && reverse.contains(k);
            Ok((k.to_string(), swap))
        }
        ([], [k]) => Ok((k.to_string(), true)),
        ([], []) => {
            let hint = if t_in.is_empty() && is_sub_node(tp) {
                format!(
                    " \"{}\" is a sub-node (outputs: {}): it has no inputs and is connected as \
                     the source, to the node that uses it.",
                    tgt.name,
                    list(&t_out)
                )
            } else if t_in.is_empty() {
                format!(
                    " \"{}\" has no inputs (a trigger starts the workflow: connect it as the \
                     source).",
                    tgt.name
                )
            } else if s_out.is_empty() {
                format!(" \"{}\" has no outputs.", src.name)
            } else {
                String::new()
            };
            Err(ToolError::new(
                codes::INCOMPATIBLE_CONNECTION,
                format!(
                    "no compatible connection types between \"{}\" (outputs: {}) and \"{}\" \
                     (inputs: {}).{hint} Check that you picked the right nodes, or set the \
                     parameters that enable the input (e.g. a vector store's mode, an agent's \
                     hasOutputParser, a document loader's textSplittingMode \"custom\")",
                    src.name,
                    list(&s_out),
                    tgt.name,
                    list(&t_in)
                ),
            ))
        }
        (many, _) => {
            let many: Vec<&str> = if many.is_empty() {
                reverse.clone()
            } else {
                many.to_vec()
            };
            let mut sorted = many.clone();
            sorted.sort_by_key(|k| *k != MAIN);
            Err(ToolError::new(
                codes::AMBIGUOUS_CONNECTION_TYPE,
                format!(
                    "several connection types are possible between \"{}\" and \"{}\": {}; call \
                     connect_nodes again with connectionType set to one of them",
                    src.name,
                    tgt.name,
                    list(&sorted)
                ),
            ))
        }
    }
}

#[async_trait]
impl Tool for ConnectNodes {
    fn name(&self) -> &str {
        "connect_nodes"
    }

    fn description(&self) -> &str {
        "Connect two nodes by their IDs. The connection type is inferred from the nodes' inputs \
         and outputs. For AI connections the sub-node (chat model, memory, tool, embeddings, \
         document loader, text splitter, output parser, vector store used as tool) is the source \
         and the node using it (agent, chain, vector store) the target; a reversed pair is \
         swapped automatically. Indexes select among outputs/inputs of that type (e.g. IF: \
         output 0 true, 1 false; Merge: input 0, 1, …). Give connectionType only when several \
         types are possible."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "sourceNodeId": {"type": "string", "description": "ID of the source node (for ai_* connections: the sub-node)."},
                "targetNodeId": {"type": "string", "description": "ID of the target node (for ai_* connections: the node using the sub-node)."},
                "sourceOutputIndex": {"type": "integer", "minimum": 0, "description": "Output index among the source's outputs of the connection type (default 0)."},
                "targetInputIndex": {"type": "integer", "minimum": 0, "description": "Input index among the target's inputs of the connection type (default 0)."},
                "connectionType": {"type": "string", "description": "main, ai_languageModel, ai_tool, … (inferred when omitted)."}
            },
            "required": ["sourceNodeId", "targetNodeId"]
        })
    }

    fn rerun_after_batch(&self, error: &ToolError) -> bool {
        depends_on_batch(error)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let wf = current_workflow(ctx)?;
        // The connection asked for is there (add_nodes may have made it): nothing to do, and
        // not a failure the model must fix.
        let plan = match self.plan(&wf, &args) {
            Err(e) if e.code == codes::ALREADY_CONNECTED => {
                return Ok(ToolOutput::text(e.message));
            }
            Err(e) if incompatible(&e) => {
                if let Some((note, plan)) = self.plan_without_type(&wf, &args, &e) {
                    return Ok(output_with_operations(
                        ctx,
                        format!("{note}{}", plan.message()),
                        &[plan.operation()],
                    ));
                }
                if let Some((change, plan)) = self.plan_as_main_flow(&wf, &args) {
                    return Ok(output_with_operations(
                        ctx,
                        format!("{}{}", change.note, plan.message()),
                        &[change.operation, plan.operation()],
                    ));
                }
                return match self.plan_through_chain(&wf, &args, ctx) {
                    Some(chain) => Ok(output_with_operations(ctx, chain.note, &chain.operations)),
                    None => Err(e),
                };
            }
            other => other?,
        };
        Ok(output_with_operations(
            ctx,
            plan.message(),
            &[plan.operation()],
        ))
    }
}
