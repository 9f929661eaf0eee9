#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The agent bus on Redis Streams (`REDIS_URL`, by default `redis://127.0.0.1:6379`;
//! `cargo xtask test` starts it) passes the runtime's bus suite, each case on a session
//! of its own; and what only a distributed bus has: two processes' worth of buses on one
//! session, a message held across them, one subscriber for both. Fails, never skips, when
//! Redis is not there. Every bus made is reset at the end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_backends::RedisBus;
use agent_runtime::bus::AgentBus;

fn url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A session of this test run alone.
fn session() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "test-{}-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

async fn bus(session: &str) -> RedisBus {
    RedisBus::connect(&url(), session)
        .await
        .unwrap_or_else(|e| panic!("Redis must run at {} for this suite: {e}", url()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_bus_passes_the_bus_suite() {
    let made: Arc<Mutex<Vec<RedisBus>>> = Arc::default();
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
    // Redis keeps no test sessions.
    let made: Vec<RedisBus> = made.lock().unwrap().drain(..).collect();
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
