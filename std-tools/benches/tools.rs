//! Micro-benchmarks of the builder tools: search_nodes over the real catalogue (the built-in one
//! when `../shared/data/n8n` is absent), connect_nodes, apply_operations on a 200-node workflow.

use agentgraph_agents::tools::{Tool, ToolContext};
use agentgraph_runtime::StateView;
use agentgraph_std_tools::builder::{ConnectNodes, SearchNodes};
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::operations::{apply_operations, Operation};
use agentgraph_std_tools::workflow::{Connection, Connections, Workflow, WorkflowNode};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

const LC: &str = "@n8n/n8n-nodes-langchain";

fn catalogue() -> Arc<Catalogue> {
    let dir = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/n8n"
    ));
    match Catalogue::load_n8n_dir(dir) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln!("real catalogue unavailable ({e}); benchmarking the built-in one");
            Arc::new(Catalogue::builtin().unwrap_or_default())
        }
    }
}

fn chain(n: usize) -> Workflow {
    let mut wf = Workflow::default();
    for i in 0..n {
        wf.add_node(WorkflowNode::new(
            format!("id{i}"),
            format!("Node {i}"),
            "n8n-nodes-base.set",
            3.4,
            [i as f64 * 240.0, 300.0],
        ));
        if i > 0 {
            wf.add_connection(
                &format!("Node {}", i - 1),
                "main",
                0,
                Connection::new(format!("Node {i}"), "main", 0),
            );
        }
    }
    wf
}

fn bench(c: &mut Criterion) {
    let cat = catalogue();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));

    let search = SearchNodes::new(cat.clone());
    let args = json!({"queries": [
        {"queryType": "name", "query": "http"},
        {"queryType": "subNodeSearch", "connectionType": "ai_languageModel", "query": "openai"}
    ]});
    let _ = search.run(&args); // build the search index once
    c.bench_function("search_nodes (2 queries)", |b| {
        b.iter(|| black_box(search.run(black_box(&args))))
    });

    let mut wf = Workflow::default();
    wf.add_node(WorkflowNode::new(
        "a",
        "AI Agent",
        format!("{LC}.agent"),
        2.2,
        [0.0, 0.0],
    ));
    wf.add_node(WorkflowNode::new(
        "m",
        "Model",
        format!("{LC}.lmChatOpenAi"),
        1.2,
        [0.0, 200.0],
    ));
    let ctx = ToolContext::detached(StateView::from_object(json!({"workflow": wf.to_value()})));
    let connect = ConnectNodes::new(cat.clone());
    let args = json!({"sourceNodeId": "a", "targetNodeId": "m"});
    c.bench_function(
        "connect_nodes (agent→model, swapped, incl. state parse)",
        |b| b.iter(|| rt.block_on(connect.call(black_box(args.clone()), &ctx))),
    );
    c.bench_function("connect_nodes plan only", |b| {
        b.iter(|| black_box(connect.plan(&wf, black_box(&args))))
    });

    let big = chain(200);
    let mut conns: Connections = BTreeMap::new();
    conns.entry("Node 199".into()).or_default().insert(
        "main".into(),
        vec![Some(vec![Connection::new("New", "main", 0)])],
    );
    let ops = vec![
        Operation::AddNodes {
            nodes: vec![WorkflowNode::new(
                "new",
                "New",
                "n8n-nodes-base.set",
                3.4,
                [0.0, 0.0],
            )],
        },
        Operation::MergeConnections { connections: conns },
        Operation::RemoveNode {
            node_ids: vec!["id100".into()],
        },
    ];
    c.bench_function("apply_operations (200 nodes, 3 ops)", |b| {
        b.iter(|| black_box(apply_operations(black_box(&big), black_box(&ops))))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
