//! Crash and resume: a run stopped at any step boundary and resumed with the same run
//! id ends with the same ranking as an uninterrupted run, and sends one email.
#![cfg(test)]

mod common;

use std::sync::Arc;

use agent_runtime::graph::RunStatus;
use job_hunter::steps::STEP_NAMES;
use job_hunter::{Deps, HuntEvent, JobHunter, Settings};
use tokio_util::sync::CancellationToken;

/// Runs until `step` finishes, then stops the run as a crash would (between steps).
async fn run_until(step: &'static str, run_id: &str, settings: &Settings) {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let deps = Deps::dry_run(&common::fixtures(), settings, None)
        .unwrap()
        .with_events(Arc::new(move |event: HuntEvent| {
            if matches!(&event, HuntEvent::StepFinished { step: s, .. } if s == step) {
                trigger.cancel();
            }
        }));
    let stopped = JobHunter::new(deps, settings.clone())
        .with_cancellation(cancel)
        .run(common::config(run_id, settings))
        .await
        .unwrap();
    assert_eq!(stopped.status, RunStatus::Failed, "stopped after {step}");
    assert!(
        stopped
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("cancel"),
        "{:?}",
        stopped.reason
    );
}

#[tokio::test]
async fn a_run_stopped_at_every_step_boundary_resumes_to_the_same_ranking() {
    let dir = tempfile::tempdir().unwrap();
    let baseline_settings = common::settings(&dir.path().join("baseline"));
    let baseline = common::dry_run("baseline", &baseline_settings).await;
    assert_eq!(baseline.status, RunStatus::Success);
    let expected = common::ranking(&baseline);
    assert!(expected.len() >= 20, "{}", expected.len());

    for (index, step) in STEP_NAMES.iter().enumerate().take(STEP_NAMES.len() - 1) {
        let settings = common::settings(&dir.path().join(step));
        let run_id = format!("crash-after-{step}");
        run_until(step, &run_id, &settings).await;

        let (deps, events) = common::dry_deps(&settings);
        let resumed = JobHunter::new(deps, settings.clone())
            // The request is the recorded one; this config is ignored on resume.
            .run(common::config(&run_id, &settings))
            .await
            .unwrap();
        assert_eq!(
            resumed.status,
            RunStatus::Success,
            "after {step}: {:?}",
            resumed.reason
        );
        assert!(resumed.resumed);
        assert_eq!(resumed.steps_skipped, STEP_NAMES[..=index], "after {step}");
        assert_eq!(resumed.steps_run, STEP_NAMES[index + 1..], "after {step}");
        assert_eq!(common::ranking(&resumed), expected, "after {step}");
        let skipped = events
            .events()
            .iter()
            .filter(|e| matches!(e, HuntEvent::StepSkipped { .. }))
            .count();
        assert_eq!(skipped, index + 1);
        // Model calls before the crash are not repeated, and their cost is kept.
        assert_eq!(resumed.cost.calls, baseline.cost.calls, "after {step}");
        assert_eq!(
            common::eml_files(&settings.output_dir).len(),
            1,
            "after {step}"
        );
    }
}

/// The dry run to the end, with an SMTP mailer given to its services by hand (a dry
/// run's own services never send mail).
async fn dry_run_mailing_to(
    smtp: &common::SmtpServer,
    run_id: &str,
    settings: &Settings,
) -> job_hunter::HuntResult {
    let (mut deps, _) = common::dry_deps(settings);
    deps.mailer = Some(Arc::new(
        job_capabilities::mail::SmtpMailer::from_url(&smtp.url()).unwrap(),
    ));
    JobHunter::new(deps, settings.clone())
        .run(common::config(run_id, settings))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_crash_after_the_email_left_does_not_send_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let smtp = common::SmtpServer::start();
    let settings = common::settings(dir.path());
    // Stopped after scoring, resumed to the end: one email.
    run_until("score_jobs", "smtp-run", &settings).await;
    let done = dry_run_mailing_to(&smtp, "smtp-run", &settings).await;
    assert_eq!(done.status, RunStatus::Success, "{:?}", done.reason);
    assert!(
        done.state
            .notification
            .as_ref()
            .unwrap()
            .transport
            .starts_with("smtp://")
    );
    assert_eq!(smtp.messages().len(), 1);

    // A crash inside `notify` after sending, before its checkpoint: drop the last
    // checkpoint file and resume. The journal remembers the email.
    let mut files: Vec<_> = std::fs::read_dir(&settings.checkpoint_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains("-notify"))
        .collect();
    assert_eq!(files.len(), 1);
    std::fs::remove_file(files.pop().unwrap()).unwrap();
    let again = dry_run_mailing_to(&smtp, "smtp-run", &settings).await;
    assert_eq!(again.status, RunStatus::Success);
    assert_eq!(again.steps_run, ["notify"]);
    assert_eq!(smtp.messages().len(), 1, "the email was sent twice");
    assert!(common::eml_files(&settings.output_dir).is_empty());

    let message = &smtp.messages()[0];
    assert!(message.contains("Subject: Job hunt smtp-run:"));
    assert!(message.contains("smtp-run-jobs.xlsx"));
    assert_eq!(common::ranking(&again), common::ranking(&done));
}

/// Counts the calls that reach the model.
struct Counting {
    inner: agent_llm::testing::RecordedModel,
    calls: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl agent_llm::ChatModel for Counting {
    async fn chat(
        &self,
        request: &agent_llm::ChatRequest,
    ) -> Result<agent_llm::ChatResponse, agent_llm::LlmError> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.respond(request)
    }

    fn structured_output_mode(&self) -> agent_llm::StructuredOutputMode {
        agent_llm::StructuredOutputMode::ForcedTool
    }
}

#[tokio::test]
async fn a_run_killed_inside_process_jobs_does_not_pay_again_for_the_jobs_it_had_done() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = common::dry_run("baseline", &common::settings(&dir.path().join("b"))).await;
    let settings = Settings {
        max_concurrency: 1,
        ..common::settings(&dir.path().join("killed"))
    };
    // Stop the run after the 20th job is normalized, in the middle of the step.
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let deps = Deps::dry_run(&common::fixtures(), &settings, None)
        .unwrap()
        .with_events(Arc::new(move |event: HuntEvent| {
            if matches!(&event, HuntEvent::Progress { step, done: 20, .. } if step == "process_jobs")
            {
                trigger.cancel();
            }
        }));
    let stopped = JobHunter::new(deps, settings.clone())
        .with_cancellation(cancel)
        .run(common::config("mid-step", &settings))
        .await
        .unwrap();
    assert_eq!(stopped.status, RunStatus::Failed);
    assert!(stopped.state.jobs.is_empty(), "the step did not finish");

    let model = Arc::new(Counting {
        inner: job_hunter::dry_run::recorded_model(&common::fixtures()).unwrap(),
        calls: Default::default(),
    });
    let (deps, _) = common::dry_deps(&settings);
    let resumed = JobHunter::new(deps.with_model(model.clone()), settings.clone())
        .run(common::config("mid-step", &settings))
        .await
        .unwrap();
    assert_eq!(resumed.status, RunStatus::Success, "{:?}", resumed.reason);
    assert_eq!(common::ranking(&resumed), common::ranking(&baseline));
    // At least the 20 recorded answers came from the journal: 50 jobs + 10 batches at
    // most 30 + 10 new calls (the careers page read in scrape_jobs is checkpointed).
    let made = model.calls.load(std::sync::atomic::Ordering::SeqCst);
    assert!(made <= 30 + 10, "{made} calls reached the model");
    assert_eq!(resumed.critical_path.calls as usize, made);
    // Every call is still counted once in the run's spending.
    assert_eq!(resumed.cost.calls, baseline.cost.calls);
    assert!((resumed.cost.usd - baseline.cost.usd).abs() < 1e-9);
}
