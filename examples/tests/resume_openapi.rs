//! `GET /api/resume/openapi.json` of the `resume_server` example is a valid OpenAPI 3.1
//! document whose schemas accept every event of a whole dry-run session (58, the
//! Producer's revision shown again included), every answer the documented client gives
//! and the result (`examples/clients/openapi_check.py`, with Python's
//! `openapi-spec-validator` and `jsonschema`, which `.ci/run` installs).
#![cfg(test)]

mod support;

use support::examples::{python_client, resume_server};

#[test]
fn the_published_schemas_accept_everything_a_session_sends_and_takes() {
    let dir = tempfile::tempdir().unwrap();
    let server = resume_server(&dir.path().join("sessions.db"));
    let printed = python_client("openapi_check.py", &[server.url.as_ref()]);
    assert!(
        printed.contains("checked 58 events, 6 gate kinds"),
        "{printed}"
    );
}
