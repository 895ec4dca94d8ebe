//! Extra pages a server serves next to the API (an application's own UI, such as a chat page).

use std::borrow::Cow;

/// A page served on `GET path`.
#[derive(Debug, Clone)]
pub struct Page {
    /// The path, e.g. `/` (axum route syntax).
    pub path: String,
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// The body.
    pub body: Cow<'static, str>,
}

impl Page {
    /// An HTML page at `path`.
    pub fn html(path: impl Into<String>, body: impl Into<Cow<'static, str>>) -> Self {
        Page {
            path: path.into(),
            content_type: "text/html; charset=utf-8",
            body: body.into(),
        }
    }
}
