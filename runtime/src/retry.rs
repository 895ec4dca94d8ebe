//! Per-node retry policy (LangGraph's `RetryPolicy`, with typed error classes).

use rand::Rng;
use std::time::Duration;

/// Which failures are retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryOn {
    /// Transient failures and timeouts (the default).
    Transient,
    /// Every failure except interrupts and cancellation.
    Any,
    /// Failures whose error code is in the list.
    Codes(Vec<String>),
}

/// How often and how patiently a failing node is retried.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first one included.
    pub max_attempts: u32,
    /// Wait before the second attempt.
    pub initial_interval: Duration,
    /// Each wait is the previous one times this.
    pub backoff_factor: f64,
    /// Upper bound on one wait.
    pub max_interval: Duration,
    /// Adds up to the current wait again at random, so retries of many runs spread out.
    pub jitter: bool,
    /// Which failures are retried.
    pub retry_on: RetryOn,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            initial_interval: Duration::from_millis(500),
            backoff_factor: 2.0,
            max_interval: Duration::from_secs(128),
            jitter: true,
            retry_on: RetryOn::Transient,
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt number `attempt` (1-based).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = self.backoff_factor.powi(attempt.saturating_sub(1) as i32);
        let base = self.initial_interval.as_secs_f64() * exp;
        let capped = base.min(self.max_interval.as_secs_f64()).max(0.0);
        let with_jitter = if self.jitter {
            capped + rand::thread_rng().gen_range(0.0..=capped.max(0.0))
        } else {
            capped
        };
        Duration::from_secs_f64(with_jitter.min(self.max_interval.as_secs_f64() * 2.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_caps() {
        let p = RetryPolicy {
            initial_interval: Duration::from_millis(10),
            max_interval: Duration::from_millis(30),
            jitter: false,
            ..RetryPolicy::default()
        };
        assert_eq!(p.backoff(1), Duration::from_millis(10));
        assert_eq!(p.backoff(2), Duration::from_millis(20));
        assert_eq!(p.backoff(3), Duration::from_millis(30));
        let j = RetryPolicy { jitter: true, ..p };
        let d = j.backoff(2);
        assert!(d >= Duration::from_millis(20) && d <= Duration::from_millis(40));
    }
}
