//! Interview preparation from a completed optimization: the checks on questions and
//! letters, the re-ask, the cache per session and tone, the memory profile.
#![cfg(test)]

mod common;

use std::sync::Arc;

use agent_runtime::Session;
use agent_runtime::checkpoint::{CheckpointStore, InMemoryCheckpointStore};
use agent_runtime::documents::InMemoryDocumentStore;
use agent_runtime::graph::RunOptions;
use common::{Script, agent_of, gap_answer, optimizer, pair, run, sre_analysis, sre_rewrite};
use jd_optimizer::interview::cover_letter::Tone;
use jd_optimizer::interview::memory::MemoryStore;
use jd_optimizer::interview::{InterviewError, InterviewRequest};
use jd_optimizer::product::{Preparation, preparation};
use jd_optimizer::state::OptimizationState;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn question(category: &str, answer: &str) -> Value {
    json!({"category": category, "question_text": format!("A {category} question?"),
           "suggested_answer": answer, "difficulty": "medium"})
}

fn good_questions() -> Value {
    let star = "Situation: alerts were late. Task: detect outages sooner. Action: built Prometheus and Grafana alerting. Result: detection went from 25 to 4 minutes.";
    let mut questions = Vec::new();
    for _ in 0..4 {
        questions.push(question("behavioral", star));
        questions.push(question(
            "technical",
            "I ran 14 Kubernetes clusters on AWS.",
        ));
    }
    questions.push(question(
        "situational",
        "I would page the on-call lead and write a postmortem.",
    ));
    questions.push(question("situational", "I would roll back first."));
    json!({"questions": questions})
}

fn letter(words: usize, opening: &str) -> Value {
    let body =
        "I ran Kubernetes clusters on AWS and wrote Terraform modules for the platform teams "
            .repeat(words / 14 + 1);
    let full = format!("{opening} {body}");
    let text: Vec<&str> = full.split_whitespace().take(words).collect();
    json!({"cover_letter": text.join(" ")})
}

async fn completed(
    script: &Script,
) -> (
    jd_optimizer::JdOptimizer,
    agent_llm::testing::ScriptedModel,
    OptimizationState,
) {
    let (optimizer, model) = optimizer(script);
    let done = run(&optimizer, &pair("senior-sre")).await.0.unwrap();
    (optimizer, model, done.state)
}

/// Prepares `state`'s interview: questions and/or a letter in `tone`.
async fn prepare(
    optimizer: &jd_optimizer::JdOptimizer,
    memory: Option<MemoryStore>,
    state: &OptimizationState,
    questions: bool,
    cover_letter: bool,
    tone: Tone,
) -> Result<jd_optimizer::interview::InterviewPrep, InterviewError> {
    let request = InterviewRequest {
        questions,
        cover_letter,
        tone,
    };
    optimizer
        .interviewer(memory)
        .prepare(state, &request, &CancellationToken::new())
        .await
}

fn base() -> Script {
    Script::new()
        .json("analyzer", sre_analysis())
        .json("rewriter", sre_rewrite())
        .json("gap", gap_answer())
}

#[tokio::test]
async fn questions_and_a_letter_come_from_the_candidates_material_and_are_cached() {
    let script = base()
        .json("questions", good_questions())
        .json("letter", letter(300, "Keeping payments up is what I do."));
    let (optimizer, model, state) = completed(&script).await;
    let interviewer = optimizer.interviewer(None);
    let request = InterviewRequest {
        questions: true,
        cover_letter: true,
        tone: Tone::Conversational,
    };
    let cancel = CancellationToken::new();
    let prep = interviewer
        .prepare(&state, &request, &cancel)
        .await
        .unwrap();
    assert_eq!(prep.questions.len(), 10);
    let letter = prep.cover_letter.clone().unwrap();
    assert_eq!((letter.words, letter.tone), (300, Tone::Conversational));
    assert_eq!(prep.model_calls, 2);
    assert!(!prep.cached);
    // The prompt starts from the memory profile: core skills and achievements.
    let asked = model
        .requests()
        .into_iter()
        .find(|r| agent_of(r) == "questions")
        .unwrap();
    assert!(
        asked.messages[0]
            .text()
            .contains("Candidate's core skills: Kubernetes, AWS, Terraform, Prometheus")
    );

    let again = interviewer
        .prepare(&state, &request, &cancel)
        .await
        .unwrap();
    assert!(again.cached && again.model_calls == 0);
    assert_eq!(again.questions, prep.questions);
}

#[tokio::test]
async fn a_set_with_too_few_behavioural_questions_or_invented_numbers_is_asked_again_with_why() {
    let mut short = good_questions();
    short["questions"].as_array_mut().unwrap().truncate(7);
    short["questions"][0]["suggested_answer"] =
        json!("Situation: x. Task: y. Action: z. Result: cut costs by 73%.");
    let script = base()
        .json("questions", short)
        .json("questions", good_questions());
    let (optimizer, model, state) = completed(&script).await;
    let prep = prepare(&optimizer, None, &state, true, false, Tone::Formal)
        .await
        .unwrap();
    assert_eq!(prep.questions.len(), 10);
    let second = model
        .requests()
        .into_iter()
        .filter(|r| agent_of(r) == "questions")
        .nth(1)
        .unwrap();
    let text = second.messages[0].text();
    assert!(
        text.contains("7 questions; at least 10 are needed"),
        "{text}"
    );
    assert!(text.contains("the answer states 73"), "{text}");
}

#[tokio::test]
async fn a_letter_with_a_banned_opening_twice_is_refused() {
    let script = base()
        .json("letter", letter(300, "To whom it may concern,"))
        .json(
            "letter",
            letter(300, "I am writing to express my interest in this role."),
        );
    let (optimizer, _, state) = completed(&script).await;
    let error = prepare(&optimizer, None, &state, false, true, Tone::Formal)
        .await
        .unwrap_err();
    let InterviewError::Refused { agent, problems } = error else {
        panic!("{error}")
    };
    assert_eq!(agent, "cover_letter_generator");
    assert!(
        problems
            .iter()
            .any(|p| p.contains("i am writing to express my interest"))
    );
}

#[tokio::test]
async fn a_letter_too_short_is_asked_again() {
    let script = base()
        .json("letter", letter(120, "Keeping payments up is what I do."))
        .json("letter", letter(320, "Keeping payments up is what I do."));
    let (optimizer, _, state) = completed(&script).await;
    let prep = prepare(&optimizer, None, &state, false, true, Tone::Enthusiastic)
        .await
        .unwrap();
    assert_eq!(prep.cover_letter.unwrap().words, 320);
    assert_eq!(prep.model_calls, 2);
}

#[tokio::test]
async fn the_memory_profile_is_kept_per_user_and_merged() {
    let script = base().json("letter", letter(300, "Keeping payments up is what I do."));
    let (optimizer, _, state) = completed(&script).await;
    let documents = Arc::new(InMemoryDocumentStore::default());
    let memory = MemoryStore::new(documents.clone());
    prepare(
        &optimizer,
        Some(memory.clone()),
        &state,
        false,
        true,
        Tone::Enthusiastic,
    )
    .await
    .unwrap();
    let profile = memory
        .read(&state.tenant_id, &state.user_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(profile.preferred_tone, Some(Tone::Enthusiastic));
    assert!(
        profile
            .signature_achievements
            .iter()
            .any(|a| a.contains("25 to 4 minutes"))
    );
    assert!(profile.accepted_phrasing.contains(&"operated".to_owned()));
    assert!(
        memory
            .read("other-tenant", &state.user_id)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn an_optimization_without_a_result_cannot_be_prepared_for() {
    let (optimizer, _, mut state) = completed(&base()).await;
    state.final_result = None;
    let error = prepare(&optimizer, None, &state, true, false, Tone::Formal)
        .await
        .unwrap_err();
    assert!(matches!(error, InterviewError::NotCompleted(_)));
}

#[tokio::test]
async fn a_thin_profile_sends_the_resume_as_well() {
    // A job asking mostly for skills the resume lacks: few core skills to remember.
    let mut analysis = sre_analysis();
    analysis["hard_skills"] = json!({"Kubernetes": 0.95, "Go": 0.65, "Rust": 0.5, "Kafka": 0.5});
    analysis["key_terms"] = json!({"AWS": 0.85, "Terraform": 0.85, "Prometheus": 0.7});
    let script = Script::new()
        .json("analyzer", analysis)
        .json("rewriter", sre_rewrite())
        .json("gap", gap_answer())
        .json("letter", letter(300, "Keeping payments up is what I do."));
    let (optimizer, model, state) = completed(&script).await;
    let prep = prepare(&optimizer, None, &state, false, true, Tone::Formal)
        .await
        .unwrap();
    assert!(!prep.memory_only);
    let asked = model
        .requests()
        .into_iter()
        .find(|r| agent_of(r) == "letter")
        .unwrap();
    assert!(
        asked.messages[0]
            .text()
            .contains("Full background:\nSite reliability engineer")
    );
}

/// Prepares `state`'s interview with the interview product's graph, run durably in
/// `store` as the server runs it: its result, or why the run failed.
async fn prepare_durably(
    optimizer: &jd_optimizer::JdOptimizer,
    state: &OptimizationState,
    request: &InterviewRequest,
    store: Arc<dyn CheckpointStore>,
) -> Result<jd_optimizer::interview::InterviewPrep, String> {
    let graph = preparation(optimizer.interviewer(None)).unwrap();
    let session = optimizer.equip(Session::new(
        "prep-1",
        Preparation {
            optimization: state.clone(),
            request: request.clone(),
            prep: None,
        },
    ));
    let run = graph
        .run_durable(&session, store, RunOptions::new())
        .await
        .unwrap();
    let failure = run.errors.last().map(|f| f.message.clone());
    run.state
        .prep
        .ok_or_else(|| failure.or(run.reason).unwrap_or_default())
}

#[tokio::test]
async fn a_preparation_run_again_after_it_failed_takes_the_answers_it_had_from_its_journal() {
    // The questions are answered; the letter's call fails (the model is gone): the run
    // stops there, as a crash would stop it.
    let script = base().json("questions", good_questions());
    let (first, first_model, state) = completed(&script).await;
    let store: Arc<dyn CheckpointStore> = Arc::new(InMemoryCheckpointStore::new());
    let request = InterviewRequest {
        questions: true,
        cover_letter: true,
        tone: Tone::Formal,
    };
    let failed = prepare_durably(&first, &state, &request, store.clone()).await;
    assert!(
        failed
            .unwrap_err()
            .contains("cover_letter_generator failed")
    );
    let asked = |model: &agent_llm::testing::ScriptedModel, agent: &str| {
        model
            .requests()
            .iter()
            .filter(|r| agent_of(r) == agent)
            .count()
    };
    assert_eq!(asked(&first_model, "questions"), 1);

    // Run again (a restarted server): the questions come from the run's journal; only the
    // letter is asked for.
    let script = Script::new().json("letter", letter(300, "Keeping payments up is what I do."));
    let (second, second_model) = optimizer(&script);
    let prep = prepare_durably(&second, &state, &request, store)
        .await
        .unwrap();
    assert_eq!(asked(&second_model, "questions"), 0);
    assert_eq!(asked(&second_model, "letter"), 1);
    assert_eq!(prep.questions.len(), 10);
    assert_eq!(prep.cover_letter.unwrap().words, 300);
}
