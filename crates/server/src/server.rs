//! [`AgentServer`]: the products, the store, and the runs that are live.

use agent_runtime::GateRegistry;
use agent_runtime::sessions::{SessionStatus, SessionStore, StoreError, StoredGate};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::product::{Product, SessionHandle};
use crate::writer::{Listener, Numbered, RestoredGates, Write, Writer};

/// How many events a slow live stream may fall behind before it catches up from the store.
const BROADCAST_CAPACITY: usize = 256;

/// Limits and timings of the HTTP host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The largest request body accepted (bigger ones get 413). Default 1 MiB.
    pub max_body_bytes: usize,
    /// How often an idle event stream sends a keep-alive comment. Default 15 s.
    pub keep_alive: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_body_bytes: 1024 * 1024,
            keep_alive: Duration::from_secs(15),
        }
    }
}

/// The HTTP host for any number of [`Product`]s: sessions with tokens, event streams with
/// replay, gate answers, one run per session. Cheap to clone; clones share everything.
///
/// See the [crate documentation](crate) for the routes and an example.
#[derive(Clone)]
pub struct AgentServer {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Clone)]
pub(crate) struct Inner {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) products: Vec<Arc<dyn Product>>,
    pub(crate) config: ServerConfig,
    pub(crate) live: Arc<LiveMap>,
}

impl std::fmt::Debug for AgentServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let products: Vec<&str> = self.inner.products.iter().map(|p| p.name()).collect();
        f.debug_struct("AgentServer")
            .field("products", &products)
            .field("config", &self.inner.config)
            .field("live_sessions", &self.inner.live.lock().len())
            .finish()
    }
}

/// The sessions whose run is live, by id.
#[derive(Default)]
pub(crate) struct LiveMap(Mutex<HashMap<String, Arc<LiveSession>>>);

impl LiveMap {
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<LiveSession>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<LiveSession>> {
        self.lock().get(id).cloned()
    }
}

/// A session whose run is live: what the routes need to reach it.
pub(crate) struct LiveSession {
    pub(crate) gates: GateRegistry,
    pub(crate) writer: mpsc::UnboundedSender<Write>,
    pub(crate) events: broadcast::Sender<Numbered>,
    pub(crate) restored: Arc<RestoredGates>,
    /// Answers are given one at a time per session.
    pub(crate) respond_lock: tokio::sync::Mutex<()>,
}

impl LiveSession {
    /// Waits until the writer has written everything sent before.
    pub(crate) async fn flush(&self) {
        let (done, flushed) = oneshot::channel();
        if self.writer.send(Write::Flush(done)).is_ok() {
            let _ = flushed.await;
        }
    }
}

/// What a run starts from.
struct Launch {
    product: Arc<dyn Product>,
    id: String,
    request: Value,
    status: SessionStatus,
    saved_state: Option<Value>,
    gates: Vec<StoredGate>,
}

impl AgentServer {
    /// A server keeping its sessions in `store`, with no product yet.
    pub fn new(store: Arc<dyn SessionStore>) -> Self {
        AgentServer {
            inner: Arc::new(Inner {
                store,
                products: Vec::new(),
                config: ServerConfig::default(),
                live: Arc::default(),
            }),
        }
    }

    /// Hosts `product` under `/api/{product.name()}/...`. A product with the name of one
    /// already hosted replaces it.
    pub fn with_product(self, product: Arc<dyn Product>) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        if let Some(slot) = inner
            .products
            .iter_mut()
            .find(|p| p.name() == product.name())
        {
            tracing::warn!(
                product = product.name(),
                "product registered twice; the last one wins"
            );
            *slot = product;
        } else {
            inner.products.push(product);
        }
        AgentServer {
            inner: Arc::new(inner),
        }
    }

    /// Sets the limits and timings.
    pub fn with_config(self, config: ServerConfig) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        inner.config = config;
        AgentServer {
            inner: Arc::new(inner),
        }
    }

    /// The routes, ready to serve or to [`nest`](axum::Router::nest)/
    /// [`merge`](axum::Router::merge) into a bigger router.
    pub fn router(&self) -> axum::Router {
        crate::routes::router(self.clone())
    }

    /// Serves [`router`](Self::router) on `listener` until the listener fails.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        if let Ok(address) = listener.local_addr() {
            tracing::info!(%address, "agent server listening");
        }
        axum::serve(listener, self.router()).await
    }

    /// After a restart: reruns every unfinished session (running or waiting) of every
    /// hosted product whose run is not live here already, with its saved state and the
    /// answers of its answered gates restored. Gates that were pending stay listed (and
    /// answerable) until the rerun reaches them again. Returns how many runs it started.
    pub async fn resume_unfinished(&self) -> Result<usize, StoreError> {
        let mut resumed = 0;
        for product in &self.inner.products {
            for record in self.inner.store.unfinished(product.name()).await? {
                if self.inner.live.get(&record.id).is_some() {
                    continue;
                }
                let gates = self.inner.store.gates(&record.id).await?;
                let saved_state = self.inner.store.load_state(&record.id).await?;
                tracing::info!(session = %record.id, product = product.name(), "resuming");
                let launched = self.launch(Launch {
                    product: Arc::clone(product),
                    id: record.id,
                    request: record.request,
                    status: record.status,
                    saved_state,
                    gates,
                });
                if launched {
                    resumed += 1;
                }
            }
        }
        Ok(resumed)
    }

    pub(crate) fn product(&self, name: &str) -> Option<&Arc<dyn Product>> {
        self.inner.products.iter().find(|p| p.name() == name)
    }

    /// Starts the run of a session just created.
    pub(crate) fn start_run(&self, product: Arc<dyn Product>, id: String, request: Value) {
        self.launch(Launch {
            product,
            id,
            request,
            status: SessionStatus::Running,
            saved_state: None,
            gates: Vec::new(),
        });
    }

    /// Starts a run unless one is live for this session. Returns whether it started one.
    fn launch(&self, launch: Launch) -> bool {
        let Launch {
            product,
            id,
            request,
            status,
            saved_state,
            gates: stored_gates,
        } = launch;
        let (writer_tx, writer_rx) = mpsc::unbounded_channel();
        let restored = Arc::new(RestoredGates::default());
        let gates = GateRegistry::with_listener(Arc::new(Listener {
            writer: writer_tx.clone(),
            restored: Arc::clone(&restored),
        }));
        let mut answers = Vec::new();
        let mut announced = HashSet::new();
        {
            let mut pending = restored.lock();
            for gate in stored_gates {
                match gate.answer {
                    Some(answer) => answers.push((gate.id, answer)),
                    None => {
                        announced.insert(gate.id.clone());
                        pending.insert(gate.id.clone(), gate);
                    }
                }
            }
        }
        gates.restore(answers);
        let (events, _) = broadcast::channel(BROADCAST_CAPACITY);
        let live = Arc::new(LiveSession {
            gates: gates.clone(),
            writer: writer_tx.clone(),
            events: events.clone(),
            restored: Arc::clone(&restored),
            respond_lock: tokio::sync::Mutex::new(()),
        });
        {
            let mut map = self.inner.live.lock();
            if map.contains_key(&id) {
                tracing::debug!(session = %id, "already running");
                return false;
            }
            map.insert(id.clone(), live);
        }

        let writer = Writer {
            store: Arc::clone(&self.inner.store),
            session: id.clone(),
            events,
            gates: gates.clone(),
            restored,
            announced,
            status,
        };
        let span = tracing::info_span!("session_run", session.id = %id, product = product.name(), resumed = saved_state.is_some());
        tokio::spawn(writer.run(writer_rx).instrument(span.clone()));

        let cancel = CancellationToken::new();
        let handle = SessionHandle::new(
            id.clone(),
            product.name().to_owned(),
            request,
            gates,
            writer_tx.clone(),
            saved_state,
            cancel.clone(),
        );
        let live_map = Arc::clone(&self.inner.live);
        tokio::spawn(
            async move {
                tracing::info!("run started");
                // The run is its own task, so a panic is caught by its JoinHandle.
                let run = tokio::spawn(async move { product.run(handle).await }.in_current_span());
                let outcome = match run.await {
                    Ok(outcome) => outcome,
                    Err(error) if error.is_panic() => {
                        Err(panic_message(error.into_panic().as_ref()))
                    }
                    Err(_) => Err("the run was cancelled".to_owned()),
                };
                match &outcome {
                    Ok(_) => tracing::info!("run complete"),
                    Err(error) => tracing::warn!(%error, "run failed"),
                }
                cancel.cancel();
                let (done, written) = oneshot::channel();
                if writer_tx.send(Write::Finish { outcome, done }).is_ok() {
                    let _ = written.await;
                }
                live_map.lock().remove(&id);
            }
            .instrument(span),
        );
        true
    }
}

/// The message of a caught panic.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned());
    format!("the run panicked: {detail}")
}
