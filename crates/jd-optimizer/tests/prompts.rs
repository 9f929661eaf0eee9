//! What each agent is sent, pinned: the system prompt, the compact user prompt, the
//! answer's schema, the sampling settings and the model tier.
#![cfg(test)]

mod common;

use common::{
    Script, agent_of, gap_answer, helm_analysis, optimizer, pair, rewrite_with_a_thin_bullet, run,
};
use serde_json::json;

/// The answer's schema as sent: the forced tool's or the response format's.
fn answer_schema(request: &agent_llm::ChatRequest) -> String {
    match (&request.tools[..], &request.response_format) {
        ([tool], _) => tool.input_schema.to_string(),
        (_, Some(agent_llm::ResponseFormat::JsonSchema { schema, .. })) => schema.to_string(),
        _ => String::new(),
    }
}

#[tokio::test]
async fn every_agents_request_is_pinned() {
    // A rewrite better than the resume but for one thin bullet, under a high bar: it
    // is scored, its thin bullet repaired, scored again.
    let (analysis, thin_rewrite) = (helm_analysis(), rewrite_with_a_thin_bullet());
    let script = Script::new()
        .json("analyzer", analysis)
        .json("rewriter", thin_rewrite)
        .json("scorer", json!({"original": {"keywords": 0.6, "skills": 0.6}, "rewrite": {"keywords": 0.7, "skills": 0.6}}))
        .json("repair", json!({"bullets": [{"replaces": "B3", "text": "Built Prometheus and Grafana alerting for the Kubernetes platform that cut mean time to detect from 25 to 4 minutes", "sources": ["C2"]}]}))
        .json("scorer", json!({"keywords": 0.8, "skills": 0.7}))
        .json("gap", gap_answer());
    let (optimizer, model) = optimizer(&script);
    let mut request = pair("senior-sre");
    request.config.score_threshold = 0.9;
    let (outcome, events) = run(&optimizer, &request).await;
    let done = outcome.unwrap();
    assert_eq!(done.result.kept_attempt, 2, "{events:?}");
    let mut seen = Vec::new();
    for request in model.requests() {
        let agent = agent_of(&request);
        let n = seen.iter().filter(|a| **a == agent).count() + 1;
        seen.push(agent);
        let text = format!(
            "model: {:?}\ntemperature: {:?}\nmax_tokens: {:?}\n--- system\n{}\n--- user\n{}\n--- schema\n{}",
            request.model,
            request.temperature,
            request.max_tokens,
            request.system.clone().unwrap_or_default(),
            request.messages[0].text(),
            answer_schema(&request),
        );
        insta::assert_snapshot!(format!("{agent}_{n}"), text);
    }
    assert_eq!(seen, ["analyzer", "rewriter", "repair", "gap"]);
    // The gap model is not asked for priorities: Go's follows from its weight, 0.65.
    let gaps = &done.result.gap_report;
    assert_eq!(gaps.missing_skills, ["Go"]);
    assert_eq!(
        gaps.priority,
        [("Go".to_owned(), jd_optimizer::records::Priority::Medium)].into()
    );
}

/// An analysis too thin for the rules to be sure of: the model scores the resume's own
/// bullets beside the rewrite's, in one call.
#[tokio::test]
async fn the_model_scorer_is_pinned_scoring_the_original_beside_the_rewrite() {
    let thin = json!({"hard_skills": {"Kubernetes": 0.9}, "soft_skills": [], "responsibilities": [],
                      "qualifications": []});
    let both = json!({"original": {"keywords": 0.6, "skills": 0.6, "experience": 0.5, "formatting": 0.8},
                      "rewrite": {"keywords": 0.8, "skills": 0.7, "experience": 0.7, "formatting": 0.9}});
    let script = Script::new()
        .json("analyzer", thin)
        .json("rewriter", common::sre_rewrite())
        .json("scorer", both);
    let (optimizer, model) = optimizer(&script);
    let (outcome, _) = run(&optimizer, &pair("senior-sre")).await;
    let result = outcome.unwrap().result;
    assert_eq!(result.kept_attempt, 1);
    assert!(result.baseline_score < result.ats_score);
    let request = model
        .requests()
        .into_iter()
        .find(|r| agent_of(r) == "scorer")
        .unwrap();
    let text = format!(
        "max_tokens: {:?}\n--- user\n{}",
        request.max_tokens,
        request.messages[0].text()
    );
    insta::assert_snapshot!("scorer_1", text);
}

#[tokio::test]
async fn without_a_missing_skill_the_gap_model_is_not_asked_and_qualifications_are_checked_by_code()
{
    // Every hard skill is in the SRE resume; only a qualification is not.
    let analysis = json!({
        "hard_skills": {"Kubernetes": 0.95, "AWS": 0.85, "Terraform": 0.85, "Prometheus": 0.7},
        "soft_skills": [],
        "responsibilities": ["Run the Kubernetes platform on AWS"],
        "qualifications": ["PhD in Computer Science"]
    });
    let script = Script::new()
        .json("analyzer", analysis)
        .json("rewriter", common::sre_rewrite())
        .json("gap", gap_answer());
    let (optimizer, model) = optimizer(&script);
    let (outcome, _) = run(&optimizer, &pair("senior-sre")).await;
    let done = outcome.unwrap();
    let asked: Vec<&str> = model.requests().iter().map(agent_of).collect();
    assert!(!asked.contains(&"gap"), "{asked:?}");
    let gaps = &done.result.gap_report;
    assert!(gaps.missing_skills.is_empty(), "{gaps:?}");
    assert_eq!(gaps.missing_qualifications.len(), 1, "{gaps:?}");
    assert!(gaps.missing_qualifications[0].contains("PhD"), "{gaps:?}");
}
