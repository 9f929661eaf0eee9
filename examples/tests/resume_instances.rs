//! Two `resume_server --backend postgres+nats` instances on the real PostgreSQL and NATS
//! (`POSTGRES_URL`, `NATS_URL`, else the machine's servers, which `cargo xtask test`
//! starts): a session started on one, streamed from the other, its gates answered on
//! either; the instance running it killed with SIGKILL mid-stage, and the survivor
//! finishes it with no model call repeated beyond the one in flight and every event
//! delivered once to the client that reconnects to it
//! (`examples/clients/resume_instances_check.py`, run against the example binary).
#![cfg(test)]

mod support;

use support::examples::{example, python_client};

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|value| !value.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

#[test]
fn a_session_survives_the_instance_running_it_being_killed() {
    let work = tempfile::tempdir().unwrap();
    let binary = example("resume_server");
    let database = env_or("POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test");
    let nats = env_or("NATS_URL", "nats://127.0.0.1:4222");
    let printed = python_client(
        "resume_instances_check.py",
        &[
            binary.as_ref(),
            work.path().as_ref(),
            database.as_ref(),
            nats.as_ref(),
            "150".as_ref(),
            "1.2".as_ref(),
        ],
    );
    assert!(
        printed.contains("ok   at most one model call repeated"),
        "{printed}"
    );
    assert!(
        printed.contains("ok   the client saw ids 1, 2, 3, ... each once"),
        "{printed}"
    );
}
