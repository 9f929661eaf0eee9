//! [`AgentServer`]: the products, the store, and the runs that are live.

use agent_runtime::bus::{AgentBus, InMemoryBus};
use agent_runtime::checkpoint::{CheckpointStore, InMemoryCheckpointStore};
use agent_runtime::sessions::{
    EventFanout, InProcessControl, InProcessFanout, InProcessLeases, RunQueue, SessionControl,
    SessionLeases, SessionStore,
};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::{Auth, OwnerFields};
use crate::hosted::Hosted;
use crate::live::{LiveMap, LiveSession};
use crate::product::Product;

/// Limits and timings of the HTTP host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The largest request body accepted (bigger ones get 413). Default 1 MiB.
    pub max_body_bytes: usize,
    /// How often an idle event stream sends a keep-alive comment. Default 15 s.
    pub keep_alive: Duration,
    /// How many restarts in a row may find a session with no new event before
    /// [`AgentServer::resume_unfinished`] gives up on it (status `failed`, reason
    /// recorded). Default 3.
    pub max_resume_attempts: u32,
    /// How long shutting down waits for running sessions to park at their next
    /// checkpoint. Default 10 s.
    pub park_timeout: Duration,
    /// How long a run's lease on its session lasts unless renewed; it is renewed every
    /// third of it. Default 30 s.
    pub lease_ttl: Duration,
    /// With a run queue: how often a worker tells the queue it still works on a run
    /// (well under the queue's ack wait). Default 5 s.
    pub queue_heartbeat: Duration,
    /// With a run queue: how many times a run may be handed out before it goes to the
    /// dead letters (and its session fails). Default 5.
    pub max_deliveries: u64,
    /// With a run queue: how often this instance sweeps for unfinished sessions whose
    /// run the queue lost (a purged stream), and how long a session must have been
    /// untouched to be queued again ([`AgentServer::sweep_run_queue`]). Default 60 s.
    pub queue_sweep_interval: Duration,
    /// With a run queue: the most runs this instance's worker keeps live at once (a run
    /// waiting at a gate counts); at the limit it takes no run from the queue, leaving it
    /// to other instances. `None` (the default): no limit.
    pub max_concurrent_runs: Option<usize>,
    /// The most sessions this instance runs at once (a session waiting at a gate counts
    /// until it ends). A start beyond it is refused with 503 and `retry-after`; sessions a
    /// restart resumes are not refused. With a run queue a start only queues its run, and
    /// [`max_concurrent_runs`](Self::max_concurrent_runs) bounds what this instance takes
    /// from the queue. `None`: no limit. Default 10,000.
    pub max_live_sessions: Option<usize>,
    /// The most event streams one session may have open at once on this instance; one
    /// more is refused with 503 and `retry-after`. Default 16.
    pub max_streams_per_session: usize,
    /// The most sessions one tenant may have running at once among those started on this
    /// instance (a session waiting at a gate counts until it ends); one more start is
    /// refused with 429 `tenant_session_limit` and `retry-after`. `None`: no limit.
    /// Default 1,000.
    pub max_sessions_per_tenant: Option<usize>,
    /// The largest gate answer taken, as JSON (a bigger one is refused with 413
    /// `answer_too_large`). Default 64 KiB.
    pub max_answer_bytes: usize,
    /// The largest product event stored, as JSON: a bigger one is stored as an
    /// `event_too_large` event naming its type and size, so its stream shows the gap.
    /// Default 256 KiB.
    pub max_event_bytes: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_body_bytes: 1024 * 1024,
            keep_alive: Duration::from_secs(15),
            max_resume_attempts: 3,
            park_timeout: Duration::from_secs(10),
            lease_ttl: Duration::from_secs(30),
            queue_heartbeat: Duration::from_secs(5),
            max_deliveries: 5,
            queue_sweep_interval: Duration::from_secs(60),
            max_concurrent_runs: None,
            max_live_sessions: Some(10_000),
            max_streams_per_session: 16,
            max_sessions_per_tenant: Some(1_000),
            max_answer_bytes: 64 * 1024,
            max_event_bytes: 256 * 1024,
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
    pub(crate) checkpoints: Arc<dyn CheckpointStore>,
    pub(crate) products: Vec<Arc<dyn Hosted>>,
    /// The owner fields of each product's start request, by product name.
    pub(crate) owner_fields: HashMap<String, OwnerFields>,
    /// Who may call (every route but the OpenAPI documents and the page).
    pub(crate) auth: Auth,
    pub(crate) config: ServerConfig,
    pub(crate) live: Arc<LiveMap>,
    /// Set once the server shuts down: it starts no run any more.
    pub(crate) shutting_down: Arc<AtomicBool>,
    /// Who runs which session (one instance at a time).
    pub(crate) leases: Arc<dyn SessionLeases>,
    /// Where stored events go to the streams that follow them.
    pub(crate) fanout: Arc<dyn EventFanout>,
    /// How a request reaches the instance that runs a session.
    pub(crate) control: Arc<dyn SessionControl>,
    /// Where started sessions' runs wait for a worker; `None`: they run where they
    /// start.
    pub(crate) run_queue: Option<Arc<dyn RunQueue>>,
    /// This instance, as a lease holder.
    pub(crate) instance: String,
    /// The OpenAI-compatible front of a conversational product, if one is served.
    pub(crate) chat: Option<crate::chat::ChatFront>,
    /// The MCP front at `/mcp`, when there is one.
    #[cfg(feature = "mcp")]
    pub(crate) mcp: Option<crate::mcp::McpFront>,
    /// What `GET /metrics` serves, when it is served.
    pub(crate) metrics: Option<crate::prometheus::MetricsHandle>,
    /// The agent bus of each session run here.
    pub(crate) buses: SessionBuses,
    /// Every task the server starts (a session's run, writer and lease, the worker, a
    /// streamed chat turn): shutting down waits for them.
    pub(crate) tasks: TaskTracker,
    /// One permit per session started here and still running
    /// ([`ServerConfig::max_live_sessions`]).
    pub(crate) session_slots: Arc<Semaphore>,
    /// The event streams open on this instance, by session.
    pub(crate) streams: Arc<CountedSlots>,
    /// The sessions started and running on this instance, by tenant
    /// ([`ServerConfig::max_sessions_per_tenant`]).
    pub(crate) tenant_sessions: Arc<CountedSlots>,
    /// Sessions whose run their store failed, waiting here to be taken up again: an
    /// answer to one of their gates is kept in the store for that run.
    pub(crate) retaking: Arc<Mutex<HashSet<String>>>,
}

/// How many of something each key holds at once (a session's event streams, a tenant's
/// live sessions), each held by a [`CountedSlot`].
#[derive(Default)]
pub(crate) struct CountedSlots(Mutex<HashMap<String, usize>>);

impl CountedSlots {
    /// A slot for one more of `key`'s, unless it holds `max` already.
    pub(crate) fn open(self: &Arc<Self>, key: &str, max: usize) -> Option<CountedSlot> {
        let mut open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(key.to_owned()).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(CountedSlot {
            counts: Arc::clone(self),
            key: key.to_owned(),
        })
    }
}

/// One of a key's: counted until dropped.
pub(crate) struct CountedSlot {
    counts: Arc<CountedSlots>,
    key: String,
}

impl Drop for CountedSlot {
    fn drop(&mut self) {
        let mut open = self.counts.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// The permits of [`ServerConfig::max_live_sessions`].
fn session_slots(config: &ServerConfig) -> Arc<Semaphore> {
    let permits = config
        .max_live_sessions
        .unwrap_or(Semaphore::MAX_PERMITS)
        .min(Semaphore::MAX_PERMITS);
    Arc::new(Semaphore::new(permits))
}

/// Makes the agent bus of a session, given its id: in process by default
/// ([`InMemoryBus`]); NATS JetStream or Redis Streams for a deployment of several
/// instances ([`AgentServer::with_buses`]).
pub type SessionBuses = Arc<dyn Fn(&str) -> Arc<dyn AgentBus> + Send + Sync>;

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

impl AgentServer {
    /// A server keeping its sessions in `store`, with no product yet. Runs checkpoint in
    /// the store's own checkpoint store when it has one
    /// ([`SessionStore::checkpoint_store`]: SQLite, PostgreSQL), else in memory until
    /// [`with_checkpoints`](Self::with_checkpoints) gives a durable store.
    pub fn new(store: Arc<dyn SessionStore>) -> Self {
        // The store's own checkpoints when it has them: runs resume with their sessions.
        let checkpoints = store
            .checkpoint_store()
            .unwrap_or_else(|| Arc::new(InMemoryCheckpointStore::new()));
        AgentServer {
            inner: Arc::new(Inner {
                store,
                checkpoints,
                products: Vec::new(),
                owner_fields: HashMap::new(),
                auth: Auth::open(),
                config: ServerConfig::default(),
                live: Arc::default(),
                shutting_down: Arc::default(),
                leases: Arc::new(InProcessLeases::default()),
                fanout: Arc::new(InProcessFanout::default()),
                control: Arc::new(InProcessControl::default()),
                run_queue: None,
                instance: uuid::Uuid::new_v4().to_string(),
                chat: None,
                #[cfg(feature = "mcp")]
                mcp: None,
                metrics: None,
                buses: Arc::new(|_| Arc::new(InMemoryBus::new())),
                tasks: TaskTracker::new(),
                session_slots: session_slots(&ServerConfig::default()),
                streams: Arc::default(),
                tenant_sessions: Arc::default(),
                retaking: Arc::default(),
            }),
        }
    }

    /// Hosts `product` under `/api/{product.name()}/...`. A product with the name of one
    /// already hosted replaces it.
    pub fn with_product<P: Product>(self, product: Arc<P>) -> Self {
        let product: Arc<dyn Hosted> = product;
        let mut inner = Arc::unwrap_or_clone(self.inner);
        inner
            .owner_fields
            .insert(product.name().to_owned(), product.owner_fields());
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

    /// Keeps the products' run checkpoints in `checkpoints` (with the SQLite backend, the
    /// same database file as the sessions), so a restarted server resumes each unfinished
    /// run at its last checkpoint ([`SessionHandle::checkpoints`]).
    pub fn with_checkpoints(self, checkpoints: Arc<dyn CheckpointStore>) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        inner.checkpoints = checkpoints;
        AgentServer {
            inner: Arc::new(inner),
        }
    }

    /// Gives each session's agents the bus `buses` makes for its id
    /// ([`SessionHandle::session`] wires it in), instead of one in process: with several
    /// instances, agents' messages travel where the deployment's other state does
    /// (`agent_backends::NatsBus::new(client, session)` on NATS JetStream,
    /// `RedisBus` on Redis Streams).
    ///
    /// ```
    /// use agent_runtime::bus::{AgentBus, InMemoryBus};
    /// use agent_server::{AgentServer, InMemorySessionStore};
    /// use std::sync::Arc;
    /// let server = AgentServer::new(Arc::new(InMemorySessionStore::new()))
    ///     .with_buses(Arc::new(|_session: &str| Arc::new(InMemoryBus::new()) as Arc<dyn AgentBus>));
    /// # let _ = server;
    /// ```
    pub fn with_buses(self, buses: SessionBuses) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        inner.buses = buses;
        AgentServer {
            inner: Arc::new(inner),
        }
    }

    /// Uses these leases to decide which instance runs a session (in-process by default;
    /// several instances share one implementation on their coordination service).
    pub fn with_leases(self, leases: Arc<dyn SessionLeases>) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        inner.leases = leases;
        AgentServer {
            inner: Arc::new(inner),
        }
    }

    /// Uses this fan-out to carry stored events to the streams (in-process by default).
    pub fn with_fanout(self, fanout: Arc<dyn EventFanout>) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        inner.fanout = fanout;
        AgentServer {
            inner: Arc::new(inner),
        }
    }

    /// Uses this control to reach the instance that runs a session (in-process by
    /// default): a gate's answer or a cancellation taken by an instance that does not run
    /// the session is passed to the one that does.
    pub fn with_control(self, control: Arc<dyn SessionControl>) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        inner.control = control;
        AgentServer {
            inner: Arc::new(inner),
        }
    }

    /// Queues started sessions' runs in `queue` instead of running them where they
    /// start: the workers of every instance ([`serve_until`](Self::serve_until) starts
    /// this one's, or [`run_worker`](Self::run_worker)) take them, and a run whose
    /// instance dies goes to another.
    pub fn with_run_queue(self, queue: Arc<dyn RunQueue>) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        inner.run_queue = Some(queue);
        AgentServer {
            inner: Arc::new(inner),
        }
    }

    /// Lets in only the callers `auth` accepts, on every route but the OpenAPI documents
    /// and the page (and the chat front's, when it has none of its own): see
    /// [`auth`](crate::auth). [`Auth::open`] by default, for a server on loopback.
    pub fn with_auth(self, auth: Auth) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        inner.auth = auth;
        AgentServer {
            inner: Arc::new(inner),
        }
    }

    /// Binds a listener where the operator asked, or on loopback when the server accepts
    /// every caller ([`Auth::bind_address`]).
    pub async fn listen(&self, requested: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
        tokio::net::TcpListener::bind(self.inner.auth.bind_address(requested)).await
    }

    /// Sets the limits and timings.
    pub fn with_config(self, config: ServerConfig) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        inner.session_slots = session_slots(&config);
        inner.config = config;
        AgentServer {
            inner: Arc::new(inner),
        }
    }

    /// Also serves `front`'s OpenAI-compatible routes (`/v1/chat/completions`,
    /// `/v1/models`) beside the products' routes, behind the server's auth layer: when
    /// that is open, the front's own ([`ChatFront::with_api_keys`]) becomes the server's.
    ///
    /// [`ChatFront::with_api_keys`]: crate::chat::ChatFront::with_api_keys
    pub fn with_chat(self, front: crate::chat::ChatFront) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        if inner.auth.is_open() {
            inner.auth = front.auth.clone();
        }
        inner.chat = Some(front.with_tasks(inner.tasks.clone()));
        AgentServer {
            inner: Arc::new(inner),
        }
    }

    /// Serves the process's metrics at `GET /metrics` (Prometheus text format), behind
    /// the server's auth layer like every product route. See [`crate::prometheus`].
    pub fn with_metrics(self, metrics: crate::prometheus::MetricsHandle) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        inner.metrics = Some(metrics);
        AgentServer {
            inner: Arc::new(inner),
        }
    }

    /// Serves the MCP front at `/mcp` (streamable HTTP), behind the server's auth layer
    /// like every route. See [`crate::mcp`].
    #[cfg(feature = "mcp")]
    pub fn with_mcp(self, front: crate::mcp::McpFront) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        inner.mcp = Some(front);
        AgentServer {
            inner: Arc::new(inner),
        }
    }

    /// Serves [`router`](Self::router) on `listener` until the listener fails.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        self.serve_until(listener, std::future::pending()).await
    }

    /// Serves until `shutdown` resolves (Ctrl-C, SIGTERM), then shuts down gracefully:
    /// stops accepting connections, parks every running session at its next checkpoint
    /// (it resumes at the next start; its gates stay pending), flushes their events, and
    /// waits (at most [`ServerConfig::park_timeout`]) for every task it started to end.
    pub async fn serve_until(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let address = listener.local_addr()?;
        if self.inner.auth.is_open() && !address.ip().is_loopback() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "refusing to serve on {address}: without AGENT_API_KEYS or a JWT key the server accepts anyone, so it serves on loopback only"
                ),
            ));
        }
        tracing::info!(%address, open = self.inner.auth.is_open(), "agent server listening");
        let tasks = self.inner.tasks.clone();
        let worker = self.inner.run_queue.is_some().then(|| {
            let server = self.clone();
            tasks.spawn(async move {
                // The sweep ends with the worker.
                tokio::select! {
                    worked = server.run_worker() => if let Err(error) = worked {
                        tracing::error!(%error, "the run queue's worker stopped");
                    },
                    () = server.sweep_run_queue_every_interval() => {}
                }
            })
        });
        let stop = CancellationToken::new();
        let stopping = stop.clone();
        let server = self.clone();
        let parked = tasks.spawn(async move {
            shutdown.await;
            tracing::info!("shutting down: parking running sessions");
            // MCP clients' open streams end, or the graceful shutdown would wait for them.
            #[cfg(feature = "mcp")]
            if let Some(front) = &server.inner.mcp {
                front.stop();
            }
            server.park_all().await;
            stopping.cancel();
        });
        // Each connection gets a clone of one router made ready once (an `Arc`): served
        // as a `Router`, axum would make every route ready again for each connection,
        // about 11 KiB of routes per open event stream.
        let app = self.router().with_state(()).into_make_service();
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
        parked.abort();
        if let Some(worker) = worker {
            worker.abort();
        }
        tasks.close();
        if tokio::time::timeout(self.inner.config.park_timeout, tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                left = tasks.len(),
                "some of the server's tasks did not end in time"
            );
        }
        served
    }

    /// Parks every running session: its run stops at its next checkpoint and its events
    /// are flushed; nothing is finished, so [`resume_unfinished`](Self::resume_unfinished)
    /// continues it at the next start. Waits at most [`ServerConfig::park_timeout`].
    pub async fn park_all(&self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        let live: Vec<Arc<LiveSession>> = self.inner.live.lock().values().cloned().collect();
        for session in &live {
            session.park();
        }
        let ended = futures::future::join_all(live.iter().map(|s| s.ended.cancelled()));
        if tokio::time::timeout(self.inner.config.park_timeout, ended)
            .await
            .is_err()
        {
            tracing::warn!("some sessions did not park in time");
        }
    }

    /// Cancels a session for its user: the run is stopped, its gates are closed, and the
    /// session ends `cancelled` with a `session_cancelled` event. Waits (at most a few
    /// seconds) until that is written. Returns whether the session was running here.
    pub(crate) async fn cancel(&self, id: &str, reason: &str) -> bool {
        let Some(live) = self.inner.live.get(id) else {
            return false;
        };
        *live.cancelled.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason.to_owned());
        live.cancel.cancel();
        if tokio::time::timeout(Duration::from_secs(5), live.ended.cancelled())
            .await
            .is_err()
        {
            tracing::warn!(session = id, "the cancelled run has not ended yet");
        }
        true
    }

    pub(crate) fn product(&self, name: &str) -> Option<&Arc<dyn Hosted>> {
        self.inner.products.iter().find(|p| p.name() == name)
    }
}
