//! One process: each test has its own thread (the registry of live tasks is per process).

use agentgraph_agents::orchestration::background::{registry, TaskState, BACKGROUND_TASKS};
use agentgraph_e2e::background::{last_text, orchestrator, say, system_text, Brain, Log, Work};
use agentgraph_runtime::{
    CancellationToken, CompiledGraph, MemoryCheckpointer, RunConfig, RunError, RunStatus,
};
use serde_json::Value;
use std::sync::Arc;

struct Setup {
    graph: CompiledGraph,
    brain: Arc<Brain>,
    work: Work,
}

fn setup() -> Setup {
    let log = Log::default();
    let work = Work::new(log.clone());
    let brain = Brain::new(log);
    let graph = orchestrator(
        brain.clone(),
        work.clone(),
        Arc::new(MemoryCheckpointer::new()),
    );
    Setup { graph, brain, work }
}

async fn turn(s: &Setup, thread: &str, text: &str, id: &str) -> Value {
    let out = s
        .graph
        .invoke(say(text, id), RunConfig::thread(thread))
        .await
        .expect("the turn runs");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    out.values
}

async fn ended(thread: &str, id: &str) -> TaskState {
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        registry().wait(thread, id),
    )
    .await
    .expect("the task ends within 10 s")
    .expect("the task is known")
    .state
}

fn task_state(values: &Value, id: &str) -> String {
    values[BACKGROUND_TASKS][id]["state"]
        .as_str()
        .unwrap_or("absent")
        .to_string()
}

#[tokio::test]
async fn a_tasks_status_reaches_the_orchestrators_next_call_and_next_turn() {
    let s = setup();
    let thread = "status";
    s.work.hold("a", 1);
    let first = turn(&s, thread, "start a", "h1").await;
    // The tool returned at once: the turn ended while the task works.
    assert!(
        last_text(&first).starts_with("ok: "),
        "{}",
        last_text(&first)
    );
    assert_eq!(task_state(&first, "a"), "running");
    // The call after the start (same turn) already saw it running.
    let calls = s.brain.requests_of("agent");
    assert_eq!(calls.len(), 2);
    let block = system_text(&calls[1]);
    assert!(
        block.contains("- a [running] counter: count for a"),
        "{block}"
    );
    s.work.release("a", 1);
    assert_eq!(ended(thread, "a").await, TaskState::Done);
    let second = turn(&s, thread, "status?", "h2").await;
    let answer = last_text(&second);
    assert!(
        answer.contains("- a [done] counter: count for a | result: finished count for a"),
        "{answer}"
    );
    assert_eq!(task_state(&second, "a"), "done");
    assert_eq!(
        second[BACKGROUND_TASKS]["a"]["result"],
        "finished count for a (corrections: )"
    );
    assert_eq!(s.work.log.count("work a 1"), 1);
    assert_eq!(s.work.log.count("work a 2"), 1);
}

#[tokio::test]
async fn a_correction_reaches_a_running_task() {
    let s = setup();
    let thread = "correct";
    s.work.hold("a", 1);
    turn(&s, thread, "start a", "h1").await;
    s.work.reached("work a 1", 1).await;
    let sent = turn(&s, thread, "send a use Celsius", "h2").await;
    assert!(
        last_text(&sent).contains("\"queued\":1"),
        "{}",
        last_text(&sent)
    );
    s.work.release("a", 1);
    assert_eq!(ended(thread, "a").await, TaskState::Done);
    let status = registry().get(thread, "a").expect("known");
    assert_eq!(
        status.result.as_deref(),
        Some("finished count for a (corrections: use Celsius)")
    );
    // The task's next model call after the correction had it as a human message.
    let after = s
        .brain
        .requests_of("task")
        .into_iter()
        .filter(|r| {
            r.messages.iter().any(|m| {
                m["type"] == "human"
                    && m["content"] == "Correction from the orchestrator: use Celsius"
            })
        })
        .count();
    assert_eq!(after, 2, "its calls 2 and 3 saw it");
}

#[tokio::test]
async fn a_sixth_task_is_refused_until_one_of_five_ends() {
    let s = setup();
    let thread = "limit";
    for id in ["a", "b", "c", "d", "e", "f"] {
        s.work.hold(id, 1);
    }
    let first = turn(&s, thread, "start a b c d e f", "h1").await;
    let tools: Vec<String> = first["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["type"] == "tool")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(tools.len(), 6);
    let refused: Vec<&String> = tools.iter().filter(|t| t.contains("TASK_LIMIT")).collect();
    assert_eq!(refused.len(), 1, "{tools:#?}");
    assert!(
        refused[0].contains("5 background tasks already run in this thread")
            && refused[0].contains("cancel_task"),
        "{}",
        refused[0]
    );
    let running = registry()
        .list(thread)
        .into_iter()
        .filter(|t| t.state == TaskState::Running)
        .count();
    assert_eq!(running, 5);
    // One of the five ends: the refused one can start now.
    let started: Vec<String> = registry().list(thread).into_iter().map(|t| t.id).collect();
    let left = ["a", "b", "c", "d", "e", "f"]
        .into_iter()
        .find(|id| !started.iter().any(|s| s == id))
        .expect("one was refused");
    s.work.release(&started[0], 1);
    assert_eq!(ended(thread, &started[0]).await, TaskState::Done);
    let again = turn(&s, thread, &format!("start {left}"), "h2").await;
    assert_eq!(task_state(&again, left), "running", "{}", last_text(&again));
    assert_eq!(registry().cancel_thread(thread).len(), 5);
}

#[tokio::test]
async fn stop_that_cancels_the_running_task_through_the_model() {
    let s = setup();
    let thread = "stop-that";
    s.work.hold("a", 1);
    turn(&s, thread, "start a", "h1").await;
    s.work.reached("work a 1", 1).await;
    let stopped = turn(&s, thread, "stop that", "h2").await;
    assert!(
        last_text(&stopped).contains("{\"cancelled\":[\"a\"]}"),
        "{}",
        last_text(&stopped)
    );
    assert_eq!(ended(thread, "a").await, TaskState::Cancelled);
    assert_eq!(task_state(&stopped, "a"), "cancelled");
    assert_eq!(
        s.work.log.count("work a 2"),
        0,
        "nothing ran after the cancel"
    );
    let next = turn(&s, thread, "status?", "h3").await;
    assert!(
        last_text(&next).contains("- a [cancelled]"),
        "{}",
        last_text(&next)
    );
}

#[tokio::test]
async fn the_registry_cancels_one_task_as_the_servers_route_does() {
    let s = setup();
    let thread = "server-cancel";
    s.work.hold("a", 1);
    s.work.hold("b", 1);
    turn(&s, thread, "start a b", "h1").await;
    s.work.reached("work a 1", 1).await;
    registry().cancel(thread, "a").expect("a runs");
    assert_eq!(ended(thread, "a").await, TaskState::Cancelled);
    assert_eq!(
        registry().get(thread, "b").expect("known").state,
        TaskState::Running
    );
    let next = turn(&s, thread, "status?", "h2").await;
    assert!(
        last_text(&next).contains("- a [cancelled]"),
        "{}",
        last_text(&next)
    );
    assert!(
        last_text(&next).contains("- b [running]"),
        "{}",
        last_text(&next)
    );
    assert_eq!(task_state(&next, "a"), "cancelled");
    let err = registry().cancel(thread, "a").expect_err("already over");
    assert_eq!(err.code(), "TASK_FINISHED");
    registry().cancel_thread(thread);
}

#[tokio::test]
async fn cancelling_a_run_of_the_thread_cancels_its_tasks() {
    let s = setup();
    let thread = "thread-cancel";
    s.work.hold("a", 1);
    s.work.hold("b", 1);
    s.work.hold("orchestrator", 1);
    turn(&s, thread, "start a b", "h1").await;
    // The next turn waits in a tool of its own; its run is cancelled (Ctrl-C, the server's
    // cancel of the thread's run).
    let token = CancellationToken::new();
    let run = {
        let graph = s.graph.clone();
        let config = RunConfig::thread(thread).cancel_with(token.clone());
        tokio::spawn(async move { graph.invoke(say("hold", "h2"), config).await })
    };
    s.work.reached("work orchestrator 1", 1).await;
    token.cancel();
    let err = run.await.expect("joined").expect_err("cancelled");
    assert!(matches!(err, RunError::Cancelled(_)), "{err:?}");
    assert_eq!(ended(thread, "a").await, TaskState::Cancelled);
    assert_eq!(ended(thread, "b").await, TaskState::Cancelled);
    // The server's thread cancel reaches the tasks through the same registry call.
    assert!(
        registry().cancel_thread(thread).is_empty(),
        "none left running"
    );
}
