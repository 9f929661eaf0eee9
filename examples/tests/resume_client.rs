//! A client written from `docs/resume-api.md` alone (`examples/clients/resume_client.py`,
//! Python's standard library only) completes a session against the `resume_server`
//! example, run as a user runs it (`--dry-run`, a SQLite file, any free port).
#![cfg(test)]

mod support;

use support::examples::{complete_resume_session, resume_server};

#[test]
fn the_python_client_completes_a_dry_run_session() {
    let dir = tempfile::tempdir().unwrap();
    let server = resume_server(&dir.path().join("sessions.db"));
    assert!(
        server.banner[0].starts_with("DRY RUN:"),
        "{:?}",
        server.banner
    );

    let out = dir.path().join("resume.docx");
    let printed = complete_resume_session(&server.url, &out);
    assert!(
        printed.contains("gate_open") && printed.contains("session_complete"),
        "{printed}"
    );
    // Both roles and the degree of the fixture resume, as headings, in order.
    assert!(
        printed.contains("the DOCX keeps the name and 3 dated line(s) as headings, in order"),
        "{printed}"
    );
    let docx = std::fs::read(&out).unwrap();
    assert!(docx.starts_with(b"PK"));
    drop(server);
}
