//! The template product (`embed_runtime`), as a user runs it: a session started over HTTP,
//! the server killed with SIGKILL between two rounds of its agent, started again on the
//! same SQLite file, and the session finished there with every event once and no tool run
//! twice.

#![cfg(test)]

mod support;

use std::time::Duration;

use agent_server::testing::{SseEvent, SseReader};
use serde_json::{Value, json};
use support::examples::{Server, embed_runtime_server};

/// Long enough for the test to see the first round's event and kill the server while the
/// second round's model call is in flight.
const LATENCY_MS: u64 = 700;

struct Session {
    base: String,
    id: String,
    token: String,
}

impl Session {
    async fn start(server: &Server) -> Session {
        let response = reqwest::Client::new()
            .post(format!("{}/api/letter/start", server.url))
            .json(&json!({"company": "Acme Pay"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        let body: Value = response.json().await.unwrap();
        Session {
            base: server.url.clone(),
            id: body["session_id"].as_str().unwrap().to_owned(),
            token: body["token"].as_str().unwrap().to_owned(),
        }
    }

    async fn stream(&self) -> SseReader {
        let response = reqwest::Client::new()
            .get(format!("{}/api/letter/{}/stream", self.base, self.id))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        SseReader::new(response).with_patience(Duration::from_secs(30))
    }

    async fn answer(&self, gate: &str, approve: bool) {
        let response = reqwest::Client::new()
            .post(format!("{}/api/letter/respond", self.base))
            .bearer_auth(&self.token)
            .json(&json!({"session_id": self.id, "gate": gate, "answer": {"approve": approve}}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    }
}

fn opened_gate(events: &[SseEvent]) -> String {
    let opened = events.last().unwrap();
    assert_eq!(opened.event, "gate_open");
    assert_eq!(opened.data["payload"]["draft"], "Hello!");
    opened.data["gate_id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_template_killed_between_rounds_resumes_with_no_tool_run_twice() {
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("letters.db");
    let first = embed_runtime_server(&db, LATENCY_MS);
    let session = Session::start(&first).await;
    // The first round's tool ran; the second round's model call is in flight.
    let seen = session.stream().await.until("drafted").await;
    assert_eq!(
        seen.last().unwrap().data,
        json!({"type": "drafted", "revision": 1})
    );
    first.kill();

    let second = embed_runtime_server(&db, LATENCY_MS);
    let session = Session {
        base: second.url.clone(),
        ..session
    };
    let mut stream = session.stream().await;
    let gate = opened_gate(&stream.until("gate_open").await);
    session.answer(&gate, false).await;
    let gate = opened_gate(&stream.until("gate_open").await);
    session.answer(&gate, true).await;
    stream.until("session_complete").await;

    let all = session.stream().await.rest().await;
    let ids: Vec<u64> = all.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=all.len() as u64).collect::<Vec<_>>(), "{all:?}");
    let drafted: Vec<&Value> = all
        .iter()
        .filter(|e| e.event == "drafted")
        .map(|e| &e.data["revision"])
        .collect();
    assert_eq!(drafted, [&json!(1), &json!(2)], "each draft saved once");
    let result = &all.last().unwrap().data["result"];
    assert_eq!(
        (
            &result["revisions"],
            &result["approved"],
            &result["company"]
        ),
        (&json!(2), &json!(true), &json!("Acme Pay"))
    );
}
