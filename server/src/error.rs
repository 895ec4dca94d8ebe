//! Errors: the server's own, and API errors rendered as `{"error": {"code", "message"}}`.

use crate::runs::LifecycleError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Binding or serving the socket failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The checkpointer or the event database failed.
    #[error("storage: {0}")]
    Storage(String),
    /// The configuration is unusable.
    #[error("configuration: {0}")]
    Config(String),
}

/// An error answered to an HTTP request.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable machine-readable code such as `RUN_ACTIVE`.
    pub code: &'static str,
    /// What went wrong, for people.
    pub message: String,
    /// Extra fields merged into the `error` object (e.g. `diagnostics`).
    pub details: Option<(&'static str, Value)>,
}

impl ApiError {
    /// An error with a status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            details: None,
        }
    }
    /// 400 with `code`.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }
    /// 404 with `code`.
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }
    /// 409 with `code`.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }
    /// 500 `INTERNAL`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", message)
    }
    /// Adds a field to the error object.
    pub fn with(mut self, key: &'static str, value: Value) -> Self {
        self.details = Some((key, value));
        self
    }
}

impl From<ServerError> for ApiError {
    fn from(e: ServerError) -> Self {
        ApiError::internal(e.to_string())
    }
}

impl From<LifecycleError> for ApiError {
    fn from(e: LifecycleError) -> Self {
        let message = e.to_string();
        match e {
            LifecycleError::Active { .. } | LifecycleError::ActiveElsewhere(_) => {
                ApiError::conflict("RUN_ACTIVE", message)
            }
            LifecycleError::ShuttingDown => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "SHUTTING_DOWN", message)
            }
            LifecycleError::Locks(_) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "STORAGE_UNAVAILABLE",
                message,
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut err = json!({ "code": self.code, "message": self.message });
        // A 429's wait is also the `Retry-After` header.
        let retry_after = match &self.details {
            Some(("retry_after", v)) => v.as_u64(),
            _ => None,
        };
        if let (Some((k, v)), Some(obj)) = (self.details, err.as_object_mut()) {
            obj.insert(k.to_string(), v);
        }
        let mut r = (self.status, axum::Json(json!({ "error": err }))).into_response();
        if let Some(secs) = retry_after {
            r.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        r
    }
}
