//! Job ranking: the composite's parts (skills with aliases, location and remote scope, pay
//! against a floor) and a ranking with the real local embedding model on SQLite, where
//! look-alike jobs are told apart by what only the composite sees.
#![cfg(test)]

use std::sync::Arc;

use agent_backends::SqliteSessionStore;
use agent_llm::LocalEmbeddingModel;
use job_capabilities::PayInterval;
use job_capabilities::ranking::{
    CandidateProfile, JobPosting, JobRanker, SalaryFloor, Weights, score_job,
};
use job_capabilities::retrieval::HybridRetriever;

fn profile() -> CandidateProfile {
    CandidateProfile {
        summary:
            "Senior backend engineer: Rust and Go services on Kubernetes, PostgreSQL and Kafka."
                .into(),
        skills: vec![
            "Rust".into(),
            "Go".into(),
            "Kubernetes".into(),
            "PostgreSQL".into(),
        ],
        titles: vec!["Senior Backend Engineer".into()],
        preferred_locations: vec!["Remote (Europe)".into(), "Lisbon, Portugal".into()],
        remote_ok: true,
        min_salary: Some(SalaryFloor {
            amount: 90_000.0,
            currency: "EUR".into(),
            interval: PayInterval::Year,
        }),
        seniority: None,
    }
}

fn job(id: &str, location: &str, remote: bool, salary: &str) -> JobPosting {
    JobPosting {
        id: id.into(),
        title: "Senior Backend Engineer (Rust)".into(),
        company: "Northwind".into(),
        location: location.into(),
        remote,
        salary_text: salary.into(),
        skills: vec!["Rust".into(), "Golang".into(), "k8s".into(), "Postgres".into(), "Kafka".into()],
        description: "Build the settlement services in Rust and Go, run them on Kubernetes, and keep PostgreSQL fast.".into(),
    }
}

#[test]
fn the_parts_of_the_composite() {
    let w = Weights::default();
    let good = score_job(
        &profile(),
        &job("a", "Remote (Europe)", true, "€95,000 – €110,000 a year"),
        0.6,
        w,
    );
    assert_eq!(good.breakdown.skills, 0.8, "4 of 5 asked, by their aliases");
    assert_eq!(good.matched_skills, ["Rust", "Golang", "k8s", "Postgres"]);
    assert_eq!(good.missing_skills, ["Kafka"]);
    assert_eq!(good.breakdown.location, 1.0);
    assert_eq!(good.breakdown.salary, 1.0);
    assert!((good.score - (0.5 * 0.6 + 0.25 * 0.8 + 0.15 + 0.10)).abs() < 1e-6);
    assert!(
        good.justification
            .contains("skills Rust, Golang, k8s, Postgres (4 of 5 asked)"),
        "{}",
        good.justification
    );
    assert!(
        good.justification
            .contains("location: remote from your region"),
        "{}",
        good.justification
    );
    assert!(
        good.justification.contains("meets your floor"),
        "{}",
        good.justification
    );

    let us_only = score_job(&profile(), &job("b", "Remote (US only)", true, ""), 0.6, w);
    assert_eq!(us_only.breakdown.location, 0.0, "{}", us_only.justification);
    assert_eq!(us_only.breakdown.salary, 0.5, "unstated pay is neutral");
    let lisbon = score_job(&profile(), &job("c", "Lisbon, Portugal", false, ""), 0.6, w);
    assert_eq!(lisbon.breakdown.location, 1.0);
    let porto = score_job(&profile(), &job("d", "Porto, Portugal", false, ""), 0.6, w);
    assert_eq!(porto.breakdown.location, 0.5);
    let berlin = score_job(&profile(), &job("e", "Berlin, Germany", false, ""), 0.6, w);
    assert_eq!(berlin.breakdown.location, 0.3);
    let austin = score_job(&profile(), &job("f", "Austin, TX", false, ""), 0.6, w);
    assert_eq!(austin.breakdown.location, 0.0);

    let cheap = score_job(
        &profile(),
        &job("g", "Remote (Europe)", true, "$60k-$70k"),
        0.6,
        w,
    );
    assert!(cheap.breakdown.salary < 0.1, "{}", cheap.breakdown.salary);
    assert!(
        cheap.justification.contains("is below your floor"),
        "{}",
        cheap.justification
    );
    let hourly = score_job(
        &profile(),
        &job("h", "Remote (Europe)", true, "€55 per hour"),
        0.6,
        w,
    );
    assert_eq!(
        hourly.breakdown.salary, 1.0,
        "€55 an hour is €114,400 a year"
    );
}

#[test]
fn what_the_profile_rules_out_is_named() {
    let w = Weights::default();
    let us_only = score_job(&profile(), &job("b", "Remote (US only)", true, ""), 0.6, w);
    assert_eq!(us_only.deal_breakers, ["remote only from US"]);
    assert!(
        us_only
            .justification
            .contains("ranked lower: remote only from US")
    );
    let cheap = score_job(
        &profile(),
        &job("g", "Remote (Europe)", true, "€50,000 a year"),
        0.6,
        w,
    );
    assert_eq!(cheap.deal_breakers, ["pay well below your floor"]);
    let mut intern = job("i", "Remote (Europe)", true, "");
    intern.title = "Backend Engineering Intern (Rust)".into();
    let intern = score_job(&profile(), &intern, 0.6, w);
    assert_eq!(
        intern.deal_breakers,
        ["a intern role for a senior candidate"]
    );
    let fine = score_job(&profile(), &job("a", "Remote (Europe)", true, ""), 0.6, w);
    assert!(fine.deal_breakers.is_empty());
}

#[test]
fn the_role_and_level_scale_the_composite() {
    let w = Weights::default();
    let sought = score_job(&profile(), &job("a", "Remote (Europe)", true, ""), 0.6, w);
    assert_eq!(sought.breakdown.role, 1.0);
    assert!(
        sought
            .justification
            .starts_with("role: Senior Backend Engineer;"),
        "{}",
        sought.justification
    );

    // The same skills under a title the candidate did not name keep 80 % of the score.
    let mut sre = job("s", "Remote (Europe)", true, "");
    sre.title = "Senior SRE".into();
    let sre = score_job(&profile(), &sre, 0.6, w);
    assert_eq!(sre.breakdown.role, 0.0);
    assert!((sre.score - 0.8 * sought.score).abs() < 1e-6);
    assert!(sre.justification.starts_with("role: not one you named;"));

    // A level one step away, stated in the title, keeps 90 %; an unstated level is no step.
    let mut staff = job("t", "Remote (Europe)", true, "");
    staff.title = "Staff Backend Engineer".into();
    let staff = score_job(&profile(), &staff, 0.6, w);
    assert!((staff.score - 0.9 * sought.score).abs() < 1e-6);
    assert!(
        staff
            .justification
            .contains("level: staff for a senior candidate"),
        "{}",
        staff.justification
    );
    assert!(staff.deal_breakers.is_empty());
    let mut unstated = job("u", "Remote (Europe)", true, "");
    unstated.title = "Backend Engineer".into();
    let unstated = score_job(&profile(), &unstated, 0.6, w);
    assert_eq!(unstated.score, sought.score);
}

#[test]
fn pay_known_to_be_short_scores_below_pay_not_stated() {
    let w = Weights::default();
    let unstated = score_job(&profile(), &job("a", "Remote (Europe)", true, ""), 0.6, w);
    let short = score_job(
        &profile(),
        &job("b", "Remote (Europe)", true, "€85,000 a year"),
        0.6,
        w,
    );
    assert!(short.breakdown.salary < unstated.breakdown.salary);
    assert!(
        short.deal_breakers.is_empty(),
        "94 % of the floor is near it"
    );
    // A bare `$` in a text that writes CAD is Canadian dollars.
    let canadian = score_job(
        &profile(),
        &job("c", "Remote (Europe)", true, "$125,000/year CAD"),
        0.6,
        w,
    );
    assert!(
        canadian.justification.contains("is below your floor"),
        "CA$125k is about €85k, US$125k about €116k: {}",
        canadian.justification
    );
}

#[tokio::test]
async fn look_alike_jobs_are_told_apart_by_place_and_pay() {
    let embedder = Arc::new(
        LocalEmbeddingModel::from_env()
            .unwrap_or_else(|error| panic!("{error}\n(run the tests with `cargo xtask test`)")),
    );
    let store = Arc::new(SqliteSessionStore::in_memory().await.unwrap().vectors());
    let ranker = JobRanker::new(HybridRetriever::new(embedder, store, "jobs"));
    let mut barista = job("coffee", "Lisbon, Portugal", false, "€20 per hour");
    barista.title = "Barista".into();
    barista.skills = vec!["espresso".into(), "latte art".into()];
    barista.description = "Pull shots and pour latte art in our café.".into();
    let jobs = [
        job("us-only", "Remote (US only)", true, "$150k-$180k"),
        job("cheap", "Remote (Europe)", true, "€50,000 – €60,000 a year"),
        job("fit", "Remote (Europe)", true, "€100,000 – €120,000 a year"),
        job("far", "Austin, TX", false, ""),
        barista,
    ];
    ranker.index("ada", &jobs).await.unwrap();
    let ranked = ranker.rank("ada", &profile(), &jobs, 10).await.unwrap();
    let order: Vec<&str> = ranked.iter().map(|r| r.job_id.as_str()).collect();
    assert_eq!(order[0], "fit", "{ranked:#?}");
    // Everything else is ruled out by the profile (a place, the pay: the barista's too),
    // and ranked by its score after the fit: the barista last.
    assert!(
        ranked[1..].iter().all(|r| !r.deal_breakers.is_empty()),
        "{ranked:#?}"
    );
    assert_eq!(order.last(), Some(&"coffee"), "{order:?}");
    assert!(ranked.iter().all(|r| !r.justification.is_empty()));
    // Another tenant has none of these jobs.
    assert!(
        ranker
            .rank("bob", &profile(), &jobs, 10)
            .await
            .unwrap()
            .is_empty()
    );
}
