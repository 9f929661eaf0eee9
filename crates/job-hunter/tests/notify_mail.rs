//! The summary email: a dry run never sends mail, and a recipient that is not a valid
//! address is a recorded issue, not a failed run.
#![cfg(test)]

mod common;

use common::rig::Rig;

use std::sync::Arc;

use agent_llm::testing::{RecordedModel, ScriptedModel};
use agent_llm::{ChatModel, ChatRequest, ChatResponse, ContentBlock, LlmError};
use agent_runtime::graph::RunStatus;
use job_hunter::{Deps, HuntEvent, JobHunter, Settings, steps};

#[tokio::test]
async fn a_dry_run_never_sends_mail_whatever_smtp_url_says() {
    let dir = tempfile::tempdir().unwrap();
    let smtp = common::SmtpServer::start();
    let settings = Settings {
        smtp_url: Some(smtp.url()),
        ..common::settings(dir.path())
    };
    let deps = Deps::dry_run(&common::fixtures(), &settings, None).unwrap();
    assert!(deps.mailer.is_none());
    let (deps, events) = common::dry_deps(&settings);
    let result = JobHunter::new(deps, settings.clone())
        .run(common::config("dry-smtp", &settings))
        .await
        .unwrap();
    assert_eq!(result.status, RunStatus::Success, "{:?}", result.reason);

    assert!(smtp.messages().is_empty(), "a dry run sent mail");
    let emls = common::eml_files(&settings.output_dir);
    let [eml] = &emls[..] else { panic!("{emls:?}") };
    let notification = result.state.notification.unwrap();
    assert_eq!(notification.eml_path.as_ref(), Some(eml));
    // And it says so.
    let notices: Vec<String> = events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            HuntEvent::Notice { message } => Some(message),
            _ => None,
        })
        .collect();
    assert!(
        notices
            .iter()
            .any(|m| m.contains("no mail is sent") && m.contains(&eml.display().to_string())),
        "{notices:?}"
    );
}

#[tokio::test]
async fn notify_leaves_out_an_invalid_recipient_and_says_what_is_wrong() {
    let rig = Rig::new(&ScriptedModel::new(Vec::new()));
    let mut state = rig.state();
    state.profile = Some(job_hunter::models::CandidateProfile {
        name: "Maya Okafor".into(),
        email: Some("maya.okafor at mail.example".into()),
        current_title: None,
        years_of_experience: None,
        skills: vec!["Rust".into()],
        experience: Vec::new(),
        education: Vec::new(),
        location: None,
        summary: String::new(),
    });
    steps::notify::run(&mut state, &rig.env()).await.unwrap();

    let messages: Vec<&str> = state.issues.iter().map(|i| i.message.as_str()).collect();
    let [invalid, fallback] = &messages[..] else {
        panic!("{messages:#?}")
    };
    assert!(
        invalid.contains("\"maya.okafor at mail.example\"")
            && invalid.contains("from the resume")
            && invalid.contains("not a valid email address"),
        "{invalid}"
    );
    assert!(fallback.contains("no valid recipient"), "{fallback}");
    assert!(
        state
            .issues
            .iter()
            .all(|i| i.step == "notify" && i.kind == "mail" && !i.fatal)
    );
    // Written to the sender instead.
    assert_eq!(common::eml_files(&rig.output_dir()).len(), 1);
    assert_eq!(
        state.notification.unwrap().to,
        [rig.settings.email_from.as_str()]
    );
}

#[tokio::test]
async fn an_invalid_jh_email_to_falls_back_to_the_resume_address() {
    let rig = Rig::with(&ScriptedModel::new(Vec::new()), |s| {
        s.email_to = Some("hunt@@example.org".into());
    });
    let mut state = rig.state();
    state.profile = Some(job_hunter::models::CandidateProfile {
        name: "Maya Okafor".into(),
        email: Some("maya.okafor@mail.example".into()),
        current_title: None,
        years_of_experience: None,
        skills: vec!["Rust".into()],
        experience: Vec::new(),
        education: Vec::new(),
        location: None,
        summary: String::new(),
    });
    steps::notify::run(&mut state, &rig.env()).await.unwrap();

    let [issue] = &state.issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert!(
        issue.message.contains("JH_EMAIL_TO") && issue.message.contains("hunt@@example.org"),
        "{}",
        issue.message
    );
    assert_eq!(state.notification.unwrap().to, ["maya.okafor@mail.example"]);
}

/// The recorded model, reading an unusable email address off the resume.
struct MisreadEmail(RecordedModel);

#[async_trait::async_trait]
impl ChatModel for MisreadEmail {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut answer = self.0.respond(request)?;
        for block in &mut answer.content {
            if let ContentBlock::ToolUse { name, input, .. } = block
                && name == "CandidateProfile"
            {
                input["email"] = "maya.okafor(at)mail.example, or call me".into();
            }
        }
        Ok(answer)
    }

    fn structured_output_mode(&self) -> agent_llm::StructuredOutputMode {
        agent_llm::StructuredOutputMode::ForcedTool
    }
}

#[tokio::test]
async fn an_invalid_address_from_the_model_does_not_fail_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let settings = common::settings(dir.path());
    let model = MisreadEmail(job_hunter::dry_run::recorded_model(&common::fixtures()).unwrap());
    let (deps, _) = common::dry_deps(&settings);
    let result = JobHunter::new(deps.with_model(Arc::new(model)), settings.clone())
        .run(common::config("bad-address", &settings))
        .await
        .unwrap();
    assert_eq!(result.status, RunStatus::Success, "{:?}", result.reason);
    let state = &result.state;
    assert_eq!(state.output_files.len(), 3);
    assert!(state.output_files.iter().all(|f| f.is_file()));
    assert!(
        state.issues.iter().any(|i| i.step == "notify"
            && i.message.contains("maya.okafor(at)mail.example")
            && i.message.contains("not a valid email address")),
        "{:#?}",
        state.issues
    );
    assert!(state.issues.iter().all(|i| !i.fatal));
    assert_eq!(common::eml_files(&settings.output_dir).len(), 1);
}
