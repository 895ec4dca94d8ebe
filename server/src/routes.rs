//! The HTTP endpoints.

use crate::auth::{check_host, guard, Caller, Permit};
use crate::error::ApiError;
use crate::events::Replayed;
use crate::runs::{self, Cancelled};
use crate::thread_run::{open_run, OpenError, OpenRun, Opening};
use crate::{ServerState, Versioned};
use agentgraph_runtime::{
    CheckpointId, ListQuery, Mode, Modes, Resume, RunConfig, RunError, RunErrorKind,
};
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::convert::Infallible;

/// The router with every endpoint, over `state` (mount it in an existing axum app, or serve
/// it with [`crate::serve_on`]).
pub fn router(state: ServerState) -> Router {
    let limit = state.inner.max_body_bytes;
    let pages = state.inner.pages.clone();
    let mut app = Router::new();
    for routes in &state.inner.routes {
        app = app.merge(routes.clone());
    }
    for page in pages {
        let (path, content_type, body) = (page.path.clone(), page.content_type, page.body);
        app = app.route(
            &path,
            get(move || async move { ([(axum::http::header::CONTENT_TYPE, content_type)], body) }),
        );
    }
    app.merge(crate::studio::routes::routes())
        .merge(crate::studio::fork::routes())
        .route("/graphs", get(list_graphs))
        .route("/graphs/{*name}", get(graph_status))
        .route("/threads", get(list_threads))
        .route("/threads/{id}/runs", post(start_run))
        .route("/threads/{id}/events", get(events))
        .route("/threads/{id}/resume", post(resume))
        .route("/threads/{id}/cancel", post(cancel))
        .route("/threads/{id}/state", get(thread_state))
        .route("/threads/{id}/history", get(history))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .fallback(|| async { ApiError::not_found("NOT_FOUND", "no such endpoint") })
        .method_not_allowed_fallback(
            |method: axum::http::Method, uri: axum::http::Uri| async move {
                ApiError::new(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "METHOD_NOT_ALLOWED",
                    format!("{method} is not allowed on {}", uri.path()),
                )
            },
        )
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .layer(cors(&state.inner.auth.config.cors_origins))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            check_host,
        ))
        .with_state(state)
}

/// Answers CORS preflights for the allowed origins (none by default: browsers then allow only
/// same-origin calls).
fn cors(origins: &[String]) -> tower_http::cors::CorsLayer {
    use axum::http::{header, HeaderName, HeaderValue, Method};
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|o| HeaderValue::from_str(o.trim().trim_end_matches('/')).ok())
        .collect();
    tower_http::cors::CorsLayer::new()
        .allow_origin(tower_http::cors::AllowOrigin::list(origins))
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            HeaderName::from_static("last-event-id"),
        ])
        .max_age(std::time::Duration::from_secs(600))
}

/// A run's slot under the caller's limits (none without authentication).
pub(crate) fn run_permit(state: &ServerState, caller: &Caller) -> ApiResult<Option<Permit>> {
    match caller.principal() {
        Some(p) => Ok(Some(state.inner.auth.limiter.start_run(&p.namespace())?)),
        None => Ok(None),
    }
}

/// The run setting naming the principal whose working memory a run uses (the agents crate's
/// `memory::observational::working::PRINCIPAL_SETTING`).
const PRINCIPAL_SETTING: &str = "principal";

/// Confines the memory session a run names (`config.session_id`, else the thread id) to the
/// caller's namespace, so nobody can name another principal's conversation; and sets
/// `config.principal` (whose user-scoped working memory the run uses) to that namespace,
/// whatever the request said.
pub(crate) fn confine_session(caller: &Caller, thread: &str, config: &mut RunConfig) {
    if let Some(p) = caller.principal() {
        config
            .configurable
            .insert(PRINCIPAL_SETTING.into(), json!(p.namespace()));
        let session = config
            .configurable
            .get("session_id")
            .and_then(Value::as_str)
            .unwrap_or(thread)
            .to_string();
        config
            .configurable
            .insert("session_id".into(), json!(p.scoped(&session)));
    }
}

pub(crate) type ApiResult<T> = Result<T, ApiError>;

/// Thread ids: 1 to 128 characters among letters, digits and `_ . : -`.
pub(crate) fn check_thread(id: &str) -> ApiResult<()> {
    if agentgraph_runtime::is_valid_thread_id(id) {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "BAD_THREAD_ID",
            agentgraph_runtime::THREAD_ID_RULE,
        ))
    }
}

/// The body, or a JSON error: 413 when too large, 415 without a JSON content type, else 400.
pub(crate) fn body<T>(b: Result<Json<T>, JsonRejection>) -> ApiResult<T> {
    match b {
        Ok(Json(v)) => Ok(v),
        Err(r) => {
            let status = r.status();
            Err(if status == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(status, "PAYLOAD_TOO_LARGE", r.body_text())
            } else if status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
                ApiError::new(status, "UNSUPPORTED_MEDIA_TYPE", r.body_text())
            } else {
                ApiError::bad_request("BAD_REQUEST", r.body_text())
            })
        }
    }
}

/// The query string, or a 400 JSON error.
fn query<T>(q: Result<Query<T>, QueryRejection>) -> ApiResult<T> {
    q.map(|Query(v)| v)
        .map_err(|r| ApiError::bad_request("BAD_QUERY", r.body_text()))
}

/// A run error as HTTP, by its kind: the caller's fault 400, another graph's thread 409,
/// anything else 500.
pub(crate) fn run_error(e: RunError) -> ApiError {
    match e.kind() {
        RunErrorKind::Caller => ApiError::bad_request("BAD_INPUT", e.to_string()),
        RunErrorKind::Conflict => ApiError::conflict(
            "THREAD_GRAPH_MISMATCH",
            format!(
                "{e}; the thread's checkpoints were written by another graph (or an \
                 incompatible version of it): pass that graph, or use a new thread id"
            ),
        ),
        RunErrorKind::Cancelled | RunErrorKind::Failed => ApiError::internal(e.to_string()),
    }
}

pub(crate) fn open_error(e: OpenError) -> ApiError {
    match e {
        OpenError::Input(e) => ApiError::bad_request("BAD_INPUT", e.to_string()),
        OpenError::Run(e) => run_error(e),
        OpenError::NoThread(_) => ApiError::not_found("THREAD_NOT_FOUND", e.to_string()),
        OpenError::NothingToResume(_) => ApiError::bad_request("NOTHING_TO_RESUME", e.to_string()),
    }
}

/// `POST /threads/{id}/runs` body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunRequest {
    /// A graph name or relative path under the graphs folder.
    graph: String,
    /// The input object (default `{}`).
    #[serde(default)]
    input: Value,
    /// Modes to stream (default updates, custom, messages).
    #[serde(default)]
    stream_modes: Option<Vec<String>>,
    /// Overrides the graph's recursion limit.
    #[serde(default)]
    recursion_limit: Option<usize>,
    /// Run-scoped settings (`RunConfig::configurable`).
    #[serde(default)]
    config: Option<Map<String, Value>>,
}

/// `POST /threads/{id}/resume` body.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ResumeRequest {
    /// The answer to the pending interrupt.
    #[serde(default)]
    value: Value,
    /// Answers by interrupt id, when several are pending.
    #[serde(default)]
    values_by_id: Option<std::collections::BTreeMap<String, Value>>,
    /// Another graph to continue with (default: the one the thread last ran).
    #[serde(default)]
    graph: Option<String>,
    /// Modes to stream (default updates, custom, messages).
    #[serde(default)]
    stream_modes: Option<Vec<String>>,
}

pub(crate) fn modes(list: Option<Vec<String>>) -> ApiResult<Modes> {
    match list {
        None => Ok(Modes::of(&[Mode::Updates, Mode::Custom, Mode::Messages])),
        Some(list) => {
            let parsed: Result<Vec<Mode>, _> = list.iter().map(|s| s.parse::<Mode>()).collect();
            parsed
                .map(|m| Modes::of(&m))
                .map_err(|e| ApiError::bad_request("BAD_STREAM_MODE", e.to_string()))
        }
    }
}

async fn start_run(
    State(state): State<ServerState>,
    Extension(caller): Extension<Caller>,
    Path(thread): Path<String>,
    req: Result<Json<RunRequest>, JsonRejection>,
) -> ApiResult<Response> {
    check_thread(&thread)?;
    let req = body(req)?;
    let input = match req.input {
        Value::Null => Value::Object(Map::new()),
        v @ Value::Object(_) => v,
        other => {
            return Err(ApiError::bad_request(
                "BAD_INPUT",
                format!("input must be a JSON object, got {other}"),
            ))
        }
    };
    let modes = modes(req.stream_modes)?;
    runs::ensure_idle(&state, &thread)?;
    let graph = state.inner.graphs.get_versioned(&req.graph).await?;
    let mut config = RunConfig::thread(thread.clone()).modes(modes);
    config.recursion_limit = req.recursion_limit;
    if let Some(c) = req.config {
        config.configurable = c;
    }
    confine_session(&caller, &thread, &mut config);
    let permit = run_permit(&state, &caller)?;
    let run = open_run(&graph.0, Opening::Input(input), config)
        .await
        .map_err(open_error)?;
    if req.recursion_limit == Some(0) {
        return Err(ApiError::bad_request(
            "BAD_REQUEST",
            "recursion_limit must be at least 1",
        ));
    }
    start(&state, &thread, &req.graph, graph, run, permit).await
}

async fn resume(
    State(state): State<ServerState>,
    Extension(caller): Extension<Caller>,
    Path(thread): Path<String>,
    headers: HeaderMap,
    req: Result<Json<ResumeRequest>, JsonRejection>,
) -> ApiResult<Response> {
    check_thread(&thread)?;
    // Every field is optional: an empty JSON POST (continuing a cancelled thread) is `{}`.
    let no_body = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .is_none_or(|v| v.as_bytes() == b"0");
    let req = match req {
        Err(JsonRejection::JsonSyntaxError(_) | JsonRejection::JsonDataError(_)) if no_body => {
            ResumeRequest::default()
        }
        other => body(other)?,
    };
    let modes = modes(req.stream_modes)?;
    runs::ensure_idle(&state, &thread)?;
    let (name, graph) = thread_graph_pinned(&state, &thread, req.graph).await?;
    let answer = match req.values_by_id {
        Some(map) => Resume::ById(map),
        None => Resume::Value(req.value),
    };
    let mut config = RunConfig::thread(thread.clone()).modes(modes);
    confine_session(&caller, &thread, &mut config);
    let permit = run_permit(&state, &caller)?;
    let run = open_run(&graph.0, Opening::Resume(answer), config)
        .await
        .map_err(open_error)?;
    start(&state, &thread, &name, graph, run, permit).await
}

/// Starts an opened run; answers 202 `{run_id, thread_id, graph, graph_version}`.
pub(crate) async fn start(
    state: &ServerState,
    thread: &str,
    graph_name: &str,
    graph: Versioned,
    run: OpenRun,
    permit: Option<Permit>,
) -> ApiResult<Response> {
    let started = runs::start(state, thread, graph_name, graph, run, permit).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(
            json!({ "run_id": started.run_id, "thread_id": thread, "graph": graph_name,
            "graph_version": started.graph_version }),
        ),
    )
        .into_response())
}

async fn cancel(
    State(state): State<ServerState>,
    Path(thread): Path<String>,
) -> ApiResult<Json<Value>> {
    check_thread(&thread)?;
    let body = match runs::cancel(&state, &thread).await? {
        Cancelled::Here { run_id } => {
            json!({ "thread_id": thread, "cancelled": true, "run_id": run_id })
        }
        Cancelled::Elsewhere => {
            json!({ "thread_id": thread, "cancelled": true, "run_id": null, "elsewhere": true })
        }
        Cancelled::Nothing => json!({ "thread_id": thread, "cancelled": false, "run_id": null }),
    };
    Ok(Json(body))
}

#[derive(Deserialize)]
struct EventsQuery {
    #[serde(rename = "lastEventId")]
    last_event_id: Option<String>,
}

async fn events(
    State(state): State<ServerState>,
    Extension(caller): Extension<Caller>,
    Path(thread): Path<String>,
    q: Result<Query<EventsQuery>, QueryRejection>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    check_thread(&thread)?;
    let q = query(q)?;
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or(q.last_event_id);
    let last = match last {
        Some(s) if !s.trim().is_empty() => Some(s.trim().parse::<u64>().map_err(|_| {
            ApiError::bad_request("BAD_LAST_EVENT_ID", format!("`{s}` is not an event id"))
        })?),
        _ => None,
    };
    // Held by the stream: the slot is given back when the client goes away.
    let permit = match caller.principal() {
        Some(p) => Some(state.inner.auth.limiter.open_stream(&p.namespace())?),
        None => None,
    };
    let replay = state
        .inner
        .events
        .replay(&thread, last, state.inner.shutdown.clone())?;
    let open = crate::telemetry::metrics().stream_opened();
    let stream = replay.map(move |item| {
        let _held = (&permit, &open);
        Ok::<_, Infallible>(match item {
            Replayed::Event(e) => SseEvent::default().id(e.seq.to_string()).data(&*e.json),
            // Without an id: the client's Last-Event-ID stays until the next real event.
            Replayed::Gap { from, to } => SseEvent::default()
                .event("gap")
                .data(json!({ "from": from, "to": to }).to_string()),
        })
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

#[derive(Deserialize)]
struct StateQuery {
    graph: Option<String>,
    /// An older checkpoint of the thread (from its history); default the newest.
    checkpoint_id: Option<String>,
}

async fn thread_state(
    State(state): State<ServerState>,
    Path(thread): Path<String>,
    q: Result<Query<StateQuery>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    check_thread(&thread)?;
    let q = query(q)?;
    let (name, graph) = state.thread_graph(&thread, q.graph.as_deref()).await?;
    // Whether a run is active is read before the state: `active: false` then promises the
    // values are those the last run ended with (read after, a run could end in between and
    // leave a mid-run state marked inactive).
    let active = state.runs().contains_key(&thread);
    let at = match q.checkpoint_id.as_deref() {
        Some(id) => Some(
            id.parse()
                .map_err(|e| ApiError::bad_request("BAD_CHECKPOINT_ID", format!("`{id}`: {e}")))?,
        ),
        None => None,
    };
    let snap = match graph.get_state(&thread, at).await {
        Err(RunError::CheckpointNotFound { .. }) => None,
        other => other.map_err(run_error)?,
    }
    .ok_or_else(|| {
        ApiError::not_found(
            "THREAD_NOT_FOUND",
            format!("thread {thread} has no checkpoint"),
        )
    })?;
    let mut v = serde_json::to_value(&snap).map_err(|e| ApiError::internal(e.to_string()))?;
    if let Some(o) = v.as_object_mut() {
        o.insert("thread_id".into(), json!(thread));
        o.insert("graph".into(), json!(name));
        o.insert("active".into(), json!(active));
    }
    Ok(Json(v))
}

/// `GET /health`: the server answers and its storage reads (no key needed).
async fn health(State(state): State<ServerState>) -> Response {
    let started = state.inner.started;
    let storage = state.inner.checkpointer.get("health-check", "", None).await;
    let body = json!({
        "status": if storage.is_ok() { "ok" } else { "failing" },
        "storage": match &storage { Ok(_) => "ok".to_string(), Err(e) => e.to_string() },
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_secs": started.elapsed().as_secs(),
    });
    let code = if storage.is_ok() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(body)).into_response()
}

/// `GET /metrics`: Prometheus text (see [`crate::telemetry`]); with authentication on, for
/// admin keys only.
async fn metrics(Extension(caller): Extension<Caller>) -> Response {
    if caller.principal().is_some_and(|p| !p.is_admin()) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "ADMIN_ONLY",
            "metrics are for keys with the admin scope",
        )
        .into_response();
    }
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        crate::telemetry::metrics().render(),
    )
        .into_response()
}

/// The graph a thread continues on: the one named (else the one the thread last ran), in the
/// version the thread started with even if the file was reloaded since. For resume and fork.
pub(crate) async fn thread_graph_pinned(
    state: &ServerState,
    thread: &str,
    graph: Option<String>,
) -> ApiResult<(String, Versioned)> {
    let name = match graph {
        Some(g) => g,
        None => state.inner.events.graph_of(thread)?.ok_or_else(|| {
            ApiError::not_found("THREAD_NOT_FOUND", format!("no thread {thread}"))
        })?,
    };
    let graph = state
        .inner
        .graphs
        .pinned(&state.inner.events, thread, &name)
        .await?;
    Ok((name, graph))
}

#[derive(Deserialize)]
struct HistoryQuery {
    limit: Option<usize>,
    before: Option<String>,
    graph: Option<String>,
}

/// Checkpoints per history page when the query names no `limit`, and the most it may name.
const HISTORY_PAGE: usize = 100;
const HISTORY_PAGE_MAX: usize = 1000;

async fn history(
    State(state): State<ServerState>,
    Path(thread): Path<String>,
    q: Result<Query<HistoryQuery>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    check_thread(&thread)?;
    let q = query(q)?;
    let limit = q.limit.unwrap_or(HISTORY_PAGE);
    if limit == 0 || limit > HISTORY_PAGE_MAX {
        return Err(ApiError::bad_request(
            "BAD_QUERY",
            format!("`limit` must be between 1 and {HISTORY_PAGE_MAX}, got {limit}"),
        ));
    }
    let before = match q.before.as_deref() {
        Some(b) => Some(b.parse::<CheckpointId>().map_err(|e| {
            ApiError::bad_request("BAD_QUERY", format!("`before` is not a checkpoint id: {e}"))
        })?),
        None => None,
    };
    let (_, graph) = state.thread_graph(&thread, q.graph.as_deref()).await?;
    let mut list = graph
        .history(
            &thread,
            ListQuery {
                // One more than the page: whether there is a next one.
                limit: Some(limit + 1),
                before,
                ..ListQuery::default()
            },
        )
        .await
        .map_err(run_error)?;
    let more = list.len() > limit;
    list.truncate(limit);
    let next_before = more.then(|| list.last().map(|h| h.checkpoint_id)).flatten();
    Ok(Json(
        json!({ "thread_id": thread, "history": list, "next_before": next_before }),
    ))
}

async fn list_threads(
    State(state): State<ServerState>,
    Extension(caller): Extension<Caller>,
) -> ApiResult<Json<Value>> {
    let mut threads = state
        .inner
        .checkpointer
        .list_threads()
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let active = state.active_threads();
    for t in &active {
        if !threads.contains(t) {
            threads.push(t.clone());
        }
    }
    threads.sort();
    let mut out = Vec::with_capacity(threads.len());
    let owners = &state.inner.auth.owners;
    for t in threads {
        if !caller.sees_all() && !caller.may_see(owners.owner_of(&t)?.as_deref()) {
            continue;
        }
        let graph = state.inner.events.graph_of(&t)?;
        out.push(json!({ "thread_id": t, "graph": graph, "active": active.contains(&t) }));
    }
    Ok(Json(json!({ "threads": out })))
}

/// `GET /graphs`: the graphs compiled so far, with their live-reload state.
async fn list_graphs(State(state): State<ServerState>) -> Json<Value> {
    Json(json!({ "graphs": state.inner.graphs.statuses() }))
}

/// `GET /graphs/{name}`: one compiled graph's live-reload state.
async fn graph_status(
    State(state): State<ServerState>,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    let path = state.inner.graphs.resolve(&name)?;
    let st = state.inner.graphs.status_of(&path).ok_or_else(|| {
        ApiError::not_found(
            "GRAPH_NOT_FOUND",
            format!("graph `{name}` has not been compiled yet (run it first)"),
        )
    })?;
    Ok(Json(json!(st)))
}
