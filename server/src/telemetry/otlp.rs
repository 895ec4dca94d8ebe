//! OpenTelemetry traces over OTLP/HTTP, on when the standard environment asks for them.
//!
//! [`layer`] turns the `tracing` spans of the runtime and the agent layer into OpenTelemetry
//! spans and exports them in batches: `run` → `step` → `task` (one node's work) → `chat {model}`
//! (one model call, with the GenAI attributes `gen_ai.request.model`, `gen_ai.usage.*`,
//! `agentgraph.usage.cost_usd` when the graph prices its model) and `execute_tool {name}`
//! (`gen_ai.tool.name`, `gen_ai.tool.call.id`), plus `checkpoint` (a checkpoint's write and flush).
//!
//! It follows the OpenTelemetry environment: `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL,
//! `/v1/traces` appended) or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) turns it on;
//! `OTEL_EXPORTER_OTLP_PROTOCOL` is `http/protobuf` (default) or `http/json` (gRPC is not built
//! in: point it at a collector's HTTP port, 4318); `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_SERVICE_NAME` (default `agentgraph`), `OTEL_RESOURCE_ATTRIBUTES` and
//! `OTEL_SDK_DISABLED=true` work as everywhere else.
//!
//! Build the layer **outside** an async runtime (the exporter's HTTP client is a blocking one
//! that runs on the batch processor's own thread) and keep the [`OtlpGuard`] until the end of
//! `main`: dropping it sends what is still buffered.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::{Level, Subscriber};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// Why the OTLP exporter could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// A protocol this build does not speak.
    #[error(
        "OTEL_EXPORTER_OTLP_PROTOCOL={0:?} is not supported: use http/protobuf (the default) or \
         http/json, and point the endpoint at the collector's HTTP port (usually 4318)"
    )]
    Protocol(String),
    /// The exporter refused its settings (a malformed endpoint or header).
    #[error("cannot set up the OTLP exporter: {0}")]
    Build(String),
}

/// Ends the export when dropped: spans still buffered are sent (bounded by the exporter's
/// timeout) and the batch thread stops.
pub struct OtlpGuard {
    provider: SdkTracerProvider,
}

impl Drop for OtlpGuard {
    fn drop(&mut self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("warning: OTLP export did not finish: {e}");
        }
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether the environment asks for an OTLP export of traces.
pub fn requested() -> bool {
    let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let endpoint = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT"))
        .is_some();
    endpoint && !disabled
}

/// The protocol the environment names (the traces-specific variable first).
fn protocol() -> Result<Protocol, OtlpError> {
    let named =
        env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL"));
    match named.as_deref().map(str::trim) {
        None | Some("http/protobuf") => Ok(Protocol::HttpBinary),
        Some("http/json") => Ok(Protocol::HttpJson),
        Some(other) => Err(OtlpError::Protocol(other.to_string())),
    }
}

/// Only agentgraph's own spans are exported (not those of the HTTP clients and servers
/// underneath), down to `debug` so `checkpoint` is in; events are not exported.
fn exported(meta: &tracing::Metadata<'_>) -> bool {
    meta.is_span() && meta.target().starts_with("agentgraph") && *meta.level() <= Level::DEBUG
}

/// The tracing layer exporting spans over OTLP, and the guard that finishes the export;
/// `Ok(None)` when the environment does not ask for it.
pub fn layer<S>() -> Result<Option<(impl Layer<S>, OtlpGuard)>, OtlpError>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    if !requested() {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol()?)
        .build()
        .map_err(|e| OtlpError::Build(e.to_string()))?;
    let mut resource = Resource::builder();
    if env("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("agentgraph");
    }
    let provider = SdkTracerProvider::builder()
        .with_resource(resource.build())
        .with_batch_exporter(exporter)
        .build();
    let tracer = provider.tracer("agentgraph");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(tracing_subscriber::filter::filter_fn(exported));
    Ok(Some((layer, OtlpGuard { provider })))
}
