//! A resume given in the conversation, through the real HTTP route of the
//! OpenAI-compatible front: an OpenAI `file` content part (a base64 PDF in `file_data`,
//! as the official clients send one) is read in memory into that user's profile, and
//! the answer says so; another user's conversation never reaches it; a file that cannot
//! be read, or is over the limit, is refused by name in the answer.
#![cfg(test)]

mod common;

use std::sync::Arc;

use agent_llm::testing::dry_run_router;
use agent_runtime::documents::InMemoryDocumentStore;
use agent_server::chat::ChatFront;
use base64::Engine as _;
use job_agent_chat::JobAgentChat;
use job_agent_chat::dry_run::recorded_model;
use serde_json::{Value, json};

/// The chat on the recorded model behind the front, served on loopback; its base URL.
async fn serve(
    front: impl FnOnce(ChatFront) -> ChatFront,
) -> (String, Arc<job_agent_chat::Services>) {
    let model = Arc::new(recorded_model(&common::fixtures()).unwrap());
    let (services, replay) = common::services().await;
    let chat = JobAgentChat::new(services.clone(), model, dry_run_router());
    let front = front(ChatFront::new(
        Arc::new(chat),
        Arc::new(InMemoryDocumentStore::default()),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let app = front.router();
    tokio::spawn(async move {
        let _replay = replay;
        axum::serve(listener, app).await
    });
    (url, services)
}

fn file_part(name: &str, media_type: &str, bytes: &[u8]) -> Value {
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    json!({"type": "file", "file": {"filename": name, "file_data": format!("data:{media_type};base64,{data}")}})
}

/// One whole (non-streamed) turn of `user` saying `text` with `parts`; the answer.
async fn say(url: &str, user: &str, text: &str, parts: Vec<Value>) -> String {
    let mut content = vec![json!({"type": "text", "text": text})];
    content.extend(parts);
    let response = reqwest::Client::new()
        .post(format!("{url}/chat/completions"))
        .json(&json!({
            "model": "job-agent",
            "user": user,
            "messages": [{"role": "user", "content": content}],
        }))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn realdata(path: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/realdata")
            .join(path),
    )
    .unwrap()
}

#[tokio::test]
async fn a_pdf_sent_as_a_file_part_becomes_that_user_s_profile_only() {
    let (url, services) = serve(|front| front).await;
    let pdf = realdata("docs/open-resume/openresume-resume.pdf");

    let answer = say(
        &url,
        "ada",
        "Here is my resume",
        vec![file_part("openresume-resume.pdf", "application/pdf", &pdf)],
    )
    .await;
    let profile = services.store.profile("ada").await.unwrap().unwrap();
    assert!(!profile.skills.is_empty(), "{profile:?}");
    assert_eq!(profile.resume_source, "openresume-resume.pdf");
    assert!(
        answer.starts_with("Attached openresume-resume.pdf was read into your profile:"),
        "{answer}"
    );
    let first_skill = &profile.skills[0];
    assert!(answer.contains(first_skill.as_str()), "{answer}");
    // The agent saw the profile as stored, the file in it.
    assert!(
        answer.contains("resume: from openresume-resume.pdf"),
        "{answer}"
    );

    // Another user's conversation: nothing of Ada's.
    let other = say(&url, "bob", "show my profile", vec![]).await;
    assert!(other.contains("skills: none"), "{other}");
    assert!(!other.contains(first_skill.as_str()), "{other}");
    assert!(services.store.profile("bob").await.unwrap().is_none());
}

#[tokio::test]
async fn a_file_that_cannot_be_read_or_is_too_large_is_refused_in_the_answer() {
    let (url, services) = serve(|front| front.with_max_file_bytes(64 * 1024)).await;

    let broken = say(
        &url,
        "ada",
        "Here is my resume",
        vec![file_part(
            "cv.pdf",
            "application/pdf",
            b"%PDF-1.7\nnot really a pdf",
        )],
    )
    .await;
    assert!(
        broken.starts_with("Attached cv.pdf was not read: "),
        "{broken}"
    );

    let large = say(
        &url,
        "ada",
        "Here is my resume",
        vec![file_part(
            "big.pdf",
            "application/pdf",
            &vec![b'x'; 200 * 1024],
        )],
    )
    .await;
    assert!(
        large.starts_with(
            "Attached big.pdf was not read: big.pdf is 0.2 MB; files of at most 0.1 MB are taken"
        ),
        "{large}"
    );
    assert!(services.store.profile("ada").await.unwrap().is_none());
}
