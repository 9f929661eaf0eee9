//! Shared helpers for the job-hunter tests: recorded fixtures, a sandbox directory,
//! settings for tests, and a real SMTP server (aiosmtpd) on loopback.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod llm_steps;
pub mod rig;
pub mod steps;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_runtime::CollectingSink;
use job_hunter::{Deps, HuntEvent, HuntResult, JobHunter, RunConfig, Settings};

/// `fixtures/job-hunter` at the workspace root.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/job-hunter")
}

/// The recorded preferences text.
pub fn prefs() -> String {
    std::fs::read_to_string(fixtures().join("prefs.txt")).unwrap()
}

/// Settings for tests: checkpoints and outputs in `dir`, no host spacing.
pub fn settings(dir: &Path) -> Settings {
    Settings {
        checkpoint_dir: dir.join("checkpoints"),
        output_dir: dir.join("output"),
        host_interval: Duration::ZERO,
        ..Settings::default()
    }
}

/// A run of the recorded resume and preferences.
pub fn config(run_id: &str, settings: &Settings) -> RunConfig {
    RunConfig {
        run_id: run_id.into(),
        resume_path: fixtures().join("resume.txt"),
        preferences: prefs(),
        output_dir: settings.output_dir.clone(),
    }
}

/// Dry-run services with events collected.
pub fn dry_deps(settings: &Settings) -> (Deps, CollectingSink<HuntEvent>) {
    let sink = CollectingSink::default();
    let deps = Deps::dry_run(&fixtures(), settings, None)
        .unwrap()
        .with_events(Arc::new(sink.clone()));
    (deps, sink)
}

/// Runs the dry run to the end.
pub async fn dry_run(run_id: &str, settings: &Settings) -> HuntResult {
    let (deps, _) = dry_deps(settings);
    JobHunter::new(deps, settings.clone())
        .run(config(run_id, settings))
        .await
        .unwrap()
}

/// The ranking: (url, score) best first.
pub fn ranking(result: &HuntResult) -> Vec<(String, u8)> {
    result
        .state
        .scored
        .iter()
        .map(|s| (s.job.url.clone(), s.score))
        .collect()
}

/// The `.eml` files in `dir`.
pub fn eml_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "eml"))
                .collect()
        })
        .unwrap_or_default()
}

#[allow(unused_imports)] // Not every test binary sends mail.
pub use job_capabilities::mail::testing::SmtpServer;
