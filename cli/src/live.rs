//! The readable live view of a run on a terminal: one line per task with its duration, a
//! spinner while it runs (on a terminal), tool progress and streamed tokens underneath.

use agentgraph_runtime::{DebugEvent, Event, EventKind};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Renders events for people, on stderr.
pub struct LiveView {
    bars: MultiProgress,
    running: HashMap<String, (Instant, ProgressBar, String)>,
    tty: bool,
    /// Streamed tokens were printed and the line is not finished yet.
    mid_line: bool,
}

impl LiveView {
    /// A view drawing spinners when stderr is a terminal, plain lines otherwise.
    pub fn new() -> Self {
        let tty = std::io::stderr().is_terminal();
        let target = if tty {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        LiveView {
            bars: MultiProgress::with_draw_target(target),
            running: HashMap::new(),
            tty,
            mid_line: false,
        }
    }

    fn line(&mut self, text: String) {
        if std::mem::take(&mut self.mid_line) {
            eprintln!();
        }
        if self.tty {
            let _ = self.bars.println(text);
        } else {
            eprintln!("{text}");
        }
    }

    fn label(ev: &Event) -> String {
        let node = ev.node.clone().unwrap_or_default();
        match ev.ns.last() {
            Some(ns) => format!("{}/{node}", ns.split(':').next().unwrap_or(ns)),
            None => node,
        }
    }

    /// Shows one event.
    pub fn handle(&mut self, ev: &Event) {
        match &ev.kind {
            EventKind::Debug(DebugEvent::TaskStart { step, task_id }) => {
                let label = Self::label(ev);
                let bar = self.bars.add(ProgressBar::new_spinner());
                bar.set_style(
                    ProgressStyle::with_template("{spinner} step {prefix} {msg} {elapsed}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_prefix(step.to_string());
                bar.set_message(label.clone());
                if self.tty {
                    bar.enable_steady_tick(Duration::from_millis(100));
                }
                self.running
                    .insert(task_id.clone(), (Instant::now(), bar, label));
            }
            EventKind::Debug(DebugEvent::TaskEnd {
                step,
                task_id,
                error,
                cached,
            }) => {
                let (took, label) = match self.running.remove(task_id) {
                    Some((t, bar, label)) => {
                        bar.finish_and_clear();
                        (t.elapsed(), label)
                    }
                    None => (Duration::ZERO, Self::label(ev)),
                };
                let ms = took.as_secs_f64() * 1000.0;
                let text = match (error, cached) {
                    (Some(e), _) if e.starts_with("interrupted") => {
                        format!("⏸ step {step} {label} waits for input")
                    }
                    (Some(e), _) => format!("✗ step {step} {label} ({ms:.1} ms): {e}"),
                    (None, true) => format!("✓ step {step} {label} (saved result reused)"),
                    (None, false) => format!("✓ step {step} {label} ({ms:.1} ms)"),
                };
                self.line(text);
            }
            EventKind::Custom(data) => {
                let text = match (data.get("title"), data.get("status")) {
                    (Some(t), Some(s)) => format!(
                        "    · {} [{}]",
                        t.as_str().unwrap_or_default(),
                        s.as_str().unwrap_or_default()
                    ),
                    (Some(t), None) => format!("    · {}", t.as_str().unwrap_or_default()),
                    _ => format!("    · {data}"),
                };
                self.line(text);
            }
            EventKind::Messages(chunk) => {
                if let Some(t) = chunk
                    .get("delta")
                    .or_else(|| chunk.get("text"))
                    .and_then(|v| v.as_str())
                {
                    eprint!("{t}");
                    self.mid_line = true;
                }
            }
            _ => {}
        }
    }

    /// Clears what is still drawn.
    pub fn finish(&mut self) {
        for (_, (_, bar, _)) in self.running.drain() {
            bar.finish_and_clear();
        }
    }
}
