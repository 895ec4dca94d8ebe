//! The HTTP endpoints.

use crate::auth::{check_host, guard, Caller, Permit};
use crate::error::ApiError;
use crate::events::Replayed;
use crate::runs::{self, Cancelled};
use crate::thread_run::{open_run, OpenError, OpenRun, Opening};
use crate::{ServerState, Versioned};
use agentgraph_runtime::{
    CheckpointId, Durability, ListQuery, Mode, Modes, Resume, RunConfig, RunError, RunErrorKind,
};
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
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
    // The endpoints and their OpenAPI document come from one list (see `crate::openapi`).
    let mut api = crate::openapi::api();
    for documented in &state.inner.api_routes {
        api = api.merge(documented.clone());
    }
    let (api, doc) = api.split_for_parts();
    let doc = crate::openapi::Served(std::sync::Arc::new(crate::openapi::document(
        doc,
        &state.inner.pages,
    )));
    app.merge(api)
        .layer(Extension(doc))
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
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunRequest {
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
    /// When checkpoints reach the disk: `sync` (each one before the next step), `async` (in
    /// the background; the run's end waits for the last) or `exit` (one at the end of the
    /// run). Default: the server's (`sync` unless `serve --durability` says otherwise).
    #[serde(default)]
    durability: Option<String>,
}

/// `POST /threads/{id}/resume` body.
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResumeRequest {
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
    /// When checkpoints reach the disk (as for a run; default: the server's).
    #[serde(default)]
    durability: Option<String>,
}

/// The durability a request names (the server's default when it names none).
pub(crate) fn durability(state: &ServerState, name: Option<&str>) -> ApiResult<Durability> {
    name.map_or(Ok(state.inner.durability), |d| {
        d.parse()
            .map_err(|e: String| ApiError::bad_request("BAD_DURABILITY", e))
    })
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

#[utoipa::path(
    post,
    path = "/threads/{id}/runs",
    tag = "runs",
    summary = "Start a run",
    description = "Starts the graph on the thread with the input and streams the run's events. 409 while the thread runs.",
    params(("id" = String, Path, description = "The thread id: 1 to 128 letters, digits, `_`, `.`, `:` or `-`.")),
    request_body(content = RunRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The run's events as server-sent events (`id:` is the event id to resume from with `Last-Event-ID`).", content_type = "text/event-stream"),
        (status = 400, description = "A bad thread id, body, input or stream mode.", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such graph.", body = crate::openapi::ErrorBody),
        (status = 409, description = "The thread is running, or its checkpoints belong to another graph.", body = crate::openapi::ErrorBody),
        (status = 413, description = "The body is too large.", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`.", body = crate::openapi::ErrorBody),
        (status = 422, description = "The graph does not compile; the diagnostics are in the error.", body = crate::openapi::ErrorBody),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 429, description = "A per-principal limit was reached; `Retry-After` says when to try again.", body = crate::openapi::ErrorBody)
    ),
)]
pub(crate) async fn start_run(
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
    let durability = durability(&state, req.durability.as_deref())?;
    runs::ensure_idle(&state, &thread)?;
    let graph = state.inner.graphs.get_versioned(&req.graph).await?;
    let mut config = RunConfig::thread(thread.clone())
        .modes(modes)
        .durability(durability);
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

#[utoipa::path(
    post,
    path = "/threads/{id}/resume",
    tag = "runs",
    summary = "Resume a thread",
    description = "Answers the pending interrupt (or continues a cancelled or failed run) and streams the events.",
    params(("id" = String, Path, description = "The thread id: 1 to 128 letters, digits, `_`, `.`, `:` or `-`.")),
    request_body(content = ResumeRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The run's events as server-sent events (`id:` is the event id to resume from with `Last-Event-ID`).", content_type = "text/event-stream"),
        (status = 400, description = "Nothing to resume, or a bad body.", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such thread (or not the caller's).", body = crate::openapi::ErrorBody),
        (status = 409, description = "The thread is running.", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`.", body = crate::openapi::ErrorBody),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 429, description = "A per-principal limit was reached; `Retry-After` says when to try again.", body = crate::openapi::ErrorBody)
    ),
)]
pub(crate) async fn resume(
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
    let durability = durability(&state, req.durability.as_deref())?;
    runs::ensure_idle(&state, &thread)?;
    let (name, graph) = thread_graph_pinned(&state, &thread, req.graph).await?;
    let answer = match req.values_by_id {
        Some(map) => Resume::ById(map),
        None => Resume::Value(req.value),
    };
    let mut config = RunConfig::thread(thread.clone())
        .modes(modes)
        .durability(durability);
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

#[utoipa::path(
    post,
    path = "/threads/{id}/cancel",
    tag = "runs",
    summary = "Cancel the thread's run",
    description = "Cancels the run in progress on the thread; the run ends with a `cancelled` event.",
    params(("id" = String, Path, description = "The thread id: 1 to 128 letters, digits, `_`, `.`, `:` or `-`.")),
    responses(
        (status = 200, description = "`{thread_id, cancelled, run_id}`.", body = serde_json::Value),
        (status = 400, description = "A bad thread id.", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such thread (or not the caller's).", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`.", body = crate::openapi::ErrorBody),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 429, description = "A per-principal limit was reached; `Retry-After` says when to try again.", body = crate::openapi::ErrorBody)
    ),
)]
pub(crate) async fn cancel(
    State(state): State<ServerState>,
    Path(thread): Path<String>,
) -> ApiResult<Json<Value>> {
    check_thread(&thread)?;
    // The whole thread: its run and its background tasks.
    let tasks = crate::tasks::cancel_thread(&thread);
    let mut body = match runs::cancel(&state, &thread).await? {
        Cancelled::Here { run_id } => {
            json!({ "thread_id": thread, "cancelled": true, "run_id": run_id })
        }
        Cancelled::Elsewhere => {
            json!({ "thread_id": thread, "cancelled": true, "run_id": null, "elsewhere": true })
        }
        Cancelled::Nothing => json!({ "thread_id": thread, "cancelled": false, "run_id": null }),
    };
    body["tasks_cancelled"] = json!(tasks);
    Ok(Json(body))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct EventsQuery {
    #[serde(rename = "lastEventId")]
    last_event_id: Option<String>,
}

#[utoipa::path(
    get,
    path = "/threads/{id}/events",
    tag = "runs",
    summary = "Follow a thread's events",
    description = "Replays the events after `Last-Event-ID` (header) or `lastEventId` (query) and follows the run live.",
    params(("id" = String, Path, description = "The thread id: 1 to 128 letters, digits, `_`, `.`, `:` or `-`."), EventsQuery),
    responses(
        (status = 200, description = "The run's events as server-sent events (`id:` is the event id to resume from with `Last-Event-ID`).", content_type = "text/event-stream"),
        (status = 400, description = "A bad thread id or event id.", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such thread (or not the caller's).", body = crate::openapi::ErrorBody),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 429, description = "A per-principal limit was reached; `Retry-After` says when to try again.", body = crate::openapi::ErrorBody)
    ),
)]
pub(crate) async fn events(
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

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct StateQuery {
    graph: Option<String>,
    /// An older checkpoint of the thread (from its history); default the newest.
    checkpoint_id: Option<String>,
}

#[utoipa::path(
    get,
    path = "/threads/{id}/state",
    tag = "threads",
    summary = "Read a thread's state",
    description = "The channel values at the newest checkpoint (or `checkpoint_id`), pending interrupts and whether a run is active.",
    params(("id" = String, Path, description = "The thread id: 1 to 128 letters, digits, `_`, `.`, `:` or `-`."), StateQuery),
    responses(
        (status = 200, description = "The state.", body = serde_json::Value),
        (status = 400, description = "A bad thread or checkpoint id.", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such thread (or not the caller's).", body = crate::openapi::ErrorBody),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 429, description = "A per-principal limit was reached; `Retry-After` says when to try again.", body = crate::openapi::ErrorBody)
    ),
)]
pub(crate) async fn thread_state(
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
#[utoipa::path(
    get,
    path = "/health",
    tag = "operations",
    summary = "Health check",
    description = "Answers without a key: 200 when the server answers and its checkpoint store reads, 503 otherwise.",
    responses(
        (status = 200, description = "`{status, storage, version, uptime_secs}`.", body = serde_json::Value),
        (status = 503, description = "The checkpoint store does not read.", body = serde_json::Value)
    ),
    security(()),
)]
pub(crate) async fn health(State(state): State<ServerState>) -> Response {
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
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    summary = "Prometheus metrics",
    description = "Runs by status, step, checkpoint, model-call and tool-call latencies, tokens, open event streams. With authentication on, for admin keys.",
    responses(
        (status = 200, description = "Prometheus text format.", body = String, content_type = "text/plain; version=0.0.4"),
        (status = 403, description = "The key is not an admin key.", body = crate::openapi::ErrorBody),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 429, description = "A per-principal limit was reached; `Retry-After` says when to try again.", body = crate::openapi::ErrorBody)
    ),
)]
pub(crate) async fn metrics(Extension(caller): Extension<Caller>) -> Response {
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

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct HistoryQuery {
    limit: Option<usize>,
    before: Option<String>,
    graph: Option<String>,
}

/// Checkpoints per history page when the query names no `limit`, and the most it may name.
const HISTORY_PAGE: usize = 100;
const HISTORY_PAGE_MAX: usize = 1000;

#[utoipa::path(
    get,
    path = "/threads/{id}/history",
    tag = "threads",
    summary = "Page through a thread's checkpoints",
    description = "Newest first, `limit` (default 100, at most 1000) per page; `next_before` names the next page.",
    params(("id" = String, Path, description = "The thread id: 1 to 128 letters, digits, `_`, `.`, `:` or `-`."), HistoryQuery),
    responses(
        (status = 200, description = "`{thread_id, checkpoints, next_before}`.", body = serde_json::Value),
        (status = 400, description = "A bad limit or checkpoint id.", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such thread (or not the caller's).", body = crate::openapi::ErrorBody),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 429, description = "A per-principal limit was reached; `Retry-After` says when to try again.", body = crate::openapi::ErrorBody)
    ),
)]
pub(crate) async fn history(
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

#[utoipa::path(
    get,
    path = "/threads",
    tag = "threads",
    summary = "List threads",
    description = "The caller's threads (an admin sees all).",
    responses(
        (status = 200, description = "`{threads: [...]}`.", body = serde_json::Value),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 429, description = "A per-principal limit was reached; `Retry-After` says when to try again.", body = crate::openapi::ErrorBody)
    ),
)]
pub(crate) async fn list_threads(
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
        if !caller.sees_all() && !caller.may_see(owners.owner_of(&t).await?.as_deref()) {
            continue;
        }
        let graph = state.inner.events.graph_of(&t)?;
        out.push(json!({ "thread_id": t, "graph": graph, "active": active.contains(&t) }));
    }
    Ok(Json(json!({ "threads": out })))
}

/// `GET /graphs`: the graphs compiled so far, with their live-reload state.
#[utoipa::path(
    get,
    path = "/graphs",
    tag = "graphs",
    summary = "Compiled graphs",
    description = "The graphs compiled so far, with their live-reload state.",
    responses(
        (status = 200, description = "`{graphs: [...]}`.", body = serde_json::Value),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 429, description = "A per-principal limit was reached; `Retry-After` says when to try again.", body = crate::openapi::ErrorBody)
    ),
)]
pub(crate) async fn list_graphs(State(state): State<ServerState>) -> Json<Value> {
    Json(json!({ "graphs": state.inner.graphs.statuses() }))
}

/// `GET /graphs/{name}`: one compiled graph's live-reload state.
#[utoipa::path(
    get,
    path = "/graphs/{*name}",
    tag = "graphs",
    summary = "A compiled graph's reload state",
    description = "The live-reload state of one graph (a name or a path under the graphs folder).",
    params(("name" = String, Path, description = "A graph name or a relative `.ag` path under the graphs folder.")),
    responses(
        (status = 200, description = "The graph's state.", body = serde_json::Value),
        (status = 404, description = "No such graph, or not compiled yet.", body = crate::openapi::ErrorBody),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 429, description = "A per-principal limit was reached; `Retry-After` says when to try again.", body = crate::openapi::ErrorBody)
    ),
)]
pub(crate) async fn graph_status(
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
