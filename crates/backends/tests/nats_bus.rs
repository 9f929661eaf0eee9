//! The agent bus on NATS JetStream (`NATS_URL`, by default `nats://127.0.0.1:4222`;
//! `cargo xtask test` starts it) passes the runtime's bus suite, each case on a session
//! of its own; and two instances share one session. Fails, never skips, when NATS is not
//! there. Every bus made is reset at the end, so the server keeps no test streams.
#![cfg(test)]

use std::sync::Arc;

use agent_backends::NatsBus;
use agent_runtime::bus::AgentBus;

fn url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

/// A session of this test alone.
fn session() -> String {
    format!("test-{}", uuid::Uuid::new_v4())
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
    // The suite resets every bus it made: the server keeps no test sessions.
    agent_runtime::bus::suite::behaves(&|log_cap, held_cap| async move {
        Arc::new(bus(&session()).await.with_limits(log_cap, held_cap)) as Arc<dyn AgentBus>
    })
    .await;
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
