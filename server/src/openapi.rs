//! `GET /openapi.json`: the server's API as an OpenAPI 3.1 document, generated from the routes.
//!
//! Every endpoint handler carries its `#[utoipa::path]` (method, path, parameters, body,
//! responses) and is registered here through utoipa-axum's [`OpenApiRouter`], which adds the
//! route and its documentation together: an endpoint cannot be served without being
//! documented. An application's routes given with `ServerConfig::api_routes` are merged the
//! same way; the pages (`ServerConfig::pages`) are added as plain `GET`s; routes given with
//! `ServerConfig::routes` (plain axum) are served but not in the document.

use crate::ServerState;
use axum::response::IntoResponse;
use serde_json::Value;
use utoipa::openapi::path::{HttpMethod, OperationBuilder, PathItem};
use utoipa::openapi::response::{ResponseBuilder, ResponsesBuilder};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi as Document};
use utoipa::{Modify, OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Every error answer: `{"error": {"code", "message", …}}` (a 429 adds `retry_after`).
#[derive(ToSchema)]
#[allow(dead_code)] // only its schema is used
pub(crate) struct ErrorBody {
    error: ErrorDetail,
}

/// The error itself.
#[derive(ToSchema)]
#[allow(dead_code)]
pub(crate) struct ErrorDetail {
    /// A stable code (`THREAD_NOT_FOUND`, `BAD_INPUT`, `RATE_LIMITED`, …).
    code: String,
    /// What went wrong, for people.
    message: String,
}

/// Bearer authentication: an API key from `agentgraph keys create`, or a JWT.
struct Bearer;

impl Modify for Bearer {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API key (`agentgraph keys create`) or a JWT. Needed when the server \
                         runs with authentication; without it the header is ignored.",
                    ))
                    .build(),
            ),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "agentgraph server",
        description = "Runs agentgraph graphs over HTTP: start, resume, fork and cancel runs, \
                       follow their events as server-sent events with exact replay, read state \
                       and history. See docs/deploy.md for authentication and limits."
    ),
    security(("bearer" = [])),
    modifiers(&Bearer),
    components(schemas(ErrorBody, ErrorDetail)),
    tags(
        (name = "runs", description = "Starting, following and stopping runs."),
        (name = "threads", description = "Reading threads."),
        (name = "graphs", description = "The graphs the server serves."),
        (name = "studio", description = "What the studio reads."),
        (name = "operations", description = "Health, metrics and this document."),
    )
)]
struct ApiDoc;

/// The documented endpoints (the router adds the guard, the pages and the state).
pub(crate) fn api() -> OpenApiRouter<ServerState> {
    use crate::routes as r;
    use crate::studio::{fork, routes as studio};
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(r::start_run))
        .routes(routes!(r::resume))
        .routes(routes!(r::cancel))
        .routes(routes!(fork::fork))
        .routes(routes!(crate::tasks::list))
        .routes(routes!(crate::tasks::cancel))
        .routes(routes!(r::events))
        .routes(routes!(r::list_threads))
        .routes(routes!(r::thread_state))
        .routes(routes!(r::history))
        .routes(routes!(r::list_graphs))
        .routes(routes!(r::graph_status))
        .routes(routes!(studio::list))
        .routes(routes!(studio::diagram))
        .routes(routes!(r::health))
        .routes(routes!(r::metrics))
        .routes(routes!(openapi_json))
}

/// The finished document: axum's catch-all segments (`{*name}`) written as OpenAPI templates
/// (`{name}`), and each page as a `GET` answering its content type.
pub(crate) fn document(mut doc: Document, pages: &[crate::Page]) -> Value {
    let paths = std::mem::take(&mut doc.paths.paths);
    for (path, item) in paths {
        doc.paths.paths.insert(path.replace("{*", "{"), item);
    }
    for page in pages {
        let ok = ResponseBuilder::new()
            .description("The page.")
            .content(page.content_type, ContentBuilder::new().build())
            .build();
        let op = OperationBuilder::new()
            .summary(Some(format!("Page {}", page.path)))
            .tag("pages")
            .security(utoipa::openapi::security::SecurityRequirement::default())
            .responses(ResponsesBuilder::new().response("200", ok).build())
            .build();
        doc.paths
            .paths
            .insert(page.path.clone(), PathItem::new(HttpMethod::Get, op));
    }
    serde_json::to_value(&doc).unwrap_or(Value::Null)
}

/// The document, computed when the router is built.
#[derive(Clone)]
pub(crate) struct Served(pub(crate) std::sync::Arc<Value>);

#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    summary = "This document",
    description = "The server's API as OpenAPI 3.1, generated from its routes. Answers without a key.",
    responses((status = 200, description = "The document.", body = serde_json::Value)),
    security(()),
)]
pub(crate) async fn openapi_json(
    axum::extract::Extension(doc): axum::extract::Extension<Served>,
) -> axum::response::Response {
    axum::Json(doc.0.as_ref().clone()).into_response()
}
