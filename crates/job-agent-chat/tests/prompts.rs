//! The prompts and wire bodies, pinned: the router's request, the writer's request, and
//! the Slack and Teams payloads.
#![cfg(test)]

use agent_server::chat::{ChatMessage, ChatRole};
use chrono::{TimeZone, Utc};
use job_agent_chat::models::{Job, JobStatus, UserProfile};
use job_agent_chat::notify::{Notice, SlackNotifier, TeamsNotifier, job_match};
use job_agent_chat::prompts::route_request;
use job_agent_chat::prompts::writer_request;

fn job() -> Job {
    Job {
        id: "j6708c6e80b".into(),
        title: "Senior Backend Engineer (Rust)".into(),
        company: "Tidewater Payments".into(),
        location: "Berlin, Germany".into(),
        remote: false,
        description: "You will build the ledger and settlement services in Rust.".into(),
        requirements: vec!["Rust".into(), "Experience with Kubernetes".into()],
        salary_text: "€75K–€95K a year".into(),
        url: "https://careers.tidewater.example/jobs/rust-1".into(),
        source: "serpapi (LinkedIn)".into(),
        posted: "4 days ago".into(),
        status: JobStatus::Saved,
        found_at: Utc.with_ymd_and_hms(2026, 11, 20, 9, 0, 0).unwrap(),
    }
}

#[test]
fn the_router_reads_the_last_turns() {
    let messages = vec![
        ChatMessage::new(ChatRole::System, "be brief"),
        ChatMessage::new(ChatRole::User, "Find Rust jobs in Berlin"),
        ChatMessage::new(ChatRole::Assistant, "I found 4 jobs."),
        ChatMessage::new(ChatRole::User, "Write a cover letter for the first one"),
    ];
    insta::assert_json_snapshot!(serde_json::to_value(route_request(&messages)).unwrap());
}

#[test]
fn the_writer_is_given_the_job_the_profile_and_what_was_wrong() {
    let profile = UserProfile {
        name: "Ada Example".into(),
        summary: "Backend engineer, 6 years of payment services in Rust.".into(),
        skills: vec!["Rust".into(), "PostgreSQL".into()],
        resume_text: "- Built payment services in Rust".into(),
        ..UserProfile::default()
    };
    let problems = vec!["cover letter: \"I ran Kubernetes.\" introduces the skill \"Kubernetes\", which its sources do not mention".to_owned()];
    insta::assert_json_snapshot!(
        serde_json::to_value(writer_request(&job(), &profile, &problems)).unwrap()
    );
}

fn notice() -> Notice {
    Notice {
        title: "1 job matches for you".into(),
        matches: vec![job_match(&job(), 0.82, "Rust matches; in Berlin".into())],
        email_to: None,
    }
}

#[test]
fn slack_block_kit() {
    insta::assert_json_snapshot!(SlackNotifier::payload(&notice()));
}

#[test]
fn teams_adaptive_card() {
    insta::assert_json_snapshot!(TeamsNotifier::payload(&notice()));
}
