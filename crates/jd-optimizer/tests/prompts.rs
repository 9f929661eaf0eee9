#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! What each agent is sent, pinned: the system prompt, the compact user prompt, the
//! sampling settings and the model tier.

mod common;

use common::{Script, agent_of, gap_answer, optimizer, pair, run, sre_analysis};
use serde_json::json;

#[tokio::test]
async fn every_agents_request_is_pinned() {
    let thin_rewrite = json!({"bullets": [
        {"text": "Operated 14 Kubernetes clusters on AWS serving 2,500 pods across 3 regions", "sources": ["C2"]},
        {"text": "Wrote modules for 60 accounts", "sources": ["C2"]}
    ]});
    let script = Script::new()
        .json("analyzer", sre_analysis())
        .json("rewriter", thin_rewrite)
        .json("scorer", json!({"keywords": 0.7, "skills": 0.6}))
        .json("repair", json!({"bullets": [{"replaces": "B2", "text": "Wrote Terraform modules for 60 AWS accounts, replacing hand-made console setups", "sources": ["C2"]}]}))
        .json("scorer", json!({"keywords": 0.8, "skills": 0.7}))
        .json("gap", gap_answer());
    let (optimizer, model) = optimizer(&script);
    let (outcome, _) = run(&optimizer, &pair("senior-sre")).await;
    outcome.unwrap();
    let mut seen = Vec::new();
    for request in model.requests() {
        let agent = agent_of(&request);
        let n = seen.iter().filter(|a| **a == agent).count() + 1;
        seen.push(agent);
        let text = format!(
            "model: {:?}\ntemperature: {:?}\nmax_tokens: {:?}\n--- system\n{}\n--- user\n{}",
            request.model,
            request.temperature,
            request.max_tokens,
            request.system.clone().unwrap_or_default(),
            request.messages[0].text()
        );
        insta::assert_snapshot!(format!("{agent}_{n}"), text);
    }
    assert_eq!(
        seen,
        ["analyzer", "rewriter", "scorer", "repair", "scorer", "gap"]
    );
}
