//! The steady workload's product and server: a session that emits a `tick` every
//! `every_ms` milliseconds, stamped with the time it was emitted, so a client measures
//! how long each event took to reach it (store, fan-out, HTTP).

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agent_server::{Product, SessionHandle};
use anyhow::Context as _;
use examples::deployment::{ScaleOut, single_process};
use serde_json::{Value, json};

/// Emits `ticks` events, the first at once, then one every `every_ms`.
pub struct Ticker;

/// A ticker session's start request.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct TickerStart {
    /// How many ticks.
    pub ticks: u32,
    /// Milliseconds between two ticks.
    pub every_ms: u64,
}

/// Microseconds since the Unix epoch: the emit stamp a client compares its clock with.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

#[async_trait::async_trait]
impl Product for Ticker {
    type Start = TickerStart;
    type Event = Value;
    type Output = Value;
    type Error = Infallible;

    fn name(&self) -> &str {
        "ticker"
    }

    async fn run(
        &self,
        handle: SessionHandle<Value>,
        start: TickerStart,
    ) -> Result<Value, Infallible> {
        let mut every = tokio::time::interval(Duration::from_millis(start.every_ms.max(1)));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for n in 0..start.ticks {
            every.tick().await;
            if handle.is_cancelled() {
                break;
            }
            handle.emit(&json!({"type": "tick", "n": n, "at_us": now_us()}));
        }
        Ok(json!({"ticks": start.ticks}))
    }
}

/// Where a ticker server keeps its sessions.
pub enum TickerBackend {
    /// One process on this SQLite file.
    Sqlite(PathBuf),
    /// An instance of a PostgreSQL + NATS deployment.
    ScaleOut(ScaleOut),
}

/// Serves the ticker product on a free loopback port, printing `listening on <url>`, until
/// the process is killed.
pub async fn serve(backend: TickerBackend) -> anyhow::Result<()> {
    let server = match backend {
        TickerBackend::Sqlite(path) => single_process(&path).await?.0,
        TickerBackend::ScaleOut(deployment) => deployment.server().await?.0,
    }
    .with_product(Arc::new(Ticker));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .context("binding a loopback port")?;
    // The bench reads this line to find the server.
    println!("listening on http://{}", listener.local_addr()?);
    server.serve(listener).await?;
    Ok(())
}
