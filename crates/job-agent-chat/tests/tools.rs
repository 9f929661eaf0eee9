//! The router and every tool, each driven by a scripted model through a whole chat turn
//! (route, tool call, answer), checked by what the tool returned to the model and what
//! it left in the store.
#![cfg(test)]

mod common;

use std::sync::Arc;

use agent_llm::ContentBlock;
use agent_llm::testing::{ScriptedModel, dry_run_router, responses};
use common::{Conversation, services};
use job_agent_chat::models::{FeedbackKind, JobStatus};
use job_agent_chat::{JobAgentChat, Services};
use serde_json::{Value, json};

/// One chat turn of `user` whose model routes to `intent`, calls `tool` with `input`,
/// then answers; the tool's result as the model saw it, whether it was an error, and the
/// progress notes.
async fn call(
    services: &Arc<Services>,
    user: &str,
    intent: &str,
    tool: &str,
    input: Value,
) -> (Value, bool, Vec<String>) {
    let (result, is_error, notes, _) = call_asking(services, user, intent, tool, input, []).await;
    (result, is_error, notes)
}

/// [`call`] with the answers the tool's own model calls get (the chat's model answers
/// them, between the tool call and the final answer), and the chat's model.
async fn call_asking(
    services: &Arc<Services>,
    user: &str,
    intent: &str,
    tool: &str,
    input: Value,
    tool_answers: impl IntoIterator<Item = agent_llm::ChatResponse>,
) -> (Value, bool, Vec<String>, Arc<ScriptedModel>) {
    let mut script = vec![
        responses::tool_call("r", "Route", json!({"intent": intent})),
        responses::tool_call("t1", tool, input),
    ];
    script.extend(tool_answers);
    script.push(responses::text("done"));
    let model = Arc::new(ScriptedModel::new(script));
    let chat = JobAgentChat::new(services.clone(), model.clone(), dry_run_router());
    let mut conversation = Conversation::new(user);
    let reply = conversation.say(&chat, "please").await;
    assert_eq!(reply.text, "done");
    let requests = model.requests();
    let result = requests
        .last()
        .unwrap()
        .messages
        .last()
        .unwrap()
        .content
        .iter()
        .find_map(|block| match block {
            ContentBlock::ToolResult {
                content, is_error, ..
            } => Some((
                serde_json::from_str(content).unwrap_or(Value::String(content.clone())),
                *is_error,
            )),
            _ => None,
        })
        .expect("the tool's result went back to the model");
    (result.0, result.1, conversation.notes, model)
}

async fn ok(services: &Arc<Services>, user: &str, tool: &str, input: Value) -> Value {
    let (result, is_error, _) = call(services, user, "JOB_SEARCH", tool, input).await;
    assert!(!is_error, "{tool} failed: {result}");
    result
}

async fn searched(services: &Arc<Services>, user: &str) -> Vec<String> {
    let found = ok(
        services,
        user,
        "search_jobs",
        json!({"query": "rust backend engineer", "location": "Berlin, Germany"}),
    )
    .await;
    found["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_router_picks_the_agent_and_defaults_to_job_search() {
    let (services, _replay) = services().await;
    let (_, _, notes) = call(
        &services,
        "ada",
        "APP_PREP",
        "list_application_packages",
        json!({}),
    )
    .await;
    assert_eq!(notes[0], "> routed to application prep");

    // A router answer that is no route twice: job search, said so.
    let model = Arc::new(ScriptedModel::new(vec![
        responses::text("banana"),
        responses::text("still banana"),
        responses::text("Hello! I can search jobs for you."),
    ]));
    let chat = JobAgentChat::new(services.clone(), model.clone(), dry_run_router());
    let mut conversation = Conversation::new("ada");
    let reply = conversation.say(&chat, "hi").await;
    assert_eq!(reply.text, "Hello! I can search jobs for you.");
    assert_eq!(conversation.notes[0], "> routed to job search");
    let agent_request = &model.requests()[2];
    assert!(
        agent_request
            .system
            .as_deref()
            .unwrap()
            .starts_with("You are the JobSearchAgent")
    );
    assert_eq!(agent_request.tools.len(), 13);
}

#[tokio::test]
async fn search_stores_the_jobs_and_passes_the_filters_to_serpapi() {
    let (services, replay) = services().await;
    let (found, is_error, notes) = call(
        &services,
        "ada",
        "JOB_SEARCH",
        "search_jobs",
        json!({"query": "rust backend engineer", "remote_only": true, "date_posted": "week", "max_results": 10}),
    )
    .await;
    assert!(!is_error, "{found}");
    // Remote only: of the four, the Northfield job is remote ("Anywhere").
    assert_eq!(found["found"], 1);
    assert!(
        found["jobs"][0]["job"]
            .as_str()
            .unwrap()
            .contains("Northfield")
    );
    assert!(notes.contains(&"> found 1 jobs".to_owned()));
    let first = &replay.received()[0];
    assert_eq!(first["ltype"], "1");
    assert_eq!(first["chips"], "date_posted:week");
    assert_eq!(services.store.jobs("ada").await.unwrap().len(), 1);
}

#[tokio::test]
async fn jobs_are_listed_detailed_saved_moved_archived_and_deleted() {
    let (services, _replay) = services().await;
    let ids = searched(&services, "ada").await;
    assert_eq!(ids.len(), 4);

    let listed = ok(&services, "ada", "list_jobs", json!({})).await;
    assert_eq!(listed["count"], 4);
    let details = ok(
        &services,
        "ada",
        "get_job_details",
        json!({"job_id": ids[0]}),
    )
    .await;
    assert_eq!(details["company"], "Tidewater Payments");
    assert_eq!(details["requirements"][0], "Rust");

    ok(&services, "ada", "save_job", json!({"job_id": ids[0]})).await;
    // A job named by its company works too.
    ok(
        &services,
        "ada",
        "update_job_status",
        json!({"job_id": "Kestrel", "status": "applied"}),
    )
    .await;
    let saved = ok(&services, "ada", "list_jobs", json!({"status": "saved"})).await;
    assert_eq!(saved["count"], 1);
    let kestrel = services.store.job("ada", &ids[3]).await.unwrap().unwrap();
    assert_eq!(kestrel.status, JobStatus::Applied);

    ok(&services, "ada", "archive_job", json!({"job_id": ids[1]})).await;
    let listed = ok(&services, "ada", "list_jobs", json!({})).await;
    assert_eq!(listed["count"], 3, "archived jobs are left out");
    ok(&services, "ada", "delete_job", json!({"job_id": ids[2]})).await;
    assert!(services.store.job("ada", &ids[2]).await.unwrap().is_none());

    let (missing, is_error, _) = call(
        &services,
        "ada",
        "JOB_SEARCH",
        "save_job",
        json!({"job_id": "j000"}),
    )
    .await;
    assert!(is_error);
    assert!(
        missing
            .as_str()
            .unwrap()
            .contains("list_jobs shows the ids")
    );
}

#[tokio::test]
async fn profile_ranking_feedback_and_notifications() {
    let (services, _replay) = services().await;
    let ids = searched(&services, "ada").await;

    let (no_profile, is_error, _) = call(
        &services,
        "ada",
        "JOB_SEARCH",
        "rank_saved_jobs",
        json!({"include_new": true}),
    )
    .await;
    assert!(is_error);
    assert!(no_profile.as_str().unwrap().contains("no profile yet"));

    ok(
        &services,
        "ada",
        "set_user_profile",
        json!({"skills": ["Rust", "PostgreSQL", "Kafka"], "titles": ["Backend Engineer"],
               "preferred_locations": ["Berlin, Germany"], "min_salary": 70000, "salary_currency": "EUR",
               "email": "ada@example.com"}),
    )
    .await;
    let shown = ok(&services, "ada", "show_profile", json!({})).await;
    assert_eq!(shown["profile"]["min_salary"], 70000);

    ok(&services, "ada", "save_job", json!({"job_id": ids[0]})).await;
    ok(&services, "ada", "save_job", json!({"job_id": ids[3]})).await;
    let ranked = ok(&services, "ada", "rank_saved_jobs", json!({})).await;
    let ranked = ranked["ranked"].as_array().unwrap();
    assert_eq!(ranked.len(), 2);
    assert_eq!(
        ranked[0]["id"],
        ids[0].as_str(),
        "Tidewater matches all three skills"
    );
    assert!(ranked[0]["why"].as_str().unwrap().contains("Rust"));
    // The four part scores beside the total, each out of 100.
    for part in ["similarity", "skills", "location", "salary"] {
        let value = ranked[0]["parts"][part].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&value), "{part}: {value}");
    }
    assert!(
        ranked[0]["parts"]["skills"].as_f64().unwrap()
            > ranked[1]["parts"]["skills"].as_f64().unwrap(),
        "Tidewater asks for more of the profile's skills: {ranked:?}"
    );

    // Feedback is used by the next ranking.
    ok(
        &services,
        "ada",
        "provide_feedback",
        json!({"job_id": ids[0], "feedback": "not_interested", "notes": "too much on-call"}),
    )
    .await;
    assert_eq!(
        services.store.feedback("ada").await.unwrap()[0].kind,
        FeedbackKind::NotInterested
    );
    let reranked = ok(&services, "ada", "rank_saved_jobs", json!({})).await;
    assert_eq!(reranked["ranked"][0]["id"], ids[3].as_str());
    assert_eq!(
        reranked["ranked"][1]["deal_breakers"][0],
        "you said: not interested"
    );

    let sent = ok(&services, "ada", "notify_matches", json!({"min_score": 0})).await;
    assert_eq!(sent["channels"][0]["channel"], "console");
    assert_eq!(sent["channels"][0]["outcome"], "delivered");
}

#[tokio::test]
async fn a_resume_file_in_the_terminal_chat_s_folder_becomes_the_profile() {
    let (shared, _replay) = services().await;
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/realdata/docs/hr-helper");
    let services = Arc::new(Services {
        upload_root: Some(folder),
        ..(*shared).clone()
    });
    let read = ok(
        &services,
        "ada",
        "upload_resume",
        json!({"path": "sample_resume.docx"}),
    )
    .await;
    assert!(read["characters"].as_u64().unwrap() > 200, "{read}");
    assert_eq!(read["profile"]["resume"], "from sample_resume.docx");
    let profile = services.store.profile("ada").await.unwrap().unwrap();
    assert!(!profile.resume_text.is_empty());

    for (path, says) in [
        ("missing.pdf", "missing.pdf"),
        (
            "../open-resume/openresume-resume.pdf",
            "from the upload folder only",
        ),
    ] {
        let (refused, is_error, _) = call(
            &services,
            "ada",
            "JOB_SEARCH",
            "upload_resume",
            json!({"path": path}),
        )
        .await;
        assert!(is_error);
        assert!(refused.as_str().unwrap().contains(says), "{refused}");
    }
}

#[tokio::test]
async fn a_served_chat_has_no_path_tool_and_takes_a_pasted_resume() {
    let (services, _replay) = services().await;
    let model = Arc::new(ScriptedModel::new(vec![
        responses::tool_call("r", "Route", json!({"intent": "JOB_SEARCH"})),
        responses::text("hello"),
    ]));
    let chat = JobAgentChat::new(services.clone(), model.clone(), dry_run_router());
    Conversation::new("ada").say(&chat, "hi").await;
    let names: Vec<String> = model.requests()[1]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(!names.iter().any(|n| n == "upload_resume"), "{names:?}");

    let pasted = "Ada Lovelace\nada@example.com\nSenior Backend Engineer\nSkills: Rust, Kafka, PostgreSQL\n\n8 years of experience";
    let saved = ok(
        &services,
        "ada",
        "set_user_profile",
        json!({"preferred_locations": ["Berlin"], "resume_text": pasted}),
    )
    .await;
    assert_eq!(saved["saved"]["resume"], "from pasted text");
    let profile = services.store.profile("ada").await.unwrap().unwrap();
    assert_eq!(profile.skills, ["Rust", "Kafka", "PostgreSQL"]);
    assert_eq!(profile.preferred_locations, ["Berlin"]);
    assert_eq!(profile.years_experience, Some(8));
}

#[tokio::test]
async fn notification_channels_are_the_user_s_own() {
    let (services, _replay) = services().await;
    let saved = ok(
        &services,
        "ada",
        "set_notification_channels",
        json!({"email": "ada@example.com", "slack_webhook_url": "https://hooks.slack.com/services/T0/B0/secret"}),
    )
    .await;
    assert_eq!(saved["saved"]["slack"], "set");
    assert!(!saved.to_string().contains("secret"), "{saved}");
    let (refused, is_error, _) = call(
        &services,
        "ada",
        "JOB_SEARCH",
        "set_notification_channels",
        json!({"teams_webhook_url": "http://169.254.169.254/hook"}),
    )
    .await;
    assert!(is_error, "{refused}");
    assert!(services.store.profile("bob").await.unwrap().is_none());
    let profile = services.store.profile("ada").await.unwrap().unwrap();
    assert!(profile.teams_webhook.is_empty());
}

#[tokio::test]
async fn application_prep_writes_checks_and_keeps_packages() {
    let draft = json!({
        "resume_suggestions": [
            {"requirement": "Rust", "before": "Built payment services in Rust", "after": "Built payment services in Rust and PostgreSQL"},
            {"requirement": "Kubernetes", "before": "", "after": "Operated Kubernetes clusters"}
        ],
        "cover_letter": "I build payment services in Rust. I ran Kubernetes for 3 years.",
        "intro_email": "Hello, I build payment services in Rust."
    });
    let drafts = [
        responses::tool_call("w1", "ApplicationDraft", draft.clone()),
        responses::tool_call("w2", "ApplicationDraft", draft),
    ];
    let (services, _replay) = services().await;
    let ids = searched(&services, "ada").await;
    ok(
        &services,
        "ada",
        "set_user_profile",
        json!({"skills": ["Rust", "PostgreSQL"], "summary": "I build payment services in Rust."}),
    )
    .await;

    let (fit, is_error, _) = call(
        &services,
        "ada",
        "APP_PREP",
        "analyze_job_fit",
        json!({"job_id": ids[0]}),
    )
    .await;
    assert!(!is_error, "{fit}");
    let matched: Vec<&str> = fit["fit"]["matched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["requirement"].as_str().unwrap())
        .collect();
    assert_eq!(matched, ["Rust", "PostgreSQL"]);
    assert!(
        fit["fit"]["missing"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "Kafka")
    );

    let (package, is_error, _, model) = call_asking(
        &services,
        "ada",
        "APP_PREP",
        "prepare_application",
        json!({"job_id": ids[0]}),
        drafts,
    )
    .await;
    assert!(!is_error, "{package}");
    assert_eq!(package["resume_suggestions"].as_array().unwrap().len(), 1);
    assert_eq!(package["cover_letter"], "I build payment services in Rust.");
    let removed = package["removed_unsupported_claims"].as_array().unwrap();
    assert_eq!(removed.len(), 2, "{removed:?}");
    let drafts_asked = model
        .requests()
        .iter()
        .filter(|r| r.tools.iter().any(|t| t.name == "ApplicationDraft"))
        .count();
    assert_eq!(drafts_asked, 2, "asked again once with what was wrong");

    let (listed, _, _) = call(
        &services,
        "ada",
        "APP_PREP",
        "list_application_packages",
        json!({}),
    )
    .await;
    assert_eq!(listed["count"], 1);
    assert!(services.store.packages("bob").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_turns_usage_counts_the_router_the_agent_and_the_tools_model_calls() {
    let draft = json!({
        "resume_suggestions": [],
        "cover_letter": "I build payment services in Rust.",
        "intro_email": "Hello, I build payment services in Rust."
    });
    let written = responses::tool_call("w1", "ApplicationDraft", draft);
    let (services, _replay) = services().await;
    let ids = searched(&services, "ada").await;
    ok(
        &services,
        "ada",
        "set_user_profile",
        json!({"skills": ["Rust"], "summary": "I build payment services in Rust."}),
    )
    .await;
    // The router, the loop and the tool's writer all answer from the chat's model.
    let turn = vec![
        responses::tool_call("r", "Route", json!({"intent": "APP_PREP"})),
        responses::tool_call("t1", "prepare_application", json!({"job_id": ids[0]})),
        written,
        responses::text("Your package is ready."),
    ];
    let every_call_tokens: u64 = turn.iter().map(|r| r.usage.output_tokens).sum();
    let chat = JobAgentChat::new(
        services.clone(),
        Arc::new(ScriptedModel::new(turn)),
        dry_run_router(),
    );
    let reply = Conversation::new("ada")
        .say(&chat, "prepare my application")
        .await;
    assert_eq!(reply.text, "Your package is ready.");
    assert_eq!(reply.usage.completion_tokens, every_call_tokens);
}
