//! Metrics for `GET /metrics` (Prometheus text format) and the `tracing` layer that feeds them.
//!
//! Counters the server knows itself (runs by how they ended, open event streams) are counted
//! where they happen. Latencies come from the spans the runtime and the agent layer open —
//! `step`, `checkpoint` (a checkpoint's write and flush), `chat` (one model call, with the
//! GenAI `gen_ai.usage.*` token fields) and `execute_tool` — through [`MetricsLayer`], which
//! the application adds to its subscriber (the `agentgraph` CLI does). Without the layer those
//! histograms stay at zero; the rest still counts.
//!
//! [`otlp`] exports the same spans as OpenTelemetry traces.

pub mod otlp;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 14] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// A latency histogram with fixed buckets.
#[derive(Default)]
pub struct Histogram {
    counts: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    /// Records one duration.
    pub fn observe(&self, secs: f64) {
        if let Some(i) = BUCKETS.iter().position(|b| secs <= *b) {
            self.counts[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros
            .fetch_add((secs * 1e6) as u64, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (b, c) in BUCKETS.iter().zip(&self.counts) {
            cumulative += c.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {cumulative}");
        }
        let count = self.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {count}");
    }
}

/// How a run ended, as `/metrics` counts it.
#[derive(Debug, Clone, Copy)]
pub enum RunEnd {
    /// Finished.
    Done,
    /// Stopped at an interrupt.
    Interrupted,
    /// Failed.
    Failed,
    /// Cancelled (by a client or a shutdown).
    Cancelled,
}

const STATUSES: [&str; 4] = ["done", "interrupted", "failed", "cancelled"];

/// Every metric of this process.
#[derive(Default)]
pub struct Metrics {
    runs_started: AtomicU64,
    runs_ended: [AtomicU64; 4],
    streams_open: AtomicI64,
    step: Histogram,
    checkpoint: Histogram,
    model_call: Histogram,
    tool_call: Histogram,
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
}

/// The process's metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::default)
}

/// Holds one open event stream in the gauge until dropped.
pub struct OpenStream(());

impl Drop for OpenStream {
    fn drop(&mut self) {
        metrics().streams_open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Metrics {
    /// A run started.
    pub fn run_started(&self) {
        self.runs_started.fetch_add(1, Ordering::Relaxed);
    }

    /// A run ended.
    pub fn run_ended(&self, end: RunEnd) {
        self.runs_ended[end as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// An event stream opened; it counts until the guard is dropped.
    pub fn stream_opened(&self) -> OpenStream {
        self.streams_open.fetch_add(1, Ordering::Relaxed);
        OpenStream(())
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let started = self.runs_started.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP agentgraph_runs_started_total Runs started.\n\
             # TYPE agentgraph_runs_started_total counter\n\
             agentgraph_runs_started_total {started}\n\
             # HELP agentgraph_runs_total Runs ended, by how they ended.\n\
             # TYPE agentgraph_runs_total counter"
        );
        let mut ended = 0;
        for (status, n) in STATUSES.iter().zip(&self.runs_ended) {
            let n = n.load(Ordering::Relaxed);
            ended += n;
            let _ = writeln!(out, "agentgraph_runs_total{{status=\"{status}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP agentgraph_runs_active Runs started and not ended.\n\
             # TYPE agentgraph_runs_active gauge\n\
             agentgraph_runs_active {}",
            started.saturating_sub(ended)
        );
        let _ = writeln!(
            out,
            "# HELP agentgraph_event_streams_open Open event streams (SSE).\n\
             # TYPE agentgraph_event_streams_open gauge\n\
             agentgraph_event_streams_open {}",
            self.streams_open.load(Ordering::Relaxed).max(0)
        );
        self.step.render(
            &mut out,
            "agentgraph_step_duration_seconds",
            "Super-steps, from planning to the settled writes.",
        );
        self.checkpoint.render(
            &mut out,
            "agentgraph_checkpoint_write_seconds",
            "Checkpoint writes, including the flush the durability mode asks for.",
        );
        self.model_call.render(
            &mut out,
            "agentgraph_model_call_duration_seconds",
            "Model calls (one request to a provider, retries included).",
        );
        self.tool_call.render(
            &mut out,
            "agentgraph_tool_call_duration_seconds",
            "Tool calls.",
        );
        let _ = writeln!(
            out,
            "# HELP agentgraph_model_tokens_total Tokens of model calls, by direction.\n\
             # TYPE agentgraph_model_tokens_total counter\n\
             agentgraph_model_tokens_total{{direction=\"input\"}} {}\n\
             agentgraph_model_tokens_total{{direction=\"output\"}} {}",
            self.input_tokens.load(Ordering::Relaxed),
            self.output_tokens.load(Ordering::Relaxed)
        );
        out
    }
}

/// Which histogram a span's duration goes to.
fn histogram_of(name: &str) -> Option<&'static Histogram> {
    let m = metrics();
    match name {
        "step" => Some(&m.step),
        "checkpoint" => Some(&m.checkpoint),
        "chat" => Some(&m.model_call),
        "execute_tool" => Some(&m.tool_call),
        _ => None,
    }
}

/// When a measured span opened.
struct Opened(Instant);

/// Adds a model call's token fields to the counters.
struct Tokens;

impl Visit for Tokens {
    fn record_u64(&mut self, field: &Field, value: u64) {
        let m = metrics();
        match field.name() {
            "gen_ai.usage.input_tokens" => m.input_tokens.fetch_add(value, Ordering::Relaxed),
            "gen_ai.usage.output_tokens" => m.output_tokens.fetch_add(value, Ordering::Relaxed),
            _ => 0,
        };
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.record_u64(field, u64::try_from(value).unwrap_or(0));
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

/// A `tracing` layer timing the spans `/metrics` reports (see the module docs). Give it its
/// own filter (`.with_filter(MetricsLayer::filter())`) so it sees those spans whatever the
/// log level.
pub struct MetricsLayer;

impl MetricsLayer {
    /// The spans the layer needs, at every level (the `checkpoint` span is `debug`).
    pub fn filter() -> tracing_subscriber::filter::Targets {
        tracing_subscriber::filter::Targets::new()
            .with_target("agentgraph_runtime", tracing::Level::DEBUG)
            .with_target("agentgraph_agents", tracing::Level::INFO)
    }
}

impl<S> Layer<S> for MetricsLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if histogram_of(attrs.metadata().name()).is_none() {
            return;
        }
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Opened(Instant::now()));
        }
        if attrs.metadata().name() == "chat" {
            attrs.record(&mut Tokens);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if ctx.metadata(id).is_some_and(|m| m.name() == "chat") {
            values.record(&mut Tokens);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(h) = histogram_of(span.name()) else {
            return;
        };
        let opened = span.extensions().get::<Opened>().map(|o| o.0);
        if let Some(at) = opened {
            h.observe(at.elapsed().as_secs_f64());
        }
    }
}
