//! `agentgraph mcp`: the graphs of a folder (and, with `--builder-tools`, the workflow
//! builder's tools) served as an MCP server over stdio or streamable HTTP.
//!
//! Each graph is a tool (`graph_tool`): its input channels are the arguments, a call runs it on
//! a new thread of the store, its output channels are the result; an interrupt is an error
//! naming the thread, which the `resume` tool answers. The builder's tools (`builder`) work on
//! a workflow held per MCP session.

mod builder;
mod graph_tool;

use crate::exit;
use crate::graph::{fail, print_diagnostics, Ctx};
use agentgraph_dsl::Project;
use agentgraph_mcp::server::{
    serve_http, serve_stdio, tool_name, unique_name, ServedTool, ToolServer, HTTP_PATH,
};
use agentgraph_runtime::{Checkpointer, SledCheckpointer};
use graph_tool::{leading_comment, output_schema, GraphTool, ResumeTool, RESUME};
use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Options of `agentgraph mcp`.
#[derive(clap::Args)]
pub struct McpOpts {
    /// The folder whose graphs (`*.ag`) become tools.
    #[arg(long, value_name = "DIR")]
    graphs: Option<PathBuf>,
    /// Also offer the workflow builder's tools (search_nodes, add_nodes, connect_nodes, …,
    /// get_workflow) over a workflow held per MCP session.
    #[arg(long)]
    pub builder_tools: bool,
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio.
    #[arg(long, value_name = "ADDR", value_parser = crate::socket_addr)]
    http: Option<SocketAddr>,
    #[command(flatten)]
    pub catalogue: crate::catalogue::CatalogueOpt,
}

const INSTRUCTIONS: &str = "agentgraph: each graph tool runs an agentgraph graph on a new \
thread and returns its output channels; when a graph stops at an interrupt, the error names \
the thread and `resume` answers it. The workflow tools (when offered) edit one n8n workflow \
per session: search_nodes and get_node_details to choose node types, add_nodes, \
connect_nodes, set_node_parameters, remove_node and remove_connection to edit, \
validate_structure and validate_configuration to check, get_workflow to read the result.";

/// `agentgraph mcp`: until stdin closes (stdio), or Ctrl-C / SIGTERM.
pub async fn mcp(ctx: &Ctx, opts: McpOpts) -> u8 {
    if opts.graphs.is_none() && !opts.builder_tools {
        return fail(
            "`agentgraph mcp` needs --graphs DIR, --builder-tools or both",
            exit::USAGE,
        );
    }
    let mut server =
        ToolServer::new("agentgraph", env!("CARGO_PKG_VERSION")).instructions(INSTRUCTIONS);
    let mut builder_tools = Vec::new();
    if opts.builder_tools {
        let n8n = crate::n8n_builder(opts.catalogue.source());
        // The catalogue may be large: read it off the async workers.
        let catalogue = match tokio::task::spawn_blocking(move || n8n.catalogue()).await {
            Ok(c) => c,
            Err(e) => return fail(format!("loading the node catalogue: {e}"), exit::FAILED),
        };
        builder_tools = builder::tools(catalogue.clone());
        server = server
            .initial_state(builder::initial_state())
            .writes(Arc::new(builder::BuilderWrites::new(catalogue)));
    }
    let mut taken: BTreeSet<String> = builder_tools
        .iter()
        .map(|t| t.tool.name().to_string())
        .collect();
    taken.insert(RESUME.to_string());
    let (graphs, store) = match &opts.graphs {
        Some(dir) => match graph_tools(ctx, dir, &mut taken) {
            Ok(g) => g,
            Err(code) => return code,
        },
        None => (Vec::new(), None),
    };
    let mut served: Vec<ServedTool> = graphs
        .iter()
        .map(|g| {
            let tool: Arc<dyn agentgraph_agents::tools::Tool> = g.clone();
            ServedTool::new(tool).output_schema(output_schema(g.graph()))
        })
        .collect();
    if !graphs.is_empty() {
        served.push(ServedTool::new(Arc::new(ResumeTool::new(&graphs))));
    }
    served.extend(builder_tools);
    for tool in served {
        if let Err(e) = server.add(tool) {
            return fail(e, exit::USAGE);
        }
    }
    let names = server.tool_names().join(", ");
    let server = Arc::new(server);
    match opts.http {
        None => {
            eprintln!("agentgraph mcp on stdio; tools: {names}");
            let code = match serve_stdio(server, crate::stop_signal()).await {
                Ok(()) => exit::DONE,
                Err(e) => fail(e, exit::FAILED),
            };
            // A terminal's stdin is read on a blocking thread that only a typed line ends, and
            // the runtime would wait for it on the way out: leave now, the store flushed.
            if std::io::stdin().is_terminal() {
                if let Some(store) = &store {
                    let _ = store.flush().await;
                }
                std::process::exit(i32::from(code));
            }
            code
        }
        Some(addr) => {
            let listener = match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => l,
                Err(e) => return fail(format!("cannot listen on {addr}: {e}"), exit::USAGE),
            };
            // The bound address, so `--http 127.0.0.1:0` tells the caller its port.
            let bound = listener.local_addr().unwrap_or(addr);
            eprintln!("agentgraph mcp on http://{bound}{HTTP_PATH} (Ctrl-C or SIGTERM stops); tools: {names}");
            match serve_http(server, listener, crate::stop_signal()).await {
                Ok(()) => exit::DONE,
                Err(e) => fail(e, exit::FAILED),
            }
        }
    }
}

/// The graphs of `dir` (`*.ag`, by file name) as tools over the store, and the store (opened
/// when there is a graph file); a file that does not compile is reported and left out. Names
/// are the graphs' names made valid and unique (`taken` grows with them).
fn graph_tools(ctx: &Ctx, dir: &Path, taken: &mut BTreeSet<String>) -> Result<GraphTools, u8> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        fail(
            format!("cannot read --graphs {}: {e}", dir.display()),
            exit::USAGE,
        )
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "ag"))
        .collect();
    files.sort();
    if files.is_empty() {
        eprintln!("warning: no .ag files in {}", dir.display());
        return Ok((Vec::new(), None));
    }
    let store: Arc<SledCheckpointer> = crate::graph::store(ctx)?;
    let registry = (ctx.registry)();
    let mut tools = Vec::new();
    for path in files {
        let project = match Project::load(&path) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("warning: {}: {e}; left out", path.display());
                continue;
            }
        };
        let graph = match project.check_and_compile(&registry) {
            Ok(compiled) => compiled.graph,
            Err(diags) => {
                print_diagnostics(&project, &diags, false);
                eprintln!("warning: {} has errors; left out", path.display());
                continue;
            }
        };
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        let raw = match graph.name() {
            "" => stem.unwrap_or_default(),
            n => n.to_string(),
        };
        let name = unique_name(&tool_name(&raw), taken);
        taken.insert(name.clone());
        let comment = std::fs::read_to_string(&path)
            .map(|s| leading_comment(&s))
            .unwrap_or_default();
        let graph = crate::graph::attach_storage(graph, &store)?;
        tools.push(Arc::new(GraphTool::new(name, graph, &comment)));
    }
    Ok((tools, Some(store)))
}

/// Graph tools and the store their runs use.
type GraphTools = (Vec<Arc<GraphTool>>, Option<Arc<SledCheckpointer>>);
