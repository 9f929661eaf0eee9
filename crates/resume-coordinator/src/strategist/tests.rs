//! The Strategist's phases are limited in code, not only in its prompt: each phase offers
//! only its tools, and questions are counted across the session.

use agent_llm::{ModelRouter, ProviderKind};
use agent_runtime::{AgentIdentity, Session};
use serde_json::{Value, json};

use super::tools::{MAX_POSITIONING_QUESTIONS, interview_candidate, interview_candidate_batch};
use super::{StrategistPhase, strategist};
use crate::dry_run::approve_all;
use crate::types::{ResumeEvent, ResumeState};

fn sample_body() -> Value {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/resume");
    crate::dry_run::sample_body(&fixtures).unwrap()
}

#[test]
fn each_phase_offers_only_its_own_tools() {
    let router = ModelRouter::for_provider(ProviderKind::Local);
    let offered = |phase| {
        let config = strategist(&router, phase);
        let names: Vec<String> = config.tools.iter().map(|t| t.name().to_owned()).collect();
        (names, config.max_rounds)
    };
    assert_eq!(
        offered(StrategistPhase::Research),
        (vec!["analyze_jd".into(), "research_company".into()], 4)
    );
    assert_eq!(
        offered(StrategistPhase::Interview),
        (vec!["interview_candidate_batch".into()], 3)
    );
    assert_eq!(
        offered(StrategistPhase::GapAnalysis),
        (vec!["analyze_gaps".into(), "interview_candidate".into()], 6)
    );
    assert_eq!(
        offered(StrategistPhase::Blueprint),
        (vec!["design_blueprint".into()], 3)
    );
}

/// A session whose gates are all answered as soon as they open.
fn answered_session() -> Session<ResumeState, ResumeEvent> {
    let start = crate::product::parse_start(&sample_body()).unwrap();
    let session = Session::new("s", ResumeState::new(&start));
    let gates = session.gates().clone();
    tokio::spawn(async move {
        loop {
            let gate = gates.next_pending().await;
            let answer = approve_all(&gate.name, &gate.payload);
            let _ = gates.respond(&gate.id, answer);
        }
    });
    session
}

#[tokio::test]
async fn gap_questions_and_questionnaires_are_counted_across_the_session() {
    let session = answered_session();
    let ctx = session.context(AgentIdentity::new("strategist", "resume"));
    let ask = interview_candidate();
    let question = json!({"question": "Did you run Kafka?", "why": "a must-have"});
    for _ in 0..MAX_POSITIONING_QUESTIONS {
        ask.execute(&question, &ctx).await.unwrap();
    }
    let refused = ask.execute(&question, &ctx).await.unwrap_err();
    assert!(
        refused.to_string().contains("the most allowed"),
        "{refused}"
    );
    assert_eq!(
        session.state().read(|s| s.positioning_asked),
        MAX_POSITIONING_QUESTIONS
    );

    let batch = interview_candidate_batch();
    let questions = json!({"questions": ["One?", "Two?"]});
    batch.execute(&questions, &ctx).await.unwrap();
    let again = batch.execute(&questions, &ctx).await.unwrap_err();
    assert!(again.to_string().contains("already answered"), "{again}");
    let too_many = json!({"questions": ["1?", "2?", "3?", "4?", "5?"]});
    assert!(batch.execute(&too_many, &ctx).await.is_err());
}
