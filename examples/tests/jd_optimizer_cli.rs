//! The `jd_optimizer` example as a user runs it on the dry run: `optimize --json` prints
//! the result, `--docx` writes a document that reads back, `interview --letter` writes
//! questions and a letter, and a job description that cannot be analysed exits 2 with a
//! clear message and no model call.
#![cfg(test)]

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use support::examples::run_example;

fn pair(name: &str, file: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/jd-optimizer/pairs")
        .join(name)
        .join(file)
        .display()
        .to_string()
}

const DEADLINE: Duration = Duration::from_secs(60);

#[test]
fn optimize_prints_the_result_and_writes_a_docx_that_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let docx = dir.path().join("out.docx");
    let (resume, jd) = (pair("staff-ml", "resume.txt"), pair("staff-ml", "jd.txt"));
    let run = run_example(
        "jd_optimizer",
        &[
            "optimize",
            "--resume",
            &resume,
            "--jd",
            &jd,
            "--dry-run",
            "--json",
            "--docx",
            docx.to_str().unwrap(),
        ],
        &[],
        DEADLINE,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let result: Value = serde_json::from_str(&run.stdout).unwrap();
    let (kept, baseline) = (
        result["ats_score"].as_f64().unwrap(),
        result["baseline_score"].as_f64().unwrap(),
    );
    assert!(kept >= 0.75 && kept >= baseline, "{result}");
    assert_eq!(result["kept_attempt"], 1);
    assert!(
        run.stderr
            .contains("the resume as it is 77.0 on that scale"),
        "{}",
        run.stderr
    );
    // The document is the resume: its contact line, role lines with dates, education, the
    // bullet the rewrite left out, and the rewrites in place.
    let text = job_capabilities::documents::read_resume_text(&docx).unwrap();
    for line in [
        "elena.garcia@example.com | Barcelona, Spain",
        "Principal ML Engineer, Vistaloop (2018 - present)",
        "ML Engineer, Datafirma (2014 - 2018)",
        "M.Sc. Artificial Intelligence, Universitat Politecnica de Catalunya, 2014",
        "Built recommendation models in Python and scikit-learn for 2 million users",
        "Served ranking models with Triton on Kubernetes",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
}

#[test]
fn interview_writes_ten_questions_and_a_letter() {
    let (resume, jd) = (
        pair("senior-sre", "resume.txt"),
        pair("senior-sre", "jd.txt"),
    );
    let run = run_example(
        "jd_optimizer",
        &[
            "interview",
            "--resume",
            &resume,
            "--jd",
            &jd,
            "--dry-run",
            "--letter",
            "--tone",
            "formal",
        ],
        &[],
        DEADLINE,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("10. [Situational"), "{}", run.stdout);
    assert!(
        run.stdout.contains("cover letter (Formal, 291 words)"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_job_description_too_short_exits_2_before_any_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let jd = dir.path().join("jd.txt");
    std::fs::write(&jd, "Rust dev").unwrap();
    let resume = pair("senior-sre", "resume.txt");
    let run = run_example(
        "jd_optimizer",
        &[
            "optimize",
            "--resume",
            &resume,
            "--jd",
            jd.to_str().unwrap(),
            "--dry-run",
        ],
        &[],
        DEADLINE,
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("refused: the job description is too short: 8 characters"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("jd_analysis"));
}

#[test]
fn with_redis_url_a_second_process_reuses_the_first_ones_analysis() {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let env = [("REDIS_URL".to_owned(), url)];
    // A tenant of this run alone, so an earlier run's cache cannot answer the first time.
    let tenant = format!(
        "cli-test-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap()
    );
    let (resume, jd) = (
        pair("senior-sre", "resume.txt"),
        pair("senior-sre", "jd.txt"),
    );
    let args = [
        "optimize",
        "--resume",
        &resume,
        "--jd",
        &jd,
        "--dry-run",
        "--tenant",
        &tenant,
    ];
    let first = run_example("jd_optimizer", &args, &env, DEADLINE);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert!(
        first.stderr.contains("caches in Redis at"),
        "{}",
        first.stderr
    );
    assert!(
        first.stdout.contains("cache: JD analysis miss"),
        "{}",
        first.stdout
    );
    let second = run_example("jd_optimizer", &args, &env, DEADLINE);
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    assert!(
        second.stdout.contains("cache: JD analysis hit"),
        "{}",
        second.stdout
    );
    assert!(
        second.stderr.contains("✓ jd_analysis: 0 call(s)"),
        "{}",
        second.stderr
    );
}
