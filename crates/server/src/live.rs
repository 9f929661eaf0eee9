//! The runs that are live on this instance, and the claim that lets one start: no two
//! runs of a session here at once, and none started from what the store held before
//! another run of it ended.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_runtime::GateRegistry;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::backend_failure::BackendFailure;
use crate::writer::{RestoredGates, Write};

/// The sessions whose run is live, by id, and those whose run is being started.
#[derive(Default)]
pub(crate) struct LiveMap {
    runs: Mutex<HashMap<String, Arc<LiveSession>>>,
    starting: Arc<Mutex<HashSet<String>>>,
}

impl LiveMap {
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<LiveSession>>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<LiveSession>> {
        self.lock().get(id).cloned()
    }

    /// The right to start a run of session `id` here, unless one is live or being
    /// started: held from before the store is read for the run until the run is live.
    pub(crate) fn claim(&self, id: &str) -> Option<StartClaim> {
        let mut starting = self.starting.lock().unwrap_or_else(|p| p.into_inner());
        // A run is live only once started under a claim, so none appears meanwhile.
        if self.get(id).is_some() || !starting.insert(id.to_owned()) {
            return None;
        }
        Some(StartClaim {
            id: id.to_owned(),
            starting: Arc::clone(&self.starting),
        })
    }
}

/// The right to start a run of one session here ([`LiveMap::claim`]); given up when
/// dropped.
pub(crate) struct StartClaim {
    id: String,
    starting: Arc<Mutex<HashSet<String>>>,
}

impl StartClaim {
    /// The session it is for.
    pub(crate) fn session(&self) -> &str {
        &self.id
    }
}

impl Drop for StartClaim {
    fn drop(&mut self) {
        self.starting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
    }
}

/// A session whose run is live: what the routes need to reach it.
pub(crate) struct LiveSession {
    pub(crate) gates: GateRegistry,
    pub(crate) writer: mpsc::UnboundedSender<Write>,
    pub(crate) restored: Arc<RestoredGates>,
    /// Answers are given one at a time per session.
    pub(crate) respond_lock: tokio::sync::Mutex<()>,
    /// The run's cancellation: the user's cancel, the server's shutdown.
    pub(crate) cancel: CancellationToken,
    /// Why the user cancelled the session, once they did.
    pub(crate) cancelled: Mutex<Option<String>>,
    /// Fires once the run has ended and its outcome is written.
    pub(crate) ended: CancellationToken,
    /// Set when the run is parked (the server shuts down, another instance took its
    /// lease, or its store failed): it stops without finishing, and its gates stay
    /// pending, for the run that resumes it.
    pub(crate) parked: Arc<AtomicBool>,
    /// Whether the store failed the run (then it parked, and is taken up again later).
    pub(crate) failure: Arc<BackendFailure>,
}

impl LiveSession {
    /// Stops the run without finishing the session (see [`LiveSession::parked`]).
    pub(crate) fn park(&self) {
        self.parked.store(true, Ordering::SeqCst);
        self.cancel.cancel();
    }

    /// Why the user cancelled the session, if they did.
    pub(crate) fn cancel_reason(&self) -> Option<String> {
        self.cancelled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits until the writer has written everything sent before.
    pub(crate) async fn flush(&self) {
        let (done, flushed) = oneshot::channel();
        if self.writer.send(Write::Flush(done)).is_ok() {
            let _ = flushed.await;
        }
    }
}
