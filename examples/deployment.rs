//! The two deployments the server examples run as: one process on a SQLite file, or one of
//! several instances on PostgreSQL and NATS JetStream (`docs/deployment.md`). The
//! products are added by the caller; this wires the stores, leases, fan-out, control,
//! run queue and agent buses.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_backends::{
    JetStreamRunQueue, NatsBus, NatsCoordination, PgSessionStore, SqliteSessionStore,
};
use agent_runtime::bus::AgentBus;
use agent_server::{AgentServer, ServerConfig, SessionBuses};
use anyhow::Context as _;

/// One instance of a deployment on PostgreSQL and NATS JetStream.
#[derive(Debug, Clone)]
pub struct ScaleOut {
    /// `postgres://user@host:port/db`.
    pub database: String,
    /// `nats://host:port`.
    pub nats_url: String,
    /// The PostgreSQL schema of the deployment (created if missing); `None`: the
    /// connection's.
    pub schema: Option<String>,
    /// The NATS subject prefix of the deployment.
    pub nats_prefix: String,
    /// How long an instance that stops answering keeps its sessions (their lease, and the
    /// queue's ack wait) before another takes them over.
    pub lease: Duration,
    /// The most sessions this instance runs at once; `None`: no limit.
    pub max_runs: Option<usize>,
}

impl ScaleOut {
    /// `DATABASE_URL` and `NATS_URL` (default `nats://127.0.0.1:4222`) from the
    /// environment, the connection's schema, prefix `agent`, 30 s leases, no run limit.
    pub fn from_env() -> anyhow::Result<Self> {
        let database = std::env::var("DATABASE_URL")
            .context("--backend postgres+nats needs DATABASE_URL (postgres://user@host:port/db)")?;
        let nats_url = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
        Ok(ScaleOut {
            database,
            nats_url,
            schema: None,
            nats_prefix: "agent".to_owned(),
            lease: Duration::from_secs(30),
            max_runs: None,
        })
    }

    /// Where the deployment keeps its state, for the first lines a server prints.
    pub fn describe(&self) -> String {
        let schema = self.schema.as_deref().unwrap_or("default schema");
        format!(
            "PostgreSQL ({schema}), NATS {} (prefix {})",
            self.nats_url, self.nats_prefix
        )
    }

    /// A server on this deployment, with no product yet, and its session store (whose
    /// documents a product may keep beside the sessions).
    pub async fn server(&self) -> anyhow::Result<(AgentServer, PgSessionStore)> {
        let store = match &self.schema {
            Some(schema) => PgSessionStore::connect_in_schema(&self.database, schema).await,
            None => PgSessionStore::connect(&self.database).await,
        }
        .context("connecting to PostgreSQL")?;
        let nats = NatsCoordination::connect_with_prefix(&self.nats_url, &self.nats_prefix)
            .await
            .context("connecting to NATS")?;
        let lease = self.lease.max(Duration::from_secs(1));
        let queue = JetStreamRunQueue::new(&nats, lease)
            .await
            .context("opening the run queue (is JetStream enabled on the NATS server?)")?;
        // The agents of a session talk over JetStream, so a run taken over by another
        // instance finds the messages its agents were sent.
        let client = nats.client().clone();
        let buses: SessionBuses = Arc::new(move |session: &str| {
            Arc::new(NatsBus::new(client.clone(), session)) as Arc<dyn AgentBus>
        });
        let nats = Arc::new(nats);
        let config = ServerConfig {
            lease_ttl: lease,
            queue_heartbeat: lease / 6,
            max_concurrent_runs: self.max_runs,
            ..ServerConfig::default()
        };
        let server = AgentServer::new(Arc::new(store.clone()))
            .with_leases(Arc::new(store.leases()))
            .with_fanout(nats.clone())
            .with_control(nats)
            .with_run_queue(Arc::new(queue))
            .with_buses(buses)
            .with_config(config);
        Ok((server, store))
    }
}

/// A server in one process on the SQLite file at `path`, with no product yet, and its
/// session store.
pub async fn single_process(path: &Path) -> anyhow::Result<(AgentServer, SqliteSessionStore)> {
    let store = SqliteSessionStore::open(path)
        .await
        .with_context(|| format!("opening the session store {}", path.display()))?;
    Ok((AgentServer::new(Arc::new(store.clone())), store))
}

/// A server behind the auth layer, serving its metrics, and the listener it serves on.
pub struct Listening {
    /// The server, behind the auth layer.
    pub server: AgentServer,
    /// Where it serves.
    pub listener: tokio::net::TcpListener,
    /// Set when no credential is configured: the server accepts any local client, on
    /// loopback only. The binary prints it in its banner.
    pub open_notice: Option<&'static str>,
}

/// Puts `server` behind the auth layer the environment describes (`AGENT_API_KEYS`,
/// `CHAT_API_KEYS`, `AGENT_JWT_*`, `AGENT_RATE_LIMIT`, `AGENT_TENANT_RATE_LIMIT`; see
/// `docs/deployment.md`), has it serve the process's metrics at `GET /metrics` (behind the
/// same layer), and binds `host:port` for it: on loopback only when no credential is
/// set, which [`Listening::open_notice`] says.
pub async fn listen_behind_auth(
    server: AgentServer,
    host: &str,
    port: u16,
) -> anyhow::Result<Listening> {
    let auth = agent_server::auth::Auth::from_env().context("reading the auth settings")?;
    let open = auth.is_open();
    let metrics = agent_server::install_prometheus().context("installing the metrics recorder")?;
    let server = server.with_auth(auth).with_metrics(metrics);
    let requested = tokio::net::lookup_host((host, port))
        .await
        .with_context(|| format!("resolving {host}:{port}"))?
        .next()
        .with_context(|| format!("{host}:{port} resolves to no address"))?;
    let listener = server
        .listen(requested)
        .await
        .with_context(|| format!("binding {requested}"))?;
    let open_notice = open.then_some(
        "no AGENT_API_KEYS, CHAT_API_KEYS or JWT key: any local client is accepted, on loopback only",
    );
    Ok(Listening {
        server,
        listener,
        open_notice,
    })
}
