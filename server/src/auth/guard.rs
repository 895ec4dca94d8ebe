//! The request guard, in order: the `Host` allow-list (421), then for state-changing methods
//! a JSON content type (415) and an acceptable `Origin` (403), then the bearer key or token
//! (401), then the owner of the thread a `/threads/{id}/…` path names (404 to anyone else).

use super::owners::thread_exists;
use super::principal::{Caller, Principal};
use crate::error::ApiError;
use crate::ServerState;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Host names accepted on any port.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Splits `host[:port]` (IPv6 in brackets) into the host, lowercased, and the port.
fn split_host(authority: &str) -> (String, Option<&str>) {
    let a = authority.trim();
    let (host, port) = if a.starts_with('[') {
        match a.find(']') {
            Some(end) => (&a[..=end], a[end + 1..].strip_prefix(':')),
            None => (a, None),
        }
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    (host.to_ascii_lowercase(), port)
}

/// The `Host` allow-list: loopback names on any port, each `--allowed-host` entry (`name`
/// on any port, `name:port` on that port only) and the configured and bound addresses.
pub(crate) async fn check_host(
    State(state): State<ServerState>,
    req: Request,
    next: Next,
) -> Response {
    let auth = &state.inner.auth;
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().authority().map(|a| a.to_string()));
    let allowed = host.as_deref().is_some_and(|h| {
        let (name, port) = split_host(h);
        let exact = format!("{name}:{}", port.unwrap_or(""));
        LOOPBACK_HOSTS.contains(&name.as_str())
            || auth.config.allowed_hosts.iter().any(|entry| {
                let entry = entry.trim().to_ascii_lowercase();
                let (e_name, e_port) = split_host(&entry);
                match e_port {
                    Some(_) => entry == exact,
                    None => e_name == name,
                }
            })
            || std::iter::once(auth.configured_addr)
                .chain(auth.bound.get().copied())
                .any(|a| a.to_string() == h.trim())
    });
    if !allowed {
        return ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "HOST_NOT_ALLOWED",
            format!(
                "Host `{}` is not served here (add it with --allowed-host)",
                host.unwrap_or_default()
            ),
        )
        .into_response();
    }
    next.run(req).await
}

/// Whether `origin` is the request's own (its `host[:port]` is the `Host` header) or in the
/// CORS allow-list.
fn origin_allowed(origin: &str, headers: &HeaderMap, cors: &[String]) -> bool {
    let origin = origin.trim().trim_end_matches('/');
    if cors
        .iter()
        .any(|c| c.trim().trim_end_matches('/').eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| h.trim().eq_ignore_ascii_case(authority))
}

/// Whether the content type is `application/json` (parameters such as `charset` allowed).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

/// The thread a `/threads/{id}…` path names (empty segments skipped, so `//threads//id` is
/// checked like `/threads/id` whatever the router makes of it).
fn thread_of(path: &str) -> Option<&str> {
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    match (segments.next(), segments.next()) {
        (Some("threads"), Some(id)) => Some(id),
        _ => None,
    }
}

/// The bearer token: the `Authorization` header, or on the event stream only (browsers'
/// `EventSource` cannot send headers) the `access_token` query parameter.
fn bearer(req: &Request) -> Option<String> {
    if let Some(v) = req.headers().get(header::AUTHORIZATION) {
        let v = v.to_str().ok()?;
        let (scheme, token) = v.trim().split_once(' ')?;
        return scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| token.trim().to_string());
    }
    let path = req.uri().path();
    if req.method() == Method::GET && path.starts_with("/threads/") && path.ends_with("/events") {
        return req.uri().query().and_then(|q| {
            q.split('&')
                .filter_map(|kv| kv.split_once('='))
                .find(|(k, _)| *k == "access_token")
                .map(|(_, v)| v.to_string())
        });
    }
    None
}

fn unauthorized(message: &str) -> Response {
    let mut r = ApiError::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message).into_response();
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

fn no_thread(thread: &str) -> Response {
    ApiError::not_found("THREAD_NOT_FOUND", format!("no thread {thread}")).into_response()
}

/// Content type and `Origin` of state-changing requests, the bearer key or token, and the
/// owner of the thread the path names; gives the handlers the [`Caller`].
pub(crate) async fn guard(
    State(state): State<ServerState>,
    mut req: Request,
    next: Next,
) -> Response {
    let auth = &state.inner.auth;
    let changes = matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    if changes {
        if !is_json(req.headers()) {
            return ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "UNSUPPORTED_MEDIA_TYPE",
                "state-changing requests need `Content-Type: application/json`",
            )
            .into_response();
        }
        if let Some(origin) = req.headers().get(header::ORIGIN) {
            let ok = origin
                .to_str()
                .is_ok_and(|o| origin_allowed(o, req.headers(), &auth.config.cors_origins));
            if !ok {
                return ApiError::new(
                    StatusCode::FORBIDDEN,
                    "ORIGIN_NOT_ALLOWED",
                    "this Origin may not change anything here (see --cors-origin)",
                )
                .into_response();
            }
        }
    }
    // Pages are static: they load without a key and send it with their own requests. The
    // health check answers load balancers, which carry no key; the API's description is public.
    let is_page = req.method() == Method::GET
        && (req.uri().path() == "/health"
            || req.uri().path() == "/openapi.json"
            || state.inner.pages.iter().any(|p| p.path == req.uri().path()));
    if is_page {
        return next.run(req).await;
    }
    let caller = if auth.config.enabled() {
        let Some(token) = bearer(&req) else {
            return unauthorized("send `Authorization: Bearer <API key or JWT>`");
        };
        match auth.authenticate(&token) {
            Ok(Some(p)) => Caller::Principal(p),
            Ok(None) => return unauthorized("the key or token is not valid"),
            Err(e) => return ApiError::internal(e.to_string()).into_response(),
        }
    } else {
        Caller::Anonymous
    };
    if let (Some(thread), Some(p)) = (thread_of(req.uri().path()), caller.principal()) {
        // The two ways a client starts with a new thread: its first run, or subscribing to its
        // events before starting it (as the chat page does).
        let path = req.uri().path();
        let claims = (req.method() == Method::POST && path.ends_with("/runs"))
            || (req.method() == Method::GET && path.ends_with("/events"));
        if let Err(r) = owns(&state, p, thread, claims).await {
            return r;
        }
    }
    req.extensions_mut().insert(caller);
    next.run(req).await
}

/// Lets `p` through to `thread` when it owns it, is `admin`, or claims it now (`claims`: a run
/// or an event stream on a thread nobody owns and that holds nothing yet); else 404.
async fn owns(
    state: &ServerState,
    p: &Principal,
    thread: &str,
    claims: bool,
) -> Result<(), Response> {
    let inner = &state.inner;
    let owners = &inner.auth.owners;
    let me = p.namespace();
    let internal = |e: crate::ServerError| ApiError::internal(e.to_string()).into_response();
    match owners.owner_of(thread).await.map_err(internal)? {
        Some(o) if o == me => return Ok(()),
        Some(_) if p.is_admin() => return Ok(()),
        Some(_) => return Err(no_thread(thread)),
        None => {}
    }
    if !claims || !agentgraph_runtime::is_valid_thread_id(thread) {
        // Threads from before authentication (or nonexistent ones).
        return if p.is_admin() {
            Ok(())
        } else {
            Err(no_thread(thread))
        };
    }
    if thread_exists(&inner.events, inner.checkpointer.as_ref(), thread)
        .await
        .map_err(internal)?
    {
        return if p.is_admin() {
            Ok(())
        } else {
            Err(no_thread(thread))
        };
    }
    if owners.claim(thread, &me).await.map_err(internal)? || p.is_admin() {
        Ok(())
    } else {
        Err(no_thread(thread))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_split_with_and_without_ports() {
        assert_eq!(split_host("LocalHost:80"), ("localhost".into(), Some("80")));
        assert_eq!(split_host("[::1]:8080"), ("[::1]".into(), Some("8080")));
        assert_eq!(split_host("[::1]"), ("[::1]".into(), None));
        assert_eq!(split_host("example.com"), ("example.com".into(), None));
    }

    #[test]
    fn origins_are_same_origin_or_listed() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        assert!(origin_allowed("http://127.0.0.1:8080", &h, &[]));
        assert!(!origin_allowed("http://evil.example", &h, &[]));
        assert!(!origin_allowed("null", &h, &[]));
        let cors = vec!["https://app.example".to_string()];
        assert!(origin_allowed("https://app.example", &h, &cors));
        assert_eq!(thread_of("/threads/t1/state"), Some("t1"));
        assert_eq!(thread_of("/threads"), None);
        assert_eq!(thread_of("//threads//t1/state"), Some("t1"));
        assert_eq!(thread_of("/graphs/threads"), None);
    }
}
