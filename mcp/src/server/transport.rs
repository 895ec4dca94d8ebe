//! Serving a [`ToolServer`]: one session over a byte stream (stdio), or a session per client
//! over streamable HTTP.

use super::{ServeError, Session, ToolServer};
use rmcp::service::ServerInitializeError;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt;
use std::future::Future;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The path of the streamable HTTP endpoint.
pub const HTTP_PATH: &str = "/mcp";

/// Serves one session on this process's stdin/stdout until the client closes stdin or
/// `shutdown` completes. Nothing else may write to stdout meanwhile.
pub async fn serve_stdio(
    server: Arc<ToolServer>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let (read, write) = rmcp::transport::stdio_pipes();
    serve_io(server, read, write, shutdown).await
}

/// Serves one session over `read`/`write` (newline-delimited JSON-RPC) until the peer closes
/// the stream (before the handshake too) or `shutdown` completes.
pub async fn serve_io<R, W>(
    server: Arc<ToolServer>,
    read: R,
    write: W,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let ct = CancellationToken::new();
    let start = Session::new(server).serve_with_ct((read, write), ct.clone());
    tokio::pin!(shutdown);
    let running = tokio::select! {
        r = start => match r {
            Ok(running) => running,
            // The client went away before the handshake: nothing was served, nothing failed.
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(ServeError::Start(e.to_string())),
        },
        () = &mut shutdown => return Ok(()),
    };
    tokio::select! {
        _ = running.waiting() => {}
        () = shutdown => {
            ct.cancel();
        }
    }
    Ok(())
}

/// Serves streamable HTTP at [`HTTP_PATH`] on `listener`, one session per client, until
/// `shutdown` completes (open sessions are then closed). Requests must name a loopback host
/// or the listener's address (`Host`), against DNS rebinding.
pub async fn serve_http(
    server: Arc<ToolServer>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let local = listener.local_addr().map_err(|source| ServeError::Io {
        what: "reading the listening address".into(),
        source,
    })?;
    let ct = CancellationToken::new();
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    hosts.push(local.ip().to_string());
    hosts.push(local.to_string());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_cancellation_token(ct.child_token());
    let service: StreamableHttpService<Session, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(Session::new(server.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service(HTTP_PATH, service);
    let stop = ct.clone();
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            stop.cancel();
        })
        .await
        .map_err(|source| ServeError::Io {
            what: format!("serving MCP on http://{local}{HTTP_PATH}"),
            source,
        })
}
