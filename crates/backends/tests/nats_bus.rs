#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The agent bus on NATS JetStream (`NATS_URL`, by default `nats://127.0.0.1:4222`;
//! `cargo xtask test` starts it) passes the runtime's bus suite, each case on a session
//! of its own; and two instances share one session. Fails, never skips, when NATS is not
//! there. Every bus made is reset at the end, so the server keeps no test streams.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_backends::NatsBus;
use agent_runtime::bus::AgentBus;

fn url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

fn session() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "test-{}-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

async fn bus(session: &str) -> NatsBus {
    NatsBus::connect(&url(), session).await.unwrap_or_else(|e| {
        panic!(
            "NATS with JetStream must run at {} for this suite: {e}",
            url()
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nats_bus_passes_the_bus_suite() {
    let made: Arc<Mutex<Vec<NatsBus>>> = Arc::default();
    let keep = made.clone();
    agent_runtime::bus::suite::behaves(&move |log_cap, held_cap| {
        let keep = keep.clone();
        async move {
            let bus = bus(&session()).await.with_limits(log_cap, held_cap);
            keep.lock().unwrap().push(bus.clone());
            Arc::new(bus) as Arc<dyn AgentBus>
        }
    })
    .await;
    let made: Vec<NatsBus> = made.lock().unwrap().drain(..).collect();
    for bus in made {
        bus.reset().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_session() {
    let session = session();
    agent_runtime::bus::suite::shares_one_session(
        Arc::new(bus(&session).await),
        Arc::new(bus(&session).await),
    )
    .await;
}
