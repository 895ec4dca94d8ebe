//! Two checkpointer instances on separate connections (as two server processes would be) share
//! threads: a run interrupted on one is resumed on the other, and each sees the other's
//! checkpoints and history.

use crate::common;

use agentgraph_postgres::{PostgresCheckpointer, PostgresOptions};
use agentgraph_runtime::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// `ask` interrupts with a question and stores the answer; `done` records that it ran.
fn graph(cp: Arc<dyn Checkpointer>, ask_runs: Arc<AtomicUsize>) -> CompiledGraph {
    GraphBuilder::new("confirm")
        .channel(ChannelSpec::new("answer", ValueType::String).default_value(json!("")))
        .channel(ChannelSpec::new("finished", ValueType::Bool).default_value(json!(false)))
        .node(
            "ask",
            node_fn(move |ctx: TaskContext| {
                let runs = ask_runs.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    let v = ctx.interrupt(json!({"question": "delete 3 nodes?"}))?;
                    Ok(Update::new().set("answer", v))
                }
            }),
        )
        .node(
            "done",
            node_fn(
                |_ctx: TaskContext| async move { Ok(Update::new().set("finished", json!(true))) },
            ),
        )
        .edge(START, "ask")
        .edge("ask", "done")
        .compile()
        .expect("graph compiles")
        .with_checkpointer(cp)
}

async fn instance(url: &str, schema: &str) -> Arc<dyn Checkpointer> {
    let cp = PostgresCheckpointer::connect_with(url, PostgresOptions::default().schema(schema))
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
    Arc::new(cp)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_interrupted_on_one_instance_resumes_on_another() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let a_runs = Arc::new(AtomicUsize::new(0));
    let b_runs = Arc::new(AtomicUsize::new(0));
    let a = graph(instance(&url, &schema).await, a_runs.clone());
    let b = graph(instance(&url, &schema).await, b_runs.clone());

    let out = a
        .invoke(Input::values(json!({})), RunConfig::thread("t1"))
        .await
        .expect("run on instance a");
    let RunStatus::Interrupted { interrupts, next } = &out.status else {
        panic!("expected an interrupt, got {:?}", out.status)
    };
    assert_eq!(next, &["ask"]);
    assert_eq!(interrupts[0].value, json!({"question": "delete 3 nodes?"}));
    drop(a); // instance a goes away, like a stopped process

    // Instance b sees the thread and its pending interrupt.
    let state = b
        .get_state("t1", None)
        .await
        .expect("state on b")
        .expect("b sees the thread");
    assert_eq!(state.interrupts, interrupts.clone());
    let out = b
        .invoke(Input::resume(json!("yes")), RunConfig::thread("t1"))
        .await
        .expect("resume on instance b");
    assert_eq!(out.status, RunStatus::Done);
    assert_eq!(out.values["answer"], json!("yes"));
    assert_eq!(out.values["finished"], json!(true));
    assert_eq!(a_runs.load(Ordering::SeqCst), 1);
    assert_eq!(
        b_runs.load(Ordering::SeqCst),
        1,
        "b re-ran the interrupted node once"
    );

    // A third instance (a fresh connection) sees the finished thread and all of its history.
    let c = graph(instance(&url, &schema).await, Arc::new(AtomicUsize::new(0)));
    let state = c
        .get_state("t1", None)
        .await
        .expect("state")
        .expect("thread");
    assert!(state.next.is_empty(), "finished: {:?}", state.next);
    assert_eq!(state.values["answer"], json!("yes"));
    let history = c
        .history("t1", ListQuery::default())
        .await
        .expect("history");
    let history_b = b
        .history("t1", ListQuery::default())
        .await
        .expect("history");
    assert_eq!(history.len(), history_b.len());
    assert!(history.len() >= 3, "{} checkpoints", history.len());

    common::drop_schema(&url, &schema).await;
}

/// Set in the child process of [`a_run_started_in_another_process_resumes_here`]: the schema
/// to use.
const CHILD_SCHEMA: &str = "AGENTGRAPH_TEST_POSTGRES_CHILD_SCHEMA";

/// The first half of the two-process test, run in a child process; without [`CHILD_SCHEMA`]
/// (a normal `cargo test`) it does nothing.
#[tokio::test]
async fn child_process_starts_a_run() {
    let Ok(schema) = std::env::var(CHILD_SCHEMA) else {
        return;
    };
    let Some(url) = common::url() else {
        panic!("the child process needs {}", common::URL_VAR);
    };
    let g = graph(instance(&url, &schema).await, Arc::new(AtomicUsize::new(0)));
    let out = g
        .invoke(Input::values(json!({})), RunConfig::thread("p1"))
        .await
        .expect("run in the child process");
    assert!(
        matches!(out.status, RunStatus::Interrupted { .. }),
        "{:?}",
        out.status
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_in_another_process_resumes_here() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let exe = std::env::current_exe().expect("test binary path");
    let child_schema = schema.clone();
    let status = tokio::task::spawn_blocking(move || {
        std::process::Command::new(exe)
            .args([
                "--exact",
                "two_instances::child_process_starts_a_run",
                "--test-threads=1",
            ])
            .env(CHILD_SCHEMA, child_schema)
            .status()
    })
    .await
    .expect("join")
    .expect("spawn the child process");
    assert!(status.success(), "child process failed: {status}");

    let runs = Arc::new(AtomicUsize::new(0));
    let g = graph(instance(&url, &schema).await, runs.clone());
    let state = g
        .get_state("p1", None)
        .await
        .expect("state")
        .expect("thread");
    assert_eq!(
        state.interrupts.len(),
        1,
        "the child's interrupt is visible"
    );
    let out = g
        .invoke(Input::resume(json!("ok")), RunConfig::thread("p1"))
        .await
        .expect("resume here");
    assert_eq!(out.status, RunStatus::Done);
    assert_eq!(out.values["answer"], json!("ok"));
    assert_eq!(out.values["finished"], json!(true));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    common::drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_connection_is_reopened() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let app = format!("agtest_kill_{}", &schema[7..15]);
    let sep = if url.contains('?') { '&' } else { '?' };
    let cp = instance(&format!("{url}{sep}application_name={app}"), &schema).await;
    let g = graph(cp.clone(), Arc::new(AtomicUsize::new(0)));
    g.invoke(Input::values(json!({})), RunConfig::thread("k1"))
        .await
        .expect("run");
    let killed = common::terminate_backends(&url, &app).await;
    assert_eq!(killed, 1, "one connection to kill");
    // The next calls reconnect (retrying the query) instead of failing.
    assert_eq!(cp.list_threads().await.expect("after reconnect"), ["k1"]);
    let out = g
        .invoke(Input::resume(json!("yes")), RunConfig::thread("k1"))
        .await
        .expect("resume after reconnect");
    assert_eq!(out.status, RunStatus::Done);
    common::drop_schema(&url, &schema).await;
}
