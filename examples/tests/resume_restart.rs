//! `resume_server --dry-run --latency` killed with SIGKILL in the middle of the Craftsman
//! stage and started again on the same SQLite file: the session completes with the model
//! calls of an uninterrupted session and every event once
//! (`examples/clients/resume_restart_check.py`, run against the example binary).
#![cfg(test)]

mod support;

use support::examples::{example, python_client};

#[test]
fn a_server_killed_mid_stage_resumes_with_nothing_paid_or_shown_twice() {
    let work = tempfile::tempdir().unwrap();
    let binary = example("resume_server");
    let printed = python_client(
        "resume_restart_check.py",
        &[
            binary.as_ref(),
            work.path().as_ref(),
            "150".as_ref(),
            "1.2".as_ref(),
        ],
    );
    assert!(
        printed.contains("ok   at most one model call repeated"),
        "{printed}"
    );
}
