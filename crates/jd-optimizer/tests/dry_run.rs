//! The dry run over every fixture pair: the recorded answers go through the whole graph,
//! within budget, and no refused bullet is ever shown.
#![cfg(test)]

use std::path::PathBuf;
use std::sync::Arc;

use agent_runtime::CollectingSink;
use jd_optimizer::dry_run::FixturePair;
use jd_optimizer::{JdOptimizer, Optimization, OptimizeEvent, OptimizeRequest, dry_run};
use tokio_util::sync::CancellationToken;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jd-optimizer")
}

/// Optimizes `pair` on the dry run, its events dropped.
async fn optimize(optimizer: &JdOptimizer, pair: &FixturePair) -> Optimization {
    dry_run::optimize_pair(optimizer, pair)
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
        assert!(
            r.model_calls <= 6 && r.total_tokens_used <= 7_000,
            "{}",
            pair.name
        );
        // The dry run's models are priced (free): its cost is known, not warned about.
        let cost = done.spent.per_unit("optimization", 1);
        assert!(cost.unpriced_models.is_empty(), "{cost}");
        assert_eq!(cost.usd, 0.0);
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
        // The nodes' shares and the agents' shares of the meter add up to its totals.
        let (node_tokens, node_calls) = events
            .iter()
            .filter_map(|e| match e {
                OptimizeEvent::NodeFinished { tokens, calls, .. } => Some((*tokens, *calls)),
                _ => None,
            })
            .fold((0, 0), |(t, c), (tokens, calls)| (t + tokens, c + calls));
        assert_eq!(
            (node_tokens, node_calls),
            (r.total_tokens_used, r.model_calls)
        );
        assert_eq!(r.token_usage.values().sum::<u64>(), r.total_tokens_used);
        let attempts: Vec<String> = r
            .attempts
            .iter()
            .map(|a| format!("{:.1}/{:.1}", a.score * 100.0, a.baseline * 100.0))
            .collect();
        summary.push_str(&format!(
            "{}: {:.1} -> {:.1} by {:?}, attempt {} kept of {}; {} rewritten; {} calls, {} tokens; {}; dropped {}\n",
            pair.name,
            r.baseline_score * 100.0,
            r.ats_score * 100.0,
            r.scoring_lane,
            r.kept_attempt,
            attempts.join(" "),
            r.optimized_bullets.len(),
            r.model_calls,
            r.total_tokens_used,
            done.nodes.join(" "),
            r.dropped_bullets.len()
        ));
    }
    insta::assert_snapshot!(summary);
}

#[tokio::test]
async fn every_line_of_every_fixture_resume_is_in_its_optimized_docx_kept_or_rewritten() {
    use job_capabilities::documents::{DocumentKind, extract_text, strip_bullet};
    let optimizer = dry_run::optimizer(&fixtures()).unwrap();
    for pair in dry_run::pairs(&fixtures()).unwrap() {
        let done = optimize(&optimizer, &pair).await;
        let docx = jd_optimizer::document::optimized_docx(&pair.resume, &done.state).unwrap();
        let text = extract_text(&docx.bytes, DocumentKind::Docx).unwrap();
        let rewrites = &done.result.optimized_bullets;
        let mut lines = 0;
        for line in pair.resume.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let own = strip_bullet(line).trim_end_matches(':');
            let expected = rewrites
                .iter()
                .find(|b| b.original == own)
                .map_or(own, |b| b.text.as_str());
            assert!(
                text.contains(expected),
                "{}: {expected:?} is not in the DOCX:\n{text}",
                pair.name
            );
            lines += 1;
        }
        assert_eq!(docx.lines, lines, "{}", pair.name);
        assert_eq!(docx.rewritten, rewrites.len(), "{}", pair.name);
        // The bullets read back score what the kept attempt scored by the rules.
        let kept = done
            .result
            .attempts
            .iter()
            .find(|a| a.attempt == done.result.kept_attempt)
            .unwrap();
        assert!(
            (docx.score - kept.rules_score).abs() < 1e-9,
            "{}",
            pair.name
        );
        // Headings and list items carry Word's styles.
        let markdown =
            jd_optimizer::document::optimized_markdown(&pair.resume, &done.state).unwrap();
        assert!(
            markdown.contains("\n## Education\n"),
            "{}: {markdown}",
            pair.name
        );
        assert!(markdown.contains("\n### "), "{}: {markdown}", pair.name);
    }
}

#[tokio::test]
async fn every_fixture_pairs_kept_result_scores_at_or_above_its_baseline_on_one_scale() {
    let optimizer = dry_run::optimizer(&fixtures()).unwrap();
    for pair in dry_run::pairs(&fixtures()).unwrap() {
        let done = optimize(&optimizer, &pair).await;
        let r = &done.result;
        assert!(r.ats_score >= r.baseline_score, "{}: {r:?}", pair.name);
        let kept = r
            .attempts
            .iter()
            .find(|a| a.attempt == r.kept_attempt)
            .unwrap();
        assert_eq!((kept.score, kept.baseline), (r.ats_score, r.baseline_score));
        assert_eq!(kept.bullets, r.optimized_bullets, "{}", pair.name);
        // Every attempt scores the same bullets: the original's rules score is each
        // rules-lane attempt's baseline.
        let original = &r.attempts[0];
        for attempt in &r.attempts {
            if attempt.lane == jd_optimizer::records::ScoringLane::Rules {
                assert_eq!(attempt.baseline, original.score, "{}", pair.name);
            }
            assert!(attempt.gain() <= kept.gain() + 1e-12, "{}", pair.name);
        }
        if r.kept_attempt == 0 {
            assert!(r.optimized_bullets.is_empty());
            assert!(
                r.warnings
                    .iter()
                    .any(|w| w.contains("own bullets are kept"))
            );
        }
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
