//! Taking up again, here, a session whose run parked for a fault not its own (its store,
//! its agent bus, its model): after a pause that grows while the fault lasts.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;

use crate::resume::{Relaunch, Relaunching};
use crate::server::AgentServer;

/// The first pause before a run its backends failed is taken up again; it doubles up to
/// [`MAX_PAUSE`].
pub(crate) const FIRST_PAUSE: Duration = Duration::from_millis(500);
pub(crate) const MAX_PAUSE: Duration = Duration::from_secs(30);

impl AgentServer {
    /// Takes up again, here, a session whose run its backends failed, or whose model
    /// could not be reached: after a pause (longer each time the store still fails or the
    /// run parks again), from what the store holds, until it ends, another instance runs
    /// it, or the server shuts down. A fault is not the session's own: however often it
    /// parks, it is not given up. Boxed: it launches runs, and is called where a run
    /// ends.
    pub(crate) fn retake_after_fault(self, product: String, id: String) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let retaking = Arc::clone(&self.inner.retaking);
            lock(&retaking).insert(id.clone());
            self.retake(&product, &id).await;
            lock(&retaking).remove(&id);
        })
    }

    /// The waits and tries of [`retake_after_fault`](Self::retake_after_fault).
    async fn retake(&self, product: &str, id: &str) {
        let mut pause = FIRST_PAUSE;
        loop {
            // A shutdown ends the wait: the next start resumes the session.
            let woke = tokio::time::Instant::now() + pause;
            while tokio::time::Instant::now() < woke {
                if self.inner.shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100).min(pause)).await;
            }
            pause = (pause * 2).min(MAX_PAUSE);
            let Some(hosted) = self.product(product).cloned() else {
                return;
            };
            match self.relaunch(&hosted, id, Relaunching::AfterFault).await {
                Ok(Relaunch::Started) => {
                    // Its end decides: finished, or parked by a fault again (then the next
                    // try waits longer).
                    if let Some(live) = self.inner.live.get(id) {
                        live.ended.cancelled().await;
                    }
                }
                Ok(Relaunch::Running | Relaunch::Ended | Relaunch::GaveUp(_)) => return,
                Err(error) => {
                    tracing::warn!(session = %id, %error, "the store still fails: the session waits");
                }
            }
        }
    }

    /// Whether the session waits here to be taken up again after its backends failed it.
    pub(crate) fn is_retaking(&self, id: &str) -> bool {
        lock(&self.inner.retaking).contains(id)
    }
}

fn lock(set: &Mutex<HashSet<String>>) -> std::sync::MutexGuard<'_, HashSet<String>> {
    set.lock().unwrap_or_else(|p| p.into_inner())
}
