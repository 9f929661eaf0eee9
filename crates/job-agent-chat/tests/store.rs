//! One behaviour suite for the chat's store on SQLite (a file, reopened) and PostgreSQL
//! (`POSTGRES_URL`, else the machine's server; fails without it), and two users chatting
//! at once through the same services who never see each other's records.
#![cfg(test)]

mod common;

use std::sync::Arc;

use agent_backends::{PgSessionStore, SqliteSessionStore};
use agent_llm::testing::dry_run_router;
use agent_runtime::documents::DocumentStore;
use chrono::{Duration, Utc};
use common::{Conversation, fixtures, memory_vectors, services_on};
use job_agent_chat::Claim;
use job_agent_chat::dry_run::recorded_model;
use job_agent_chat::models::{
    ApplicationPackage, Feedback, FeedbackKind, Job, JobStatus, UserProfile,
};
use job_agent_chat::{ChatStore, JobAgentChat};
use sqlx::Connection;

fn job(id: &str, title: &str, minutes_ago: i64) -> Job {
    Job {
        id: id.into(),
        title: title.into(),
        company: "Acme".into(),
        location: "Berlin".into(),
        remote: false,
        description: "Rust services".into(),
        requirements: vec!["Rust".into()],
        salary_text: String::new(),
        url: format!("https://acme.example/{id}"),
        source: "test".into(),
        posted: String::new(),
        status: JobStatus::New,
        found_at: Utc::now() - Duration::minutes(minutes_ago),
    }
}

async fn behaves(documents: Arc<dyn DocumentStore>) {
    let store = ChatStore::new(documents);
    let added = store
        .add_jobs("ada", vec![job("j1", "Old", 10), job("j2", "New", 1)])
        .await
        .unwrap();
    assert_eq!(added.len(), 2);
    let ids: Vec<String> = store
        .jobs("ada")
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(ids, ["j2", "j1"], "newest first");

    // Found again: the newer text, the old status and first-found time.
    let first_found = store.job("ada", "j1").await.unwrap().unwrap().found_at;
    store
        .set_status("ada", "j1", JobStatus::Saved)
        .await
        .unwrap()
        .unwrap();
    let mut again = job("j1", "Old, retitled", 0);
    again.description = "Rust and Go services".into();
    store.add_jobs("ada", vec![again]).await.unwrap();
    let j1 = store.job("ada", "j1").await.unwrap().unwrap();
    assert_eq!(
        (j1.title.as_str(), j1.status),
        ("Old, retitled", JobStatus::Saved)
    );
    assert_eq!(j1.found_at.timestamp(), first_found.timestamp());

    assert!(
        store
            .set_status("ada", "nope", JobStatus::Saved)
            .await
            .unwrap()
            .is_none()
    );
    // Nothing is left behind for a job that is not there (or was deleted meanwhile).
    assert!(store.job("ada", "nope").await.unwrap().is_none());
    let listed = store.jobs("ada").await.unwrap();
    assert!(listed.iter().all(|job| job.id != "nope"), "{listed:?}");
    assert!(store.delete_job("ada", "j2").await.unwrap());
    assert!(!store.delete_job("ada", "j2").await.unwrap());

    assert!(store.profile("ada").await.unwrap().is_none());
    let profile = UserProfile {
        name: "Ada".into(),
        skills: vec!["Rust".into()],
        min_salary: Some(70_000),
        ..UserProfile::default()
    };
    store.save_profile("ada", &profile).await.unwrap();
    assert_eq!(store.profile("ada").await.unwrap(), Some(profile));

    let feedback = |kind| Feedback {
        job_id: "j1".into(),
        company: "Acme".into(),
        kind,
        notes: String::new(),
        at: Utc::now(),
    };
    store
        .add_feedback("ada", &feedback(FeedbackKind::Interested))
        .await
        .unwrap();
    store
        .add_feedback("ada", &feedback(FeedbackKind::PayTooLow))
        .await
        .unwrap();
    let said = store.feedback("ada").await.unwrap();
    assert_eq!(
        said.len(),
        1,
        "the newest feedback on a job replaces the older"
    );
    assert_eq!(said[0].kind, FeedbackKind::PayTooLow);

    for (id, minutes) in [("p1", 5), ("p2", 1)] {
        let package = ApplicationPackage {
            id: id.into(),
            job_id: "j1".into(),
            job_headline: "Old at Acme".into(),
            resume_suggestions: vec![],
            cover_letter: "Dear Acme".into(),
            intro_email: "Hello".into(),
            removed: vec![],
            created_at: Utc::now() - Duration::minutes(minutes),
        };
        store.save_package("ada", &package).await.unwrap();
    }
    let packages: Vec<String> = store
        .packages("ada")
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(packages, ["p2", "p1"]);

    // The notification journal: one claim wins; a failed send releases it.
    let Claim::Ours(_) = store.claim("ada", "notice-1").await.unwrap() else {
        panic!("the first claim is ours");
    };
    assert!(matches!(
        store.claim("ada", "notice-1").await.unwrap(),
        Claim::Taken(_)
    ));
    store.settle("ada", "notice-1", false).await.unwrap();
    assert!(matches!(
        store.claim("ada", "notice-1").await.unwrap(),
        Claim::Ours(_)
    ));
    store.settle("ada", "notice-1", true).await.unwrap();
    assert!(matches!(
        store.claim("ada", "notice-1").await.unwrap(),
        Claim::Taken(_)
    ));
    assert!(matches!(
        store.claim("bob", "notice-1").await.unwrap(),
        Claim::Ours(_)
    ));

    // Nothing of Ada's is Bob's.
    assert!(store.jobs("bob").await.unwrap().is_empty());
    assert!(store.job("bob", "j1").await.unwrap().is_none());
    assert!(store.profile("bob").await.unwrap().is_none());
    assert!(store.feedback("bob").await.unwrap().is_empty());
    assert!(store.packages("bob").await.unwrap().is_empty());
    assert!(
        store
            .set_status("bob", "j1", JobStatus::Saved)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chat.db");
    let sqlite = SqliteSessionStore::open(&path).await.unwrap();
    behaves(Arc::new(sqlite.documents())).await;
    sqlite.close().await;
    // Reopened, everything is there.
    let reopened = SqliteSessionStore::open(&path).await.unwrap();
    let store = ChatStore::new(Arc::new(reopened.documents()));
    assert_eq!(store.jobs("ada").await.unwrap().len(), 1);
    assert_eq!(store.packages("ada").await.unwrap().len(), 2);
}

fn postgres_url() -> String {
    std::env::var("POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

#[tokio::test]
async fn postgres_store() {
    let schema = format!(
        "chat_test_{}_{}",
        std::process::id(),
        Utc::now().timestamp_micros()
    );
    let pg = PgSessionStore::connect_in_schema(&postgres_url(), &schema)
        .await
        .unwrap_or_else(|e| {
            panic!("{e}\n(PostgreSQL is not running at {}: `cargo xtask setup` starts it, or set POSTGRES_URL)", postgres_url())
        });
    behaves(Arc::new(pg.documents())).await;
    pg.close().await;
    let mut conn = sqlx::PgConnection::connect(&postgres_url()).await.unwrap();
    sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .execute(&mut conn)
        .await
        .unwrap();
}

#[tokio::test]
async fn two_users_chatting_at_once_never_see_each_others_records() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteSessionStore::open(dir.path().join("chat.db"))
        .await
        .unwrap();
    let model = Arc::new(recorded_model(&fixtures()).unwrap());
    let (services, _replay) =
        services_on(Arc::new(sqlite.documents()), memory_vectors().await).await;
    let chat = Arc::new(JobAgentChat::new(services.clone(), model, dry_run_router()));

    let ada = {
        let chat = chat.clone();
        tokio::spawn(async move {
            let mut talk = Conversation::new("ada");
            talk.say(chat.as_ref(), "Find Rust backend engineer jobs in Berlin")
                .await;
            talk.say(chat.as_ref(), "I know Rust, PostgreSQL and Kafka, I want a backend engineer role in Berlin, at least 70000 EUR a year. My email is ada@example.com").await;
            talk.say(
                chat.as_ref(),
                "Save the Tidewater and Kestrel jobs and rank my saved jobs",
            )
            .await;
            talk.say(
                chat.as_ref(),
                "Prepare an application for the Tidewater job",
            )
            .await;
        })
    };
    let bob = {
        let chat = chat.clone();
        tokio::spawn(async move {
            let mut talk = Conversation::new("bob");
            talk.say(chat.as_ref(), "Find Rust backend engineer jobs in Berlin")
                .await;
            talk.say(chat.as_ref(), "hello there").await;
            // Bob has no profile: ranking must not find Ada's.
            let reply = talk
                .say(
                    chat.as_ref(),
                    "Save the Tidewater and Kestrel jobs and rank my saved jobs",
                )
                .await;
            assert!(
                !reply.text.contains("Ranked against your profile"),
                "{}",
                reply.text
            );
        })
    };
    ada.await.unwrap();
    bob.await.unwrap();

    let store = &services.store;
    assert!(store.profile("ada").await.unwrap().is_some());
    assert!(store.profile("bob").await.unwrap().is_none());
    assert_eq!(store.packages("ada").await.unwrap().len(), 1);
    assert!(store.packages("bob").await.unwrap().is_empty());
    for user in ["ada", "bob"] {
        let saved = store
            .jobs(user)
            .await
            .unwrap()
            .into_iter()
            .filter(|j| j.status == JobStatus::Saved)
            .count();
        assert_eq!(saved, 2, "{user} saved two");
    }
    store.delete_job("ada", "j6708c6e80b").await.unwrap();
    assert!(store.job("bob", "j6708c6e80b").await.unwrap().is_some());
}

/// The pgvector server: `PGVECTOR_URL`, else the one `cargo xtask` starts.
fn pgvector_url() -> String {
    std::env::var("PGVECTOR_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5433/postgres".to_owned())
}

#[tokio::test]
async fn the_conversation_runs_on_postgresql_with_pgvector() {
    let url = pgvector_url();
    let schema = format!(
        "chat_pgv_{}_{}",
        std::process::id(),
        Utc::now().timestamp_micros()
    );
    let pg = PgSessionStore::connect_in_schema(&url, &schema)
        .await
        .unwrap_or_else(|e| panic!("{e}\n(the pgvector server is not running: `cargo xtask setup` starts it, or set PGVECTOR_URL)"));
    let vectors = agent_backends::PgVectorStore::connect(&url).await.unwrap();
    let model = Arc::new(recorded_model(&fixtures()).unwrap());
    let (services, _replay) = services_on(Arc::new(pg.documents()), Arc::new(vectors)).await;
    let chat = JobAgentChat::new(services.clone(), model, dry_run_router());
    // A user of this run alone: the vector table is shared by every run.
    let user = schema.clone();
    let mut talk = Conversation::new(&user);
    talk.say(&chat, "Find Rust backend engineer jobs in Berlin")
        .await;
    talk.say(&chat, "I know Rust, PostgreSQL and Kafka, I want a backend engineer role in Berlin, at least 70000 EUR a year. My email is ada@example.com").await;
    let ranked = talk
        .say(
            &chat,
            "Save the Tidewater and Kestrel jobs and rank my saved jobs",
        )
        .await;
    assert!(
        ranked.text.contains("Ranked against your profile"),
        "{}",
        ranked.text
    );
    assert!(
        talk.notes.contains(&"> ranked 2 jobs".to_owned()),
        "{:?}",
        talk.notes
    );
    assert_eq!(services.store.jobs(&user).await.unwrap().len(), 4);
    pg.close().await;
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
    sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .execute(&mut conn)
        .await
        .unwrap();
}
