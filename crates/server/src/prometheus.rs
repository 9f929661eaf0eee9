//! Prometheus metrics at `GET /metrics`.
//!
//! [`install_prometheus`] installs the process's metrics recorder (the `metrics` crate's
//! facade, exported by `metrics-exporter-prometheus`) and [`AgentServer::with_metrics`](crate::AgentServer::with_metrics)
//! serves what it holds, in the Prometheus text format, behind the same auth layer as
//! every product route. Besides the runtime's metrics (model calls, tokens and cost by
//! product, model and tier; tool calls; gate waits: see
//! [`agent_runtime::process_metrics`]) the server records its sessions and their
//! events and streams, and the backends record the run queue.
//!
//! ```no_run
//! use agent_runtime::sessions::InMemorySessionStore;
//! use agent_server::{AgentServer, install_prometheus};
//! use std::sync::Arc;
//!
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! let metrics = install_prometheus()?;
//! let server = AgentServer::new(Arc::new(InMemorySessionStore::new())).with_metrics(metrics);
//! let listener = server.listen("127.0.0.1:8080".parse()?).await?;
//! server.serve(listener).await?; // GET /metrics answers
//! # Ok(())
//! # }
//! ```

use std::sync::Mutex;

use agent_runtime::process_metrics::recording;
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};

/// Sessions started here (`product`).
pub const SESSIONS_STARTED: &str = "agent_sessions_started_total";
/// Runs that ended here (`product`, `status`: `complete`, `failed`, `cancelled`,
/// `expired`, `parked`).
pub const SESSIONS_ENDED: &str = "agent_sessions_ended_total";
/// Runs going on here now (`product`).
pub const SESSIONS_RUNNING: &str = "agent_sessions_running";
/// Events stored (`product`).
pub const SESSION_EVENTS: &str = "agent_session_events_total";
/// Server-Sent Events clients connected now (`product`).
pub const SSE_CLIENTS: &str = "agent_sse_clients";

/// The histogram buckets of durations in seconds: from 5 ms to an hour (gates wait for
/// people).
const SECONDS_BUCKETS: [f64; 14] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];

/// The metrics recorder could not be installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// Another metrics recorder was installed in this process first.
    #[error("another metrics recorder is installed in this process; /metrics cannot serve it")]
    RecorderTaken,
    /// The exporter refused its configuration.
    #[error("cannot build the Prometheus exporter: {0}")]
    Build(#[from] BuildError),
}

/// What the process's Prometheus recorder holds; give it to
/// [`AgentServer::with_metrics`](crate::AgentServer::with_metrics).
#[derive(Debug, Clone)]
pub struct MetricsHandle {
    handle: PrometheusHandle,
}

impl MetricsHandle {
    /// Every metric recorded so far, in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        self.handle.run_upkeep();
        self.handle.render()
    }
}

/// Installs the Prometheus recorder as the process's metrics recorder, once: a second
/// call returns the handle of the first.
///
/// # Errors
///
/// [`MetricsError::RecorderTaken`] when something else installed a recorder first.
pub fn install_prometheus() -> Result<MetricsHandle, MetricsError> {
    static INSTALLED: Mutex<Option<MetricsHandle>> = Mutex::new(None);
    let mut installed = INSTALLED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(handle) = installed.as_ref() {
        return Ok(handle.clone());
    }
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), &SECONDS_BUCKETS)?
        .build_recorder();
    let handle = MetricsHandle {
        handle: recorder.handle(),
    };
    metrics::set_global_recorder(recorder).map_err(|_| MetricsError::RecorderTaken)?;
    agent_runtime::process_metrics::start_recording();
    describe();
    *installed = Some(handle.clone());
    Ok(handle)
}

fn describe() {
    metrics::describe_counter!(
        SESSIONS_STARTED,
        "Sessions started on this server, by product."
    );
    metrics::describe_counter!(
        SESSIONS_ENDED,
        "Runs that ended on this server, by product and status (complete, failed, cancelled, expired, parked)."
    );
    metrics::describe_gauge!(
        SESSIONS_RUNNING,
        "Runs going on on this server, by product."
    );
    metrics::describe_counter!(
        SESSION_EVENTS,
        "Session events stored by this server, by product."
    );
    metrics::describe_gauge!(
        SSE_CLIENTS,
        "Server-Sent Events clients connected, by product."
    );
}

/// A session was started.
pub(crate) fn session_started(product: &str) {
    if !recording() {
        return;
    }
    metrics::counter!(SESSIONS_STARTED, "product" => product.to_owned()).increment(1);
}

/// A gauge of `product`, one up while the guard lives (when the process records its
/// metrics).
pub(crate) struct ProductGauge {
    gauge: &'static str,
    /// The product, when the process records its metrics.
    product: Option<String>,
}

impl ProductGauge {
    fn up(gauge: &'static str, product: &str) -> Self {
        if !recording() {
            return ProductGauge {
                gauge,
                product: None,
            };
        }
        metrics::gauge!(gauge, "product" => product.to_owned()).increment(1.0);
        ProductGauge {
            gauge,
            product: Some(product.to_owned()),
        }
    }
}

impl Drop for ProductGauge {
    fn drop(&mut self) {
        if let Some(product) = self.product.take() {
            metrics::gauge!(self.gauge, "product" => product).decrement(1.0);
        }
    }
}

/// A run of `product` goes on until the guard is dropped.
pub(crate) struct RunningSession(ProductGauge);

impl RunningSession {
    pub(crate) fn start(product: &str) -> Self {
        RunningSession(ProductGauge::up(SESSIONS_RUNNING, product))
    }

    /// The run ended as `status`: counted among the ended, and no longer among the
    /// running, at the same time (a scrape never sees it both ended and running for long).
    pub(crate) fn ended(self, status: &'static str) {
        if let Some(product) = &self.0.product {
            metrics::counter!(SESSIONS_ENDED, "product" => product.clone(), "status" => status)
                .increment(1);
        }
    }
}

/// An SSE client of `product`, counted until dropped.
pub(crate) fn sse_client(product: &str) -> ProductGauge {
    ProductGauge::up(SSE_CLIENTS, product)
}

/// `count` events of `product` were stored.
pub(crate) fn events_stored(product: &str, count: u64) {
    if !recording() {
        return;
    }
    metrics::counter!(SESSION_EVENTS, "product" => product.to_owned()).increment(count);
}
