//! Publishing on sled: an event reaches readers once a shared flush of the log made it durable.

use super::hub::Hub;
use super::EventStore;
use agentgraph_runtime::checkpoint::WalTree;
use std::sync::{Arc, Mutex};

/// How long an appended event may wait for a flush of the log before its own flush starts: it
/// rides on any flush that starts meanwhile (another thread's event, the server's metadata),
/// so the log is synced at most about this often for events, not once per event.
const EVENT_FLUSH_WITHIN: std::time::Duration = std::time::Duration::from_millis(2);

/// Events appended on sled and waiting for the flush that lets readers see them.
#[derive(Default)]
pub(super) struct Unpublished {
    events: Vec<(Arc<Hub>, u64)>,
    /// A publishing task is running (it takes whatever is here when its flush returns).
    publishing: bool,
}

impl EventStore {
    /// Lets readers see event `seq` of `hub` once a flush of the log covers it. One task per
    /// store publishes: it takes the events waiting, waits for a flush (sharing one that starts
    /// within [`EVENT_FLUSH_WITHIN`]), publishes them, and goes on while more wait; so a burst
    /// of appends costs one flush and one task, not one each.
    pub(super) fn publish_when_durable(
        &self,
        rt: &tokio::runtime::Handle,
        tree: &Arc<WalTree>,
        hub: Arc<Hub>,
        seq: u64,
    ) {
        {
            let mut u = self.unpublished.lock().unwrap_or_else(|p| p.into_inner());
            u.events.push((hub, seq));
            if u.publishing {
                return;
            }
            u.publishing = true;
        }
        /// Marks the publisher gone however its task ends (a runtime shutting down drops it
        /// mid-flush), so the next append starts another, which takes what was left.
        struct Publishing {
            queue: Arc<Mutex<Unpublished>>,
            /// Cleared when the task ends normally (it unsets the flag itself, under the lock
            /// it found the queue empty with, so no append falls between).
            armed: bool,
        }
        impl Publishing {
            fn disarm(&mut self) {
                self.armed = false;
            }
        }
        impl Drop for Publishing {
            fn drop(&mut self) {
                if self.armed {
                    self.queue
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .publishing = false;
                }
            }
        }
        let tree = tree.clone();
        let mut publishing = Publishing {
            queue: self.unpublished.clone(),
            armed: true,
        };
        rt.spawn(async move {
            let queue = publishing.queue.clone();
            loop {
                let batch = {
                    let mut u = queue.lock().unwrap_or_else(|p| p.into_inner());
                    if u.events.is_empty() {
                        u.publishing = false;
                        publishing.disarm();
                        break;
                    }
                    std::mem::take(&mut u.events)
                };
                // Every event of the batch was applied to the log before it was queued, so a
                // flush that starts after this call covers them all.
                if let Err(e) = tree.flush_within(EVENT_FLUSH_WITHIN).await {
                    // Readers still get the events: hiding the log for good would be worse
                    // than a replay that may miss them after a crash.
                    tracing::error!(error = %e, "flushing the event log failed");
                }
                for (hub, seq) in batch {
                    hub.publish(seq);
                }
            }
            // Not kept past the last flush: it holds the database open.
            drop(tree);
        });
    }
}
