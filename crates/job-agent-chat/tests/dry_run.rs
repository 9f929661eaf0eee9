//! The recorded conversation of the dry run, turn by turn, against the real SerpAPI client
//! (on the replay), the store and the ranker: search, profile, save and rank, an
//! application whose first draft claimed what the profile lacks.
#![cfg(test)]

mod common;

use std::sync::Arc;

use agent_llm::testing::dry_run_router;
use common::{Conversation, fixtures, services};
use job_agent_chat::JobAgentChat;
use job_agent_chat::dry_run::recorded_model;
use job_agent_chat::models::JobStatus;

#[tokio::test]
async fn the_recorded_conversation_searches_profiles_ranks_and_prepares() {
    let model = Arc::new(recorded_model(&fixtures()).unwrap().with_request_log(true));
    let (services, replay) = services().await;
    let chat = JobAgentChat::new(services.clone(), model.clone(), dry_run_router());
    let store = &services.store;
    let mut talk = Conversation::new("ada");

    let found = talk
        .say(&chat, "Find Rust backend engineer jobs in Berlin")
        .await;
    assert!(found.text.contains("I found 4 jobs"), "{}", found.text);
    assert_eq!(talk.notes[0], "> routed to job search");
    assert!(
        talk.notes.contains(&"> search jobs …".to_owned()),
        "{:?}",
        talk.notes
    );
    assert!(
        talk.notes.contains(&"> found 4 jobs".to_owned()),
        "{:?}",
        talk.notes
    );
    let jobs = store.jobs("ada").await.unwrap();
    assert_eq!(jobs.len(), 4, "two pages read");
    let searches = replay.received();
    assert_eq!(searches[0]["q"], "rust backend engineer");
    assert_eq!(searches[0]["location"], "Berlin, Germany");
    assert!(searches[1].contains_key("next_page_token"));

    talk.say(
        &chat,
        "I know Rust, PostgreSQL and Kafka, I want a backend engineer role in Berlin, at least 70000 EUR a year. My email is ada@example.com",
    )
    .await;
    let profile = store.profile("ada").await.unwrap().unwrap();
    assert_eq!(profile.skills, ["Rust", "PostgreSQL", "Kafka"]);
    assert_eq!(profile.min_salary, Some(70_000));

    let ranked = talk
        .say(
            &chat,
            "Save the Tidewater and Kestrel jobs and rank my saved jobs",
        )
        .await;
    assert!(ranked.text.contains("Ranked against your profile"));
    let saved: Vec<String> = store
        .jobs("ada")
        .await
        .unwrap()
        .into_iter()
        .filter(|j| j.status == JobStatus::Saved)
        .map(|j| j.company)
        .collect();
    assert_eq!(saved.len(), 2);
    assert!(saved.contains(&"Tidewater Payments".to_owned()));
    assert!(
        talk.notes.contains(&"> ranked 2 jobs".to_owned()),
        "{:?}",
        talk.notes
    );

    let prepared = talk
        .say(&chat, "Prepare an application for the Tidewater job")
        .await;
    assert_eq!(talk.notes[0], "> routed to application prep");
    assert!(prepared.text.contains("Cover letter"));
    let packages = store.packages("ada").await.unwrap();
    assert_eq!(packages.len(), 1);
    let package = &packages[0];
    assert!(package.job_headline.contains("Tidewater"));
    assert!(!package.cover_letter.contains("Kubernetes"));
    assert_eq!(package.resume_suggestions.len(), 1);
    // The first draft claimed Kubernetes; the writer was asked again with why.
    let drafts = model.requests_on("ApplicationDraft");
    assert_eq!(drafts.len(), 2);
    assert!(drafts[1].messages[0].text().contains("Kubernetes"));

    // Another user sees none of it.
    assert!(store.jobs("bob").await.unwrap().is_empty());
    assert!(store.profile("bob").await.unwrap().is_none());
}
