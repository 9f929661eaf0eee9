//! `jd_optimizer optimize` live against the real small model this machine runs, on a
//! resume and a job description written here (not one of the fixture pairs): the run
//! ends with a result or a one-line reason; a result never scores below the resume as
//! it is, on the same scale, and its DOCX is the resume line for line with the rewrites
//! in place. The protocol and the guards, never the model's judgement.
#![cfg(test)]

mod support;

use std::time::Duration;

use job_capabilities::documents::{read_resume_text, strip_bullet};
use serde_json::Value;
use support::examples::run_example;
use support::local_model::local_model;

const RESUME: &str = "Priya Raman
priya.raman@example.net | +1 415 555 0199 | San Francisco, CA | github.com/priyar

PROFILE
Data engineer who builds reliable pipelines for analytics and machine learning teams.

EXPERIENCE
Senior Data Engineer — Cobalt Health, San Francisco | 2020 – Present
• Rebuilt the nightly ETL in Airflow and dbt, cutting failures from 12 to 1 a month
• Moved 30 TB of claims data from Redshift to Snowflake with zero downtime
• Wrote data quality checks with Great Expectations covering 140 tables
Data Engineer — Parcelbird, Oakland | 2017 – 2020
• Built Kafka consumers in Python that ingested 3 million tracking events a day
• Designed the warehouse star schema used by 25 dashboards in Looker

SKILLS
Python, SQL, Airflow, dbt, Snowflake, Redshift, Kafka, Spark, Looker, AWS

EDUCATION
B.S. Statistics, UC Davis, 2017
";

const JD: &str = "Staff Data Engineer - Meridian Bank

Responsibilities
- Design and operate batch pipelines with Airflow and dbt on Snowflake
- Build streaming ingestion with Kafka and Spark Structured Streaming
- Define data quality standards and monitoring
- Mentor data engineers and lead design reviews

Requirements
- 8+ years of data engineering experience
- Expert SQL and Python
- Master's degree in Computer Science preferred
";

#[test]
fn a_live_optimization_never_offers_less_than_the_resume_and_keeps_its_every_line() {
    let model = local_model();
    let dir = tempfile::tempdir().unwrap();
    let (resume, jd, docx) = (
        dir.path().join("resume.txt"),
        dir.path().join("jd.txt"),
        dir.path().join("out.docx"),
    );
    std::fs::write(&resume, RESUME).unwrap();
    std::fs::write(&jd, JD).unwrap();
    let run = run_example(
        "jd_optimizer",
        &[
            "optimize",
            "--resume",
            resume.to_str().unwrap(),
            "--jd",
            jd.to_str().unwrap(),
            "--json",
            "--docx",
            docx.to_str().unwrap(),
            "--max-seconds",
            "480",
            "--max-tokens",
            "16000",
        ],
        &model.env,
        Duration::from_secs(600),
    );
    if run.code != Some(0) {
        // A weak model may fail the analysis or the first rewrite: then with one line.
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        let reason = run.stderr.lines().last().unwrap_or_default();
        assert!(
            reason.starts_with("the optimization failed: "),
            "{}",
            run.stderr
        );
        return;
    }
    let result: Value = serde_json::from_str(&run.stdout).unwrap();
    let score = |v: &Value| v.as_f64().unwrap();
    assert!(
        score(&result["ats_score"]) >= score(&result["baseline_score"]),
        "{result}"
    );
    let kept = result["kept_attempt"].as_u64().unwrap();
    let gain = |a: &Value| score(&a["score"]) - score(&a["baseline"]);
    let attempts = result["attempts"].as_array().unwrap();
    let kept_gain = attempts
        .iter()
        .find(|a| a["attempt"].as_u64() == Some(kept))
        .map(gain)
        .unwrap();
    assert!(attempts.iter().all(|a| gain(a) <= kept_gain + 1e-12));
    // Every line of the resume is in the DOCX: as written, or as the rewrite that
    // replaced it.
    let text = read_resume_text(&docx).unwrap();
    let rewrites = result["optimized_bullets"].as_array().unwrap();
    for line in RESUME.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let own = strip_bullet(line);
        let expected = rewrites
            .iter()
            .find(|b| b["original"] == own)
            .map_or(own, |b| b["text"].as_str().unwrap());
        assert!(
            text.contains(expected),
            "{expected:?} not in the DOCX:\n{text}"
        );
    }
}
