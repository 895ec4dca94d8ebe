//! Per-principal limits: runs in flight, run starts per minute and open event streams. A
//! request over a limit gets 429 `RATE_LIMITED` with `Retry-After`.
//!
//! The three counters share one small table keyed by the principal's namespace; a permit
//! gives its slot back when dropped (a run's when the run ends, a stream's when the client
//! goes away).

use crate::error::ApiError;
use axum::http::StatusCode;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The limits every principal gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Runs in flight at once (default 4).
    pub max_concurrent_runs: usize,
    /// Runs started (and resumed) per rolling minute (default 60).
    pub runs_per_minute: usize,
    /// Open `GET /threads/{id}/events` streams (default 16).
    pub max_streams: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_concurrent_runs: 4,
            runs_per_minute: 60,
            max_streams: 16,
        }
    }
}

const WINDOW: Duration = Duration::from_secs(60);

/// What one principal uses now.
#[derive(Default)]
struct Usage {
    runs: usize,
    streams: usize,
    /// When its runs of the last minute started, oldest first.
    starts: VecDeque<Instant>,
}

impl Usage {
    fn idle(&self) -> bool {
        self.runs == 0 && self.streams == 0 && self.starts.is_empty()
    }
}

#[derive(Default)]
struct Table {
    usage: Mutex<HashMap<String, Usage>>,
}

impl Table {
    fn with<R>(&self, key: &str, f: impl FnOnce(&mut Usage) -> R) -> R {
        let mut map = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        let usage = map.entry(key.to_string()).or_default();
        let now = Instant::now();
        while usage.starts.front().is_some_and(|t| now - *t >= WINDOW) {
            usage.starts.pop_front();
        }
        let r = f(usage);
        if usage.idle() {
            map.remove(key);
        }
        r
    }
}

/// Counts what each principal uses against [`Limits`].
#[derive(Clone, Default)]
pub struct Limiter {
    limits: Limits,
    table: Arc<Table>,
}

#[derive(Clone, Copy)]
enum Kind {
    Run,
    Stream,
}

/// A run's or stream's slot, given back when dropped.
pub struct Permit {
    table: Arc<Table>,
    key: String,
    kind: Kind,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.table.with(&self.key, |u| match self.kind {
            Kind::Run => u.runs = u.runs.saturating_sub(1),
            Kind::Stream => u.streams = u.streams.saturating_sub(1),
        });
    }
}

/// 429 `RATE_LIMITED` with the `Retry-After` seconds in `retry_after`.
fn limited(what: String, retry_after: u64) -> ApiError {
    ApiError::new(StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED", what)
        .with("retry_after", retry_after.into())
}

impl Limiter {
    /// A limiter enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        Limiter {
            limits,
            table: Arc::default(),
        }
    }

    /// The limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// A slot for a run of the principal `key`, counted against both run limits.
    pub fn start_run(&self, key: &str) -> Result<Permit, ApiError> {
        let l = self.limits;
        self.table.with(key, |u| {
            if u.starts.len() >= l.runs_per_minute {
                let wait = u
                    .starts
                    .front()
                    .map(|t| WINDOW.saturating_sub(t.elapsed()))
                    .unwrap_or(WINDOW);
                return Err(limited(
                    format!("at most {} runs per minute", l.runs_per_minute),
                    wait.as_secs() + 1,
                ));
            }
            if u.runs >= l.max_concurrent_runs {
                return Err(limited(
                    format!("at most {} runs at once", l.max_concurrent_runs),
                    1,
                ));
            }
            u.starts.push_back(Instant::now());
            u.runs += 1;
            Ok(())
        })?;
        Ok(self.permit(key, Kind::Run))
    }

    /// A slot for an event stream of the principal `key`.
    pub fn open_stream(&self, key: &str) -> Result<Permit, ApiError> {
        let max = self.limits.max_streams;
        self.table.with(key, |u| {
            if u.streams >= max {
                return Err(limited(format!("at most {max} open event streams"), 1));
            }
            u.streams += 1;
            Ok(())
        })?;
        Ok(self.permit(key, Kind::Stream))
    }

    fn permit(&self, key: &str, kind: Kind) -> Permit {
        Permit {
            table: self.table.clone(),
            key: key.to_string(),
            kind,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_counted_per_principal_and_given_back() {
        let l = Limiter::new(Limits {
            max_concurrent_runs: 1,
            runs_per_minute: 2,
            max_streams: 1,
        });
        let a = l.start_run("a").expect("first");
        assert_eq!(l.start_run("a").err().map(|e| e.status.as_u16()), Some(429));
        let _b = l.start_run("b").expect("another principal");
        drop(a);
        let _a2 = l.start_run("a").expect("slot given back");
        drop(_a2);
        let e = l.start_run("a").err().expect("per minute");
        assert_eq!(e.code, "RATE_LIMITED");
        assert!(e.details.is_some_and(|(_, v)| v.as_u64() >= Some(59)));
        let s = l.open_stream("a").expect("stream");
        assert!(l.open_stream("a").is_err());
        drop(s);
        assert!(l.open_stream("a").is_ok());
    }
}
