//! Chat clients people already use, unchanged, against `job_agent_chat serve --dry-run`
//! run as a user runs it: the official `openai` Python client (whole and streamed
//! conversations, `/v1/models`; `examples/clients/job_chat_check.py`) and Simon
//! Willison's `llm` command line, configured as an OpenAI-compatible model, continuing a
//! conversation with `-c` (`pip install openai llm`; `cargo xtask test` installs both).
#![cfg(test)]

mod support;

use std::process::Command;

use support::examples::{job_chat_server, python_client};

#[test]
fn the_openai_python_client_completes_the_conversation_whole_and_streamed() {
    let server = job_chat_server();
    assert!(
        server.banner.iter().any(|l| l.contains("loopback only")),
        "{:?}",
        server.banner
    );
    let printed = python_client("job_chat_check.py", &[server.url.as_ref()]);
    assert!(
        printed.contains("ok: the openai client completed both conversations"),
        "{printed}"
    );
}

#[test]
fn the_openai_python_client_gives_a_pdf_resume_to_its_own_user_only() {
    let server = job_chat_server();
    let pdf = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/realdata/docs/open-resume/openresume-resume.pdf");
    let printed = python_client(
        "job_chat_resume_check.py",
        &[server.url.as_ref(), pdf.as_os_str()],
    );
    assert!(
        printed.contains("skills are in its owner's profile only"),
        "{printed}"
    );
}

#[test]
fn the_llm_command_line_chats_with_it() {
    let server = job_chat_server();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("extra-openai-models.yaml"),
        format!(
            "- model_id: job-agent\n  model_name: job-agent\n  api_base: \"{}\"\n",
            server.url
        ),
    )
    .unwrap();
    let llm = |args: &[&str]| {
        let out = Command::new("llm")
            .args(args)
            .env("LLM_USER_PATH", home.path())
            .env("OPENAI_API_KEY", "local")
            .output()
            .expect("the `llm` command runs (pip install llm)");
        let printed = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{printed}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        printed
    };
    let found = llm(&[
        "-m",
        "job-agent",
        "Find Rust backend engineer jobs in Berlin",
    ]);
    assert!(
        found.contains("> search jobs …") && found.contains("I found 4 jobs"),
        "{found}"
    );
    let profile = llm(&[
        "-c",
        "I know Rust, PostgreSQL and Kafka, I want a backend engineer role in Berlin, at least 70000 EUR a year. My email is ada@example.com",
    ]);
    assert!(profile.contains("Your profile is saved"), "{profile}");
    let ranked = llm(&[
        "-c",
        "Save the Tidewater and Kestrel jobs and rank my saved jobs",
    ]);
    assert!(ranked.contains("Ranked against your profile"), "{ranked}");
    let prepared = llm(&["-c", "Prepare an application for the Tidewater job"]);
    assert!(
        prepared.contains("> routed to application prep") && prepared.contains("Cover letter"),
        "{prepared}"
    );
}
