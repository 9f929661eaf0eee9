//! Two `resume_server --backend postgres+nats` instances with sessions running while
//! PostgreSQL and then NATS are stopped for two seconds and started again: every session
//! completes, and each, replayed from event 0, has every event of an uninterrupted
//! session once (`examples/clients/resume_faults_check.py`, run against the example
//! binary). Once on a PostgreSQL (`initdb`) and a NATS server of the check's own, on free
//! ports; once on the machine's own, restarted as an operator would (`service postgresql
//! stop`/`start`, the nats-server process stopped and started again). No other test
//! runs meanwhile (`.config/nextest.toml` gives these tests every test thread).
#![cfg(test)]

mod support;

use support::examples::{example, python_client};

/// Runs the check on `servers` (`own` or `machine`) and asserts what it checks.
fn check_restarts(servers: &str) {
    let work = tempfile::tempdir().unwrap();
    let binary = example("resume_server");
    let printed = python_client(
        "resume_faults_check.py",
        &[
            binary.as_ref(),
            work.path().as_ref(),
            "12".as_ref(),
            "40".as_ref(),
            "2".as_ref(),
            servers.as_ref(),
        ],
    );
    for check in [
        "ok   every session completes",
        "ok   replayed from 0, ids are 1, 2, 3, ... in every session",
        "ok   each session has the events of an uninterrupted one, each once",
        "ok   the clients saw every id once",
    ] {
        assert!(printed.contains(check), "{printed}");
    }
}

#[test]
fn sessions_lose_nothing_when_postgres_and_then_nats_restart_under_them() {
    check_restarts("own");
}

#[test]
fn sessions_lose_nothing_when_the_machines_postgres_and_nats_restart_under_them() {
    check_restarts("machine");
}
