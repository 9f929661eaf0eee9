//! Tenants kept apart over HTTP, on SQLite and on PostgreSQL (`POSTGRES_URL`, else the
//! machine's server; fails without it): an optimization started with tenant A's key
//! cannot be read, streamed, answered, cancelled or used for interview preparation or a
//! cover letter with tenant B's key, and B cannot start one in A's name.
#![cfg(test)]

mod common;

use std::sync::Arc;

use agent_backends::{PgSessionStore, SqliteSessionStore};
use agent_runtime::documents::DocumentStore;
use agent_server::auth::Auth;
use agent_server::testing::{Started, TestServer};
use agent_server::{AgentServer, SessionStore};
use jd_optimizer::dry_run;
use jd_optimizer::product::OptimizeProduct;
use serde_json::{Value, json};
use sqlx::Connection;

const KEYS: &str = "sk-acme:acme:ada, sk-globex:globex:gus";

async fn serve(store: Arc<dyn SessionStore>, documents: Arc<dyn DocumentStore>) -> TestServer {
    let optimizer = dry_run::optimizer(&common::fixtures()).unwrap();
    let product = OptimizeProduct::new(optimizer, documents, None);
    let server = AgentServer::new(store)
        .with_product(Arc::new(product.interview_product(false)))
        .with_product(Arc::new(product.interview_product(true)))
        .with_product(Arc::new(product))
        .with_auth(Auth::open().with_api_keys(KEYS).unwrap());
    TestServer::spawn(server).await
}

async fn call(
    server: &TestServer,
    method: reqwest::Method,
    path: &str,
    key: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = server
        .client
        .request(method, server.url(path))
        .bearer_auth(key);
    if let Some(token) = token {
        request = request.header("x-session-token", token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn tenants_are_apart(server: TestServer) {
    let request = common::pair("senior-sre");
    let body = json!({"resume_text": request.resume_text, "jd_text": request.jd_text});
    let acme = server.with_credential("sk-acme");
    let optimization = acme.start("optimize", body.clone()).await;
    let events = acme
        .stream(&optimization, None)
        .await
        .until("session_complete")
        .await;
    assert_eq!(events.last().unwrap().data["result"]["tenant_id"], "acme");

    use reqwest::Method;
    let Started { id, token, .. } = &optimization;
    for (method, path, body) in [
        (Method::GET, format!("/api/optimize/{id}"), None),
        (Method::GET, format!("/api/optimize/{id}/stream"), None),
        (
            Method::POST,
            "/api/optimize/respond".to_owned(),
            Some(json!({"session_id": id, "gate": "g", "answer": {}})),
        ),
        (Method::POST, format!("/api/optimize/{id}/cancel"), None),
    ] {
        let (status, answer) =
            call(&acme, method.clone(), &path, "sk-globex", Some(token), body).await;
        assert_eq!(status, 404, "{method} {path}: {answer}");
    }
    for product in ["interview-prep", "cover-letter"] {
        let path = format!("/api/{product}/start");
        let start = json!({"session_id": id, "cover_letter": true});
        let (status, answer) = call(
            &acme,
            Method::POST,
            &path,
            "sk-globex",
            None,
            Some(start.clone()),
        )
        .await;
        assert_eq!(status, 404, "{product} for globex: {answer}");
        assert_eq!(answer["error"]["code"], "not_found");
        // Naming acme in the body does not help globex: it is refused outright.
        let mut in_acmes_name = start.clone();
        in_acmes_name["tenant_id"] = json!("acme");
        let (status, answer) = call(
            &acme,
            Method::POST,
            &path,
            "sk-globex",
            None,
            Some(in_acmes_name),
        )
        .await;
        assert_eq!(
            (status, &answer["error"]["field"]),
            (403, &json!("tenant_id"))
        );
    }
    let mut in_acmes_name = body.clone();
    in_acmes_name["tenant_id"] = json!("acme");
    let (status, _) = call(
        &acme,
        Method::POST,
        "/api/optimize/start",
        "sk-globex",
        None,
        Some(in_acmes_name),
    )
    .await;
    assert_eq!(status, 403);

    // Acme itself prepares its interview from it.
    let prep = acme
        .start("interview-prep", json!({"session_id": id}))
        .await;
    let events = acme
        .stream(&prep, None)
        .await
        .until("session_complete")
        .await;
    let questions = events.last().unwrap().data["result"]["questions"].clone();
    assert_eq!(questions.as_array().map(Vec::len), Some(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_are_apart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteSessionStore::open(&dir.path().join("sessions.db"))
        .await
        .unwrap();
    let documents = Arc::new(store.documents());
    tenants_are_apart(serve(Arc::new(store), documents).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_are_apart_on_postgres() {
    let url = std::env::var("POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let schema = format!("jd_tenants_{}", uuid_like());
    let store = PgSessionStore::connect_in_schema(&url, &schema)
        .await
        .unwrap_or_else(|e| {
            panic!("{e}\n(PostgreSQL is not running at {url}: `cargo xtask setup` starts it, or set POSTGRES_URL)")
        });
    let documents = Arc::new(store.documents());
    tenants_are_apart(serve(Arc::new(store.clone()), documents).await).await;
    store.close().await;
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
    sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .execute(&mut conn)
        .await
        .unwrap();
}

/// A name part unique to this process and moment.
fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}_{nanos}", std::process::id())
}
