//! The optimizer over real HTTP on agent-server: `POST /api/optimize` and its stream,
//! the 400, 404 and 429 refusals, then interview preparation and a cover letter from the
//! completed optimization.
#![cfg(test)]

mod common;

use std::sync::Arc;

use agent_runtime::documents::InMemoryDocumentStore;
use agent_server::testing::{Started, TestServer};
use agent_server::{AgentServer, InMemorySessionStore};
use jd_optimizer::dry_run;
use jd_optimizer::product::OptimizeProduct;
use serde_json::{Value, json};

async fn server(per_day: Option<u64>) -> TestServer {
    let optimizer = dry_run::optimizer(&common::fixtures()).unwrap();
    let product = OptimizeProduct::new(
        optimizer,
        Arc::new(InMemoryDocumentStore::default()),
        per_day,
    );
    let server = AgentServer::new(Arc::new(InMemorySessionStore::new()))
        .with_product(Arc::new(product.interview_product(false)))
        .with_product(Arc::new(product.interview_product(true)))
        .with_product(Arc::new(product));
    TestServer::spawn(server).await
}

fn sre_body(tenant: &str) -> Value {
    let request = common::pair("senior-sre");
    json!({"tenant_id": tenant, "resume_text": request.resume_text, "jd_text": request.jd_text})
}

async fn post(server: &TestServer, path: &str, body: Value) -> (u16, Value) {
    let response = server
        .client
        .post(server.url(path))
        .json(&body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

fn started(product: &str, body: &Value) -> Started {
    Started {
        product: product.to_owned(),
        id: body["session_id"].as_str().unwrap().to_owned(),
        token: body["token"].as_str().unwrap().to_owned(),
        stream_url: body["stream_url"].as_str().unwrap().to_owned(),
        status_url: body["status_url"].as_str().unwrap().to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_optimization_streams_its_nodes_scores_and_result_then_prepares_an_interview() {
    let server = server(None).await;
    let (status, body) = post(&server, "/api/optimize", sre_body("acme")).await;
    assert_eq!(status, 201, "{body}");
    let optimization = started("optimize", &body);
    let mut stream = server.stream(&optimization, None).await;
    let events = stream.until("session_complete").await;
    let kinds: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"status"));
    assert_eq!(events[0].data["status"], "processing");
    let started_nodes: Vec<&str> = events
        .iter()
        .filter(|e| e.event == "node_started")
        .map(|e| e.data["node"].as_str().unwrap())
        .collect();
    assert_eq!(
        started_nodes,
        [
            "jd_analysis",
            "resume_retrieval",
            "bullet_rewriting",
            "ats_scoring",
            "gap_analysis",
            "result_aggregation"
        ]
    );
    assert!(kinds.contains(&"scored"));
    let completed = events
        .iter()
        .find(|e| e.event == "optimization_completed")
        .unwrap();
    let tokens = completed.data["tokens_used"].as_u64().unwrap();
    assert!(tokens > 0);
    let statuses: Vec<&Value> = events
        .iter()
        .filter(|e| e.event == "status")
        .map(|e| &e.data["status"])
        .collect();
    assert_eq!(statuses, ["processing", "completed"]);
    let result = &events.last().unwrap().data["result"];
    assert_eq!(result["total_tokens_used"].as_u64(), Some(tokens));
    assert_eq!(server.status(&optimization).await["status"], "complete");

    // Interview preparation from the completed optimization, with a letter.
    let (status, body) = post(
        &server,
        "/api/interview-prep",
        json!({"session_id": optimization.id, "tenant_id": "acme", "cover_letter": true, "tone": "formal"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let prep = started("interview-prep", &body);
    let events = server
        .stream(&prep, None)
        .await
        .until("session_complete")
        .await;
    let output = &events.last().unwrap().data["result"];
    assert_eq!(output["questions"].as_array().unwrap().len(), 10);
    let words = output["cover_letter"]["words"].as_u64().unwrap();
    assert!((250..=400).contains(&words));

    // A letter alone, same session and tone: from the cache.
    let (status, body) = post(
        &server,
        "/api/cover-letter",
        json!({"session_id": optimization.id, "tenant_id": "acme", "tone": "formal"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let letter = started("cover-letter", &body);
    let events = server
        .stream(&letter, None)
        .await
        .until("session_complete")
        .await;
    let output = &events.last().unwrap().data["result"];
    assert_eq!(output["cached"], true);
    assert_eq!(output["questions"], json!([]));

    // Another tenant does not see the optimization.
    let (status, body) = post(
        &server,
        "/api/interview-prep",
        json!({"session_id": optimization.id, "tenant_id": "globex"}),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_description_that_cannot_be_analysed_is_400_before_any_session() {
    let server = server(None).await;
    let mut body = sre_body("acme");
    body["jd_text"] = json!("Rust dev");
    let (status, body) = post(&server, "/api/optimize", body).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "refused");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too short")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_past_its_daily_quota_gets_429_and_others_go_on() {
    let server = server(Some(1)).await;
    let (status, _) = post(&server, "/api/optimize", sre_body("acme")).await;
    assert_eq!(status, 201);
    let (status, body) = post(&server, "/api/optimize", sre_body("acme")).await;
    assert_eq!(status, 429);
    assert_eq!(body["error"]["code"], "quota_exceeded");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("used its 1 optimizations")
    );
    let (status, _) = post(&server, "/api/optimize", sre_body("globex")).await;
    assert_eq!(status, 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_cannot_widen_the_budget_past_the_deployments_ceiling() {
    let server = server(None).await;
    let mut body = sre_body("acme");
    body["config"] = json!({"budget": {"max_tokens": 1_000_000_000u64, "max_calls": 1000, "max_wall_ms": 1_000_000_000u64}});
    let (status, body) = post(&server, "/api/optimize", body).await;
    assert_eq!(status, 201, "{body}");
    let events = server
        .stream(&started("optimize", &body), None)
        .await
        .until("session_complete")
        .await;
    let limits = &events.last().unwrap().data["result"]["budget"]["limits"];
    assert_eq!(
        limits,
        &json!({"max_tokens": 7000, "max_calls": 6, "max_wall_ms": 55000})
    );
}
