//! Every notification channel against a local receiver: Slack and Teams incoming webhooks
//! (a loopback server that checks the Block Kit and Adaptive Card shapes) and email
//! through a real SMTP server (aiosmtpd, `pip install aiosmtpd`); the journal sends a
//! notice once however often a turn is retried, and again after a failed send.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use agent_runtime::documents::InMemoryDocumentStore;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use chrono::Utc;
use job_agent_chat::ChatStore;
use job_agent_chat::models::{Job, JobStatus};
use job_agent_chat::notify::{
    ConsoleNotifier, Delivery, EmailNotifier, Notice, Notifications, SlackNotifier, TeamsNotifier,
    job_match,
};
use job_capabilities::mail::SmtpMailer;
use job_capabilities::mail::testing::SmtpServer;
use serde_json::Value;

fn notice(email: Option<&str>) -> Notice {
    let job = Job {
        id: "j1".into(),
        title: "Senior Backend Engineer (Rust)".into(),
        company: "Tidewater Payments".into(),
        location: "Berlin, Germany".into(),
        remote: false,
        description: String::new(),
        requirements: vec![],
        salary_text: "€75K–€95K a year".into(),
        url: "https://careers.tidewater.example/jobs/rust-1".into(),
        source: "test".into(),
        posted: String::new(),
        status: JobStatus::Saved,
        found_at: Utc::now(),
    };
    Notice {
        title: "1 job matches for you".into(),
        matches: vec![job_match(
            &job,
            0.82,
            "Rust, PostgreSQL and Kafka match".into(),
        )],
        email_to: email.map(str::to_owned),
    }
}

/// A webhook receiver: records bodies, answers with `status` (shared, changeable).
#[derive(Clone, Default)]
struct Receiver {
    bodies: Arc<Mutex<Vec<Value>>>,
    fail: Arc<Mutex<bool>>,
}

async fn receive(
    State(receiver): State<Receiver>,
    Json(body): Json<Value>,
) -> (StatusCode, &'static str) {
    receiver.bodies.lock().unwrap().push(body);
    if *receiver.fail.lock().unwrap() {
        (StatusCode::INTERNAL_SERVER_ERROR, "boom")
    } else {
        (StatusCode::OK, "ok")
    }
}

async fn webhook() -> (String, Receiver) {
    let receiver = Receiver::default();
    let app = axum::Router::new()
        .route("/hook/{secret}", post(receive))
        .with_state(receiver.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook/T000-secret", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, receiver)
}

fn store() -> ChatStore {
    ChatStore::new(Arc::new(InMemoryDocumentStore::default()))
}

fn outcome(delivery: &Delivery) -> &'static str {
    match delivery {
        Delivery::Delivered { .. } => "delivered",
        Delivery::AlreadySent { .. } => "already_sent",
        Delivery::Skipped { .. } => "skipped",
        Delivery::Failed { .. } => "failed",
    }
}

#[tokio::test]
async fn slack_gets_block_kit_once_and_again_after_a_failure() {
    let (url, receiver) = webhook().await;
    let channels = Notifications::new().with(Arc::new(SlackNotifier::new(url)));
    let store = store();

    *receiver.fail.lock().unwrap() = true;
    let failed = channels.deliver(&store, "ada", &notice(None)).await;
    assert_eq!(outcome(&failed[0]), "failed");
    let Delivery::Failed { error, .. } = &failed[0] else {
        unreachable!()
    };
    assert!(
        error.contains("500") && !error.contains("T000-secret"),
        "{error}"
    );

    *receiver.fail.lock().unwrap() = false;
    let sent = channels.deliver(&store, "ada", &notice(None)).await;
    assert_eq!(outcome(&sent[0]), "delivered");
    let retried = channels.deliver(&store, "ada", &notice(None)).await;
    assert_eq!(
        outcome(&retried[0]),
        "already_sent",
        "a retried turn sends nothing"
    );

    let bodies = receiver.bodies.lock().unwrap();
    assert_eq!(
        bodies.len(),
        2,
        "the failed send and the one that went through"
    );
    let body = &bodies[1];
    assert!(
        body["text"]
            .as_str()
            .unwrap()
            .contains("Tidewater Payments")
    );
    let blocks = body["blocks"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "header");
    assert_eq!(blocks[0]["text"]["type"], "plain_text");
    assert_eq!(blocks[1]["type"], "section");
    assert_eq!(blocks[1]["text"]["type"], "mrkdwn");
    assert!(blocks[1]["text"]["text"].as_str().unwrap().starts_with(
        "*<https://careers.tidewater.example/jobs/rust-1|Senior Backend Engineer (Rust)>*"
    ));
    for block in blocks {
        assert!(["header", "section", "divider"].contains(&block["type"].as_str().unwrap()));
    }
}

#[tokio::test]
async fn teams_gets_an_adaptive_card() {
    let (url, receiver) = webhook().await;
    let channels = Notifications::new()
        .with(Arc::new(ConsoleNotifier))
        .with(Arc::new(TeamsNotifier::new(url)));
    let report = channels.deliver(&store(), "ada", &notice(None)).await;
    assert_eq!(
        report.iter().map(outcome).collect::<Vec<_>>(),
        ["delivered", "delivered"]
    );

    let bodies = receiver.bodies.lock().unwrap();
    let message = &bodies[0];
    assert_eq!(message["type"], "message");
    let attachment = &message["attachments"][0];
    assert_eq!(
        attachment["contentType"],
        "application/vnd.microsoft.card.adaptive"
    );
    let card = &attachment["content"];
    assert_eq!(card["type"], "AdaptiveCard");
    assert_eq!(
        card["$schema"],
        "http://adaptivecards.io/schemas/adaptive-card.json"
    );
    assert!(card["version"].as_str().unwrap().starts_with("1."));
    let body = card["body"].as_array().unwrap();
    assert_eq!(body[0]["type"], "TextBlock");
    let facts = body.iter().find(|b| b["type"] == "FactSet").unwrap()["facts"]
        .as_array()
        .unwrap();
    for fact in facts {
        assert!(fact["title"].is_string() && fact["value"].is_string());
    }
    assert_eq!(facts[1]["value"], "82%");
}

#[tokio::test]
async fn email_goes_out_once_through_smtp() {
    let smtp = SmtpServer::start();
    let mailer = SmtpMailer::from_url(&smtp.url()).unwrap();
    let channels = Notifications::new().with(Arc::new(EmailNotifier::new(
        Arc::new(mailer),
        "job-agent@localhost",
    )));
    let store = store();

    let skipped = channels.deliver(&store, "ada", &notice(None)).await;
    assert_eq!(outcome(&skipped[0]), "skipped", "no address, no mail");

    let sent = channels
        .deliver(&store, "ada", &notice(Some("ada@example.com")))
        .await;
    assert_eq!(outcome(&sent[0]), "delivered", "{sent:?}");
    let again = channels
        .deliver(&store, "ada", &notice(Some("ada@example.com")))
        .await;
    assert_eq!(outcome(&again[0]), "already_sent");

    let messages = smtp.messages();
    assert_eq!(messages.len(), 1, "one email, however often the turn ran");
    assert!(messages[0].contains("Subject: 1 job matches for you"));
    assert!(messages[0].contains("To: ada@example.com"));
    assert!(messages[0].contains("Tidewater Payments"));
}
