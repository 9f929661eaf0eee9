//! The job-agent chat live against the real small model this machine runs (see
//! `support::local_model`), searches replayed from the recorded SerpAPI bodies: a
//! conversation that searches, saves and ranks, and prepares an application, each turn
//! answered or refused with a clear message, never a hang or a 500. The model's judgement
//! is not checked: which tools a 1.5B model calls varies.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::examples::job_chat_server_with;
use support::local_model::local_model;

#[tokio::test(flavor = "multi_thread")]
async fn a_live_conversation_answers_every_turn_or_says_why() {
    let model = local_model();
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("chat.db");
    let server = job_chat_server_with(
        &[
            "--replay-search",
            "--embeddings",
            "hashed",
            "--turn-seconds",
            "240",
            "--max-rounds",
            "4",
            "--db",
            db_path.to_str().unwrap(),
        ],
        &model.env,
    );
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(420))
        .build()
        .unwrap();
    let turns = [
        "Search for rust backend engineer jobs in Berlin.",
        "Save job j6708c6e80b, then rank my saved jobs. My skills are Rust, PostgreSQL and Kafka.",
        "Prepare an application for job j6708c6e80b.",
    ];
    let mut answered = 0;
    for said in turns {
        let started = Instant::now();
        let response = client
            .post(format!("{}/chat/completions", server.url))
            .header("X-Conversation-Id", "live-1")
            .json(&json!({"model": "job-agent", "user": "live", "messages": [{"role": "user", "content": said}]}))
            .send()
            .await
            .expect("the server answers within its turn limit");
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        println!("{said}\n  -> {status} in {:?}: {body}", started.elapsed());
        assert_ne!(status, 500, "{body}");
        match status {
            200 => {
                let text = body["choices"][0]["message"]["content"].as_str().unwrap();
                assert!(!text.trim().is_empty(), "{body}");
                assert!(
                    body["usage"]["total_tokens"].as_u64().unwrap() > 0,
                    "{body}"
                );
                answered += 1;
            }
            503 => assert!(
                body["error"]["message"].as_str().unwrap().len() > 10,
                "{body}"
            ),
            other => panic!("unexpected status {other}: {body}"),
        }
    }
    assert!(answered >= 1, "no turn was answered");
    // What the tools did is in the database, under this user only.
    drop(server);
    let store = agent_backends::SqliteSessionStore::open(&db_path)
        .await
        .unwrap();
    let chat = job_agent_chat::ChatStore::new(std::sync::Arc::new(store.documents()));
    let jobs = chat.jobs("live").await.unwrap();
    println!("jobs stored: {}", jobs.len());
    assert!(chat.jobs("someone-else").await.unwrap().is_empty());
}
