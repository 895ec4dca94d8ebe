//! The studio: a browser UI over the API, served at `/` when [`crate::ServerConfig::studio`] is
//! asked for. Plain JS without a build step; its files are embedded in the binary.
//!
//! What it shows (`docs/studio.md`): every graph of the graphs folder drawn from the DSL's
//! diagram ([`agentgraph_dsl::viz::structure`]), a thread view (the graph with the running node
//! highlighted live, the event stream, the history as a tree with its forks, the state at any
//! checkpoint and its diff from the previous one, fork and re-run), interrupts answered with a
//! form typed from the written channel, markdown rendered through an allow-list DOM builder,
//! and for states holding an n8n workflow, the workflow as a node canvas.
//!
//! The JSON routes it needs ([`routes`]) go through the same guard as the rest of the API.

pub(crate) mod fork;
pub(crate) mod routes;

use crate::pages::Page;

/// A static file of the studio: its path, content type and body.
const ASSETS: [(&str, &str, &str); 7] = [
    (
        "/",
        "text/html; charset=utf-8",
        include_str!("../../static/studio/index.html"),
    ),
    (
        "/studio/studio.css",
        "text/css; charset=utf-8",
        include_str!("../../static/studio/studio.css"),
    ),
    (
        "/studio/app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../static/studio/app.js"),
    ),
    (
        "/studio/diagram.js",
        "text/javascript; charset=utf-8",
        include_str!("../../static/studio/diagram.js"),
    ),
    (
        "/studio/markdown.js",
        "text/javascript; charset=utf-8",
        include_str!("../../static/studio/markdown.js"),
    ),
    (
        "/studio/canvas.js",
        "text/javascript; charset=utf-8",
        include_str!("../../static/studio/canvas.js"),
    ),
    (
        "/studio/thread.js",
        "text/javascript; charset=utf-8",
        include_str!("../../static/studio/thread.js"),
    ),
];

/// The studio's pages: its HTML at `/` and its scripts and styles under `/studio/`.
pub fn pages() -> Vec<Page> {
    ASSETS
        .iter()
        .map(|(path, content_type, body)| Page {
            path: (*path).to_string(),
            content_type,
            body: (*body).into(),
        })
        .collect()
}
