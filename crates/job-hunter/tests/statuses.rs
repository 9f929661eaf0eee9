//! Every row of the spec's error table: success, partial on the cost limit, failed on a
//! fatal error or a step timeout, and the warning threshold.
#![cfg(test)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_llm::testing::{LatencyModel, ScriptedModel};
use agent_runtime::EventSink;
use agent_runtime::graph::RunStatus;
use job_hunter::{HuntEvent, JobHunter, RunConfig, Settings};

#[tokio::test]
async fn the_cost_limit_ends_the_run_partial_with_what_was_scored_written() {
    let dir = tempfile::tempdir().unwrap();
    // The resume, preferences, companies and every job cost about $0.04; each scoring
    // batch about $0.02: the limit falls inside score_jobs.
    let settings = Settings {
        max_cost_per_run_usd: 0.07,
        warn_cost_threshold_usd: 0.05,
        ..common::settings(dir.path())
    };
    let (deps, events) = common::dry_deps(&settings);
    let result = JobHunter::new(deps, settings.clone())
        .run(common::config("partial", &settings))
        .await
        .unwrap();
    assert_eq!(result.status, RunStatus::Partial, "{:?}", result.reason);
    let state = &result.state;
    assert!(
        result
            .reason
            .as_deref()
            .unwrap()
            .contains("of a $0.0700 limit"),
        "{:?}",
        result.reason
    );
    assert_eq!(
        state.jobs.len(),
        state.raw_jobs.len(),
        "processing finished"
    );
    assert!(!state.scored.is_empty() && state.scored.len() < state.jobs.len());
    assert!(result.cost.usd >= 0.07);
    // What was scored is written, not lost; no email for a partial run.
    assert_eq!(state.output_files.len(), 3);
    assert!(state.output_files.iter().all(|f| f.exists()));
    assert!(state.notification.is_none());
    // The warning came once.
    let warnings = events
        .events()
        .into_iter()
        .filter(|e| matches!(e, HuntEvent::CostWarning { .. }))
        .count();
    assert_eq!(warnings, 1);

    // A higher limit resumes the run: scoring is done again, the rest is kept.
    let settings = Settings {
        max_cost_per_run_usd: 5.0,
        ..settings
    };
    let (deps, _) = common::dry_deps(&settings);
    let resumed = JobHunter::new(deps, settings.clone())
        .run(common::config("partial", &settings))
        .await
        .unwrap();
    assert_eq!(resumed.status, RunStatus::Success, "{:?}", resumed.reason);
    assert_eq!(resumed.steps_run, ["score_jobs", "aggregate", "notify"]);
    assert_eq!(resumed.state.scored.len(), resumed.state.jobs.len());
}

/// Keeps each event with the ordinal its session gave it (0: given without one).
#[derive(Clone, Default)]
struct Numbered(Arc<Mutex<Vec<(u64, HuntEvent)>>>);

impl EventSink<HuntEvent> for Numbered {
    fn emit(&self, event: HuntEvent) {
        self.0.lock().unwrap().push((0, event));
    }

    fn emit_numbered(&self, ordinal: u64, event: HuntEvent) {
        self.0.lock().unwrap().push((ordinal, event));
    }
}

#[tokio::test]
async fn every_event_of_a_run_goes_through_its_session_numbered_the_cost_warning_too() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        warn_cost_threshold_usd: 0.05,
        ..common::settings(dir.path())
    };
    let sink = Numbered::default();
    let (deps, _) = common::dry_deps(&settings);
    let deps = deps.with_events(Arc::new(sink.clone()));
    let result = JobHunter::new(deps, settings.clone())
        .run(common::config("numbered", &settings))
        .await
        .unwrap();
    assert_eq!(result.status, RunStatus::Success, "{:?}", result.reason);
    let events = sink.0.lock().unwrap().clone();
    let ordinals: Vec<u64> = events.iter().map(|(ordinal, _)| *ordinal).collect();
    let expected: Vec<u64> = (1..=events.len() as u64).collect();
    assert_eq!(ordinals, expected, "{events:#?}");
    assert!(
        events
            .iter()
            .any(|(_, e)| matches!(e, HuntEvent::CostWarning { .. }))
    );
    assert!(matches!(events[0].1, HuntEvent::StepStarted { .. }));
}

#[tokio::test]
async fn an_unreadable_resume_fails_the_run_before_any_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let settings = common::settings(dir.path());
    let garbage = dir.path().join("resume.pdf");
    std::fs::write(&garbage, b"%PDF-1.4 this is not really a pdf").unwrap();
    let model = ScriptedModel::new(Vec::new());
    let (deps, _) = common::dry_deps(&settings);
    let result = JobHunter::new(deps.with_model(Arc::new(model.clone())), settings.clone())
        .run(RunConfig {
            resume_path: garbage.clone(),
            ..common::config("bad-resume", &settings)
        })
        .await
        .unwrap();
    assert_eq!(result.status, RunStatus::Failed);
    let reason = result.reason.unwrap();
    assert!(reason.contains("resume.pdf"), "{reason}");
    assert_eq!(model.call_count(), 0);
    assert!(result.state.issues.iter().any(|i| i.fatal));
    assert!(result.state.output_files.is_empty());
}

#[tokio::test]
async fn a_resume_with_almost_no_text_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let settings = common::settings(dir.path());
    let thin = dir.path().join("resume.txt");
    std::fs::write(&thin, "Jane Doe\nEngineer\n").unwrap();
    let (deps, _) = common::dry_deps(&settings);
    let result = JobHunter::new(deps, settings.clone())
        .run(RunConfig {
            resume_path: thin,
            ..common::config("thin-resume", &settings)
        })
        .await
        .unwrap();
    assert_eq!(result.status, RunStatus::Failed);
    assert!(result.reason.unwrap().contains("a resume needs at least"));
}

#[tokio::test]
async fn a_model_that_never_answers_in_shape_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let settings = common::settings(dir.path());
    let model = ScriptedModel::from_texts(["not json", "still not json", "{\"name\": 3}"]);
    let (deps, _) = common::dry_deps(&settings);
    let result = JobHunter::new(deps.with_model(Arc::new(model.clone())), settings.clone())
        .run(common::config("bad-model", &settings))
        .await
        .unwrap();
    assert_eq!(result.status, RunStatus::Failed);
    assert!(
        result
            .reason
            .as_deref()
            .unwrap()
            .contains("could not extract the profile"),
        "{:?}",
        result.reason
    );
    // Three attempts, all counted.
    assert_eq!(model.call_count(), 3);
    assert_eq!(result.cost.calls, 3);
}

#[tokio::test]
async fn a_step_that_outlives_its_timeout_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        agent_timeout: Duration::from_millis(200),
        ..common::settings(dir.path())
    };
    let model = job_hunter::dry_run::recorded_model(&common::fixtures()).unwrap();
    let slow = LatencyModel::new(model, Duration::from_secs(5));
    let (deps, _) = common::dry_deps(&settings);
    let result = JobHunter::new(deps.with_model(Arc::new(slow)), settings.clone())
        .run(common::config("timeout", &settings))
        .await
        .unwrap();
    assert_eq!(result.status, RunStatus::Failed);
    let reason = result.reason.unwrap();
    assert!(
        reason.contains("parse_resume") && reason.contains("timed out"),
        "{reason}"
    );
}

#[tokio::test]
async fn a_checkpoint_store_that_cannot_write_is_an_error_not_a_status() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the checkpoint directory should be.
    let blocked = dir.path().join("checkpoints");
    std::fs::write(&blocked, b"not a directory").unwrap();
    let settings = Settings {
        checkpoint_dir: blocked,
        ..common::settings(dir.path())
    };
    let (deps, _) = common::dry_deps(&settings);
    let error = JobHunter::new(deps, settings.clone())
        .run(common::config("no-checkpoints", &settings))
        .await
        .unwrap_err();
    assert!(
        matches!(error, job_hunter::HuntError::Checkpoint(_)),
        "{error}"
    );
}

#[tokio::test]
async fn a_checkpoint_that_cannot_be_written_after_a_step_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let settings = common::settings(dir.path());
    let checkpoints = settings.checkpoint_dir.clone();
    // Once the first step has run (its checkpoint not yet written), a file takes the
    // checkpoint directory's place.
    let deps = job_hunter::Deps::dry_run(&common::fixtures(), &settings, None)
        .unwrap()
        .with_events(Arc::new(move |event: HuntEvent| {
            if matches!(&event, HuntEvent::StepFinished { step, .. } if step == "parse_resume") {
                std::fs::remove_dir_all(&checkpoints).unwrap();
                std::fs::write(&checkpoints, b"not a directory").unwrap();
            }
        }));
    let error = JobHunter::new(deps, settings.clone())
        .run(common::config("lost-checkpoints", &settings))
        .await
        .unwrap_err();
    let job_hunter::HuntError::CheckpointWrite { run_id, reason } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(run_id, "lost-checkpoints");
    assert!(reason.contains("parse_resume"), "{reason}");
    // The run stopped there.
    assert!(!settings.output_dir.exists());
}

/// The dry run's recorded model, except that every scoring answer scores nothing.
struct NoScores(Arc<dyn agent_llm::ChatModel>);

#[async_trait::async_trait]
impl agent_llm::ChatModel for NoScores {
    async fn chat(
        &self,
        request: &agent_llm::ChatRequest,
    ) -> Result<agent_llm::ChatResponse, agent_llm::LlmError> {
        let scoring = matches!(
            &request.tool_choice,
            Some(agent_llm::ToolChoice::Tool { name }) if name == "BatchScoreResult"
        );
        if scoring {
            return Ok(agent_llm::testing::responses::tool_call(
                "t",
                "BatchScoreResult",
                serde_json::json!({"scores": []}),
            ));
        }
        self.0.chat(request).await
    }
}

#[tokio::test]
async fn a_run_that_scores_no_job_ends_partial_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let settings = common::settings(dir.path());
    let (mut deps, _) = common::dry_deps(&settings);
    deps.model = Arc::new(NoScores(deps.model.clone()));
    let result = JobHunter::new(deps, settings.clone())
        .run(common::config("unscored", &settings))
        .await
        .unwrap();
    assert_eq!(result.status, RunStatus::Partial, "{:?}", result.reason);
    let reason = result.reason.as_deref().unwrap();
    assert!(
        reason.starts_with("no job was scored: the model's scores of all")
            && reason.contains(&result.state.jobs.len().to_string()),
        "{reason}"
    );
    assert!(result.state.scored.is_empty() && !result.state.jobs.is_empty());
    // Every step ran; the reason is among the run's issues, beside one per job unscored.
    assert_eq!(result.steps_run.len(), 8);
    assert!(
        result
            .state
            .issues
            .iter()
            .any(|i| i.kind == "partial" && i.message == reason)
    );
    assert_eq!(
        result
            .state
            .issues
            .iter()
            .filter(|i| i.message == "the model returned no score for this job")
            .count(),
        result.state.jobs.len()
    );
}
