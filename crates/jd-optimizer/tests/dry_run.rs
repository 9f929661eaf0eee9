#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The dry run over every fixture pair: the recorded answers go through the whole graph,
//! within budget, and no refused bullet is ever shown.

use std::path::PathBuf;
use std::sync::Arc;

use agent_runtime::CollectingSink;
use jd_optimizer::dry_run::FixturePair;
use jd_optimizer::state::RouteKey;
use jd_optimizer::{JdOptimizer, Optimization, OptimizeEvent, OptimizeRequest, dry_run};
use tokio_util::sync::CancellationToken;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jd-optimizer")
}

/// Optimizes `pair` on the dry run, its events dropped.
async fn optimize(optimizer: &JdOptimizer, pair: &FixturePair) -> Optimization {
    optimizer
        .optimize(
            &OptimizeRequest::new(&pair.resume, &pair.jd),
            &pair.name,
            Arc::new(CollectingSink::default()),
            CancellationToken::new(),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", pair.name))
}

#[tokio::test]
async fn every_fixture_pair_is_optimized_within_budget_with_no_fabrication_shown() {
    agent_llm::testing::deny_network_requests();
    let pairs = dry_run::pairs(&fixtures()).unwrap();
    assert!(pairs.len() >= 6);
    let optimizer = dry_run::optimizer(&fixtures()).unwrap();
    let mut summary = String::new();
    for pair in pairs {
        let events = Arc::new(CollectingSink::<OptimizeEvent>::default());
        let request = OptimizeRequest::new(&pair.resume, &pair.jd);
        let done = optimizer
            .optimize(
                &request,
                &pair.name,
                events.clone(),
                CancellationToken::new(),
            )
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", pair.name));
        let r = &done.result;
        assert!(!r.optimized_bullets.is_empty(), "{}", pair.name);
        assert!(
            r.model_calls <= 6 && r.total_tokens_used <= 7_000,
            "{}",
            pair.name
        );
        for dropped in &r.dropped_bullets {
            assert!(!dropped.reason.is_empty());
            assert!(r.optimized_bullets.iter().all(|b| b.text != dropped.text));
        }
        // Every node announced, the result announced once, with the tokens it reports.
        let events = events.events();
        let started = events
            .iter()
            .filter(|e| matches!(e, OptimizeEvent::NodeStarted { .. }))
            .count();
        assert_eq!(started, done.nodes.len());
        let completed: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                OptimizeEvent::OptimizationCompleted { tokens_used, .. } => Some(*tokens_used),
                _ => None,
            })
            .collect();
        assert_eq!(completed, [r.total_tokens_used]);
        summary.push_str(&format!(
            "{}: {:.1} -> {:.1} by {:?}; {} calls, {} tokens; {}; dropped {}\n",
            pair.name,
            r.baseline_score * 100.0,
            r.ats_score * 100.0,
            r.scoring_lane,
            r.model_calls,
            r.total_tokens_used,
            done.nodes.join(" "),
            r.dropped_bullets.len()
        ));
    }
    insta::assert_snapshot!(summary);
}

#[tokio::test]
async fn a_repair_weaves_in_keywords_the_sources_hold_and_its_invented_patch_is_refused() {
    let pairs = dry_run::pairs(&fixtures()).unwrap();
    let pair = pairs.iter().find(|p| p.name == "staff-ml").unwrap();
    let optimizer = dry_run::optimizer(&fixtures()).unwrap();
    let done = optimize(&optimizer, pair).await;
    let r = &done.result;
    assert_eq!(r.repair_attempts, 1);
    let [.., first, repaired] = r.attempts.as_slice() else {
        panic!("{:?}", r.attempts)
    };
    assert!(repaired.score > first.score + 0.05);
    assert_eq!(
        done.state.route.as_ref().unwrap().next,
        RouteKey::ProceedToGap
    );
    // The patch that claimed "recommendation" models is refused; its bullet stays.
    assert_eq!(r.dropped_bullets.len(), 1);
    assert!(r.dropped_bullets[0].reason.contains("\"recommendation\""));
    assert!(
        r.optimized_bullets[0]
            .text
            .starts_with("Led the technical direction for ranking across")
    );
    assert!(r.optimized_bullets[1].text.contains("distributed training"));
    assert_eq!(r.optimized_bullets[1].sources, ["C2", "C4"]);
}

#[tokio::test]
async fn the_optimized_resume_reads_back_from_its_docx_with_every_bullet() {
    let optimizer = dry_run::optimizer(&fixtures()).unwrap();
    for pair in dry_run::pairs(&fixtures()).unwrap() {
        let done = optimize(&optimizer, &pair).await;
        let docx = jd_optimizer::document::optimized_docx(&pair.resume, &done.state).unwrap();
        assert!(docx.bytes.starts_with(b"PK"), "{}", pair.name);
        assert!((0.0..=1.0).contains(&docx.score));
        let markdown = jd_optimizer::document::optimized_markdown(&pair.resume, &done.state);
        assert!(
            markdown.contains("## Education"),
            "{}: {markdown}",
            pair.name
        );
        assert!(!markdown.contains("@example.com") || markdown.lines().nth(1).is_some());
    }
}

#[tokio::test]
async fn every_pairs_recorded_interview_passes_the_checks() {
    use jd_optimizer::interview::InterviewRequest;
    use jd_optimizer::interview::cover_letter::Tone;
    let optimizer = dry_run::optimizer(&fixtures()).unwrap();
    for pair in dry_run::pairs(&fixtures()).unwrap() {
        let done = optimize(&optimizer, &pair).await;
        let request = InterviewRequest {
            questions: true,
            cover_letter: true,
            tone: Tone::Conversational,
        };
        let prep = optimizer
            .interviewer(None)
            .prepare(&done.state, &request, &CancellationToken::new())
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", pair.name));
        assert!(prep.questions.len() >= 10, "{}", pair.name);
        assert_eq!(
            prep.model_calls, 2,
            "{}: no answer was asked again",
            pair.name
        );
    }
}
