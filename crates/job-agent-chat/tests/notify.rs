//! Every notification channel against a local receiver: Slack and Teams incoming webhooks
//! (a loopback server that checks the Block Kit and Adaptive Card shapes) and email
//! through a real SMTP server (aiosmtpd, `pip install aiosmtpd`); the journal sends a
//! notice once however often a turn is retried, and again after a failed send.
#![cfg(test)]

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
    UserWebhooks, job_match,
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
    let failed = channels
        .deliver(&store, "ada", &notice(None), &UserWebhooks::default())
        .await;
    assert_eq!(outcome(&failed[0]), "failed");
    let Delivery::Failed { error, .. } = &failed[0] else {
        unreachable!()
    };
    assert!(
        error.contains("500") && !error.contains("T000-secret"),
        "{error}"
    );

    *receiver.fail.lock().unwrap() = false;
    let sent = channels
        .deliver(&store, "ada", &notice(None), &UserWebhooks::default())
        .await;
    assert_eq!(outcome(&sent[0]), "delivered");
    let retried = channels
        .deliver(&store, "ada", &notice(None), &UserWebhooks::default())
        .await;
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
    let report = channels
        .deliver(&store(), "ada", &notice(None), &UserWebhooks::default())
        .await;
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

    let skipped = channels
        .deliver(&store, "ada", &notice(None), &UserWebhooks::default())
        .await;
    assert_eq!(outcome(&skipped[0]), "skipped", "no address, no mail");

    let sent = channels
        .deliver(
            &store,
            "ada",
            &notice(Some("ada@example.com")),
            &UserWebhooks::default(),
        )
        .await;
    assert_eq!(outcome(&sent[0]), "delivered", "{sent:?}");
    let again = channels
        .deliver(
            &store,
            "ada",
            &notice(Some("ada@example.com")),
            &UserWebhooks::default(),
        )
        .await;
    assert_eq!(outcome(&again[0]), "already_sent");

    let messages = smtp.messages();
    assert_eq!(messages.len(), 1, "one email, however often the turn ran");
    assert!(messages[0].contains("Subject: 1 job matches for you"));
    assert!(messages[0].contains("To: ada@example.com"));
    assert!(messages[0].contains("Tidewater Payments"));
}

/// Two users of one server at once, each with their own Slack webhook (a local
/// receiver each): each user's matches reach their own channel and nobody else's; a
/// user without one gets no Slack message, and the deployment has none to fall back on.
#[tokio::test]
async fn each_user_s_matches_go_to_their_own_webhook_only() {
    let (ada_url, ada_hook) = webhook().await;
    let (bob_url, bob_hook) = webhook().await;
    let channels = Notifications::new()
        .with(Arc::new(ConsoleNotifier))
        .with_loopback_webhooks();
    let store = store();
    let ada = UserWebhooks {
        slack: Some(ada_url),
        teams: None,
    };
    let bob = UserWebhooks {
        slack: Some(bob_url),
        teams: None,
    };
    let (notice, nothing) = (notice(None), UserWebhooks::default());
    let (for_ada, for_bob, for_cy) = tokio::join!(
        channels.deliver(&store, "ada", &notice, &ada),
        channels.deliver(&store, "bob", &notice, &bob),
        channels.deliver(&store, "cy", &notice, &nothing),
    );
    let channel_names = |report: &[Delivery]| -> Vec<(String, &'static str)> {
        report
            .iter()
            .map(|d| {
                let name = match d {
                    Delivery::Delivered { channel, .. }
                    | Delivery::AlreadySent { channel, .. }
                    | Delivery::Skipped { channel, .. }
                    | Delivery::Failed { channel, .. } => channel.clone(),
                };
                (name, outcome(d))
            })
            .collect()
    };
    let both = vec![
        ("console".to_owned(), "delivered"),
        ("slack".to_owned(), "delivered"),
    ];
    assert_eq!(channel_names(&for_ada), both);
    assert_eq!(channel_names(&for_bob), both);
    assert_eq!(
        channel_names(&for_cy),
        [("console".to_owned(), "delivered")]
    );
    assert_eq!(ada_hook.bodies.lock().unwrap().len(), 1);
    assert_eq!(bob_hook.bodies.lock().unwrap().len(), 1);
}

/// A webhook a user hands in is refused unless it is http(s) to a public address; a
/// loopback receiver only where the deployment allows it (tests, local demos).
#[tokio::test]
async fn a_user_webhook_to_a_private_address_is_refused_without_repeating_it() {
    let guarded = Notifications::new();
    for url in [
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.7/hook/T000-secret",
        "http://127.0.0.1:9/hook/T000-secret",
        "file:///etc/passwd",
    ] {
        let error = guarded.check_webhook(url).unwrap_err().to_string();
        assert!(
            error.contains("refused") && !error.contains("T000-secret"),
            "{url}: {error}"
        );
    }
    assert!(
        guarded
            .check_webhook("https://hooks.slack.com/services/T0/B0/x")
            .is_ok()
    );
    assert!(
        Notifications::new()
            .with_loopback_webhooks()
            .check_webhook("http://127.0.0.1:9/hook")
            .is_ok()
    );
    // Sending to one refused is a failed delivery, never a request to it.
    let report = guarded
        .deliver(
            &store(),
            "ada",
            &notice(None),
            &UserWebhooks {
                slack: Some("http://10.0.0.7/hook".into()),
                teams: None,
            },
        )
        .await;
    assert_eq!(outcome(&report[0]), "failed");
}
