//! `llm_chat` live against the real small model this machine runs (see
//! `support::local_model`): the protocol and the guards, never the model's judgement.
#![cfg(test)]

mod support;

use serde_json::Value;
use std::time::Duration;
use support::examples::run_example;
use support::local_model::local_model;

/// The last line `llm_chat` prints: one JSON object.
fn summary(stdout: &str) -> Value {
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn a_tool_question_runs_the_tool_loop_and_reports_the_served_model_once_unpriced() {
    let model = local_model();
    let run = run_example(
        "llm_chat",
        &[
            "--max-rounds",
            "4",
            "What time is it in Tokyo? Use the tool.",
        ],
        &model.env,
        Duration::from_secs(300),
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    // The banner names the model that serves, read from the server, and its window.
    let banner = run.stdout.lines().next().unwrap();
    assert!(banner.contains(model.model_id()), "{banner}");
    assert!(banner.contains("context window"), "{banner}");
    assert!(banner.contains("one call at a time"), "{banner}");
    let summary = summary(&run.stdout);
    assert!(summary["llm_calls"].as_u64().unwrap() >= 1, "{summary}");
    assert!(summary["total_tokens"].as_u64().unwrap() > 0, "{summary}");
    assert_eq!(summary["cost_usd"], Value::Null, "{summary}");
    assert_eq!(summary["unpriced_models"][0], model.model_id(), "{summary}");
    // Reported once, however many calls.
    assert_eq!(
        run.stderr.matches("no price for this model").count(),
        1,
        "{}",
        run.stderr
    );
}

#[test]
fn a_typed_answer_is_json_of_the_schema_and_a_free_model_costs_nothing() {
    let model = local_model();
    let key: String = model
        .model_id()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    let mut env = model.env.clone();
    env.push((format!("LLM_PRICE_{key}"), "free".into()));
    let run = run_example(
        "llm_chat",
        &["--extract", "What is the capital of France?"],
        &env,
        Duration::from_secs(300),
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let summary = summary(&run.stdout);
    assert!(summary["answer"]["answer"].is_string(), "{summary}");
    assert!(summary["answer"]["confidence"].is_number(), "{summary}");
    assert_eq!(summary["cost_usd"].as_f64(), Some(0.0), "{summary}");
    assert_eq!(
        summary["unpriced_models"],
        serde_json::json!([]),
        "{summary}"
    );
    assert!(!run.stderr.contains("no price"), "{}", run.stderr);
}
