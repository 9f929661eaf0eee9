//! process_jobs and score_jobs, each run on a hand-built state against a scripted model:
//! what is asked of which model tier, how answers are checked, and what lands in the
//! state.
#![cfg(test)]

mod common;

use common::llm_steps::*;
use common::rig::Rig;

use std::collections::HashMap;

use agent_llm::testing::{ScriptedModel, responses};
use agent_llm::{ChatRequest, LlmError, Usage};
use agent_runtime::graph::NodeErrorKind;
use job_capabilities::{JobSource, PayInterval, RawJob, Salary, SalaryOrigin};
use job_hunter::HuntEvent;
use job_hunter::models::Job;
use job_hunter::steps::{self};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// 5. process_jobs

const URL_STRUCTURED: &str = "https://boards.greenhouse.io/northwind/jobs/1";
const URL_DESCRIBED: &str = "https://jobs.lever.co/quill/2";
const URL_FAILING: &str = "https://jobs.ashbyhq.com/lumen/3";
const URL_UNPAID: &str = "https://boards.greenhouse.io/tidewater/jobs/4";

fn postings() -> Vec<RawJob> {
    let structured = RawJob {
        salary: Some(Salary {
            min: Some(95_000.0),
            max: Some(115_000.0),
            currency: "EUR".into(),
            interval: PayInterval::Year,
            origin: SalaryOrigin::Structured,
        }),
        ..raw_job(
            "Northwind Robotics",
            "Senior Backend Engineer",
            URL_STRUCTURED,
            "Build the Rust services behind our robot fleet. US roles pay $150,000 - $180,000 per year.",
        )
    };
    let described = RawJob {
        source: JobSource::Lever,
        location: None,
        apply_url: Some(format!("{URL_DESCRIBED}/apply")),
        ..raw_job(
            "Quill Labs",
            "Staff Platform Engineer",
            URL_DESCRIBED,
            "Own our Kubernetes platform.\nThe salary range for this role is $150,000 - $180,000 per year.",
        )
    };
    let failing = raw_job(
        "Lumen Health",
        "Platform Engineer",
        URL_FAILING,
        "Run our clinical data platform.",
    );
    let unpaid = raw_job(
        "Tidewater Energy",
        "Backend Engineer",
        URL_UNPAID,
        "Go and PostgreSQL. Competitive pay.",
    );
    vec![structured, described, failing, unpaid]
}

/// The `URL:` line of a process_jobs prompt.
fn posting_url(request: &ChatRequest) -> String {
    lines_after(&prompt_of(request), "URL: ")
        .pop()
        .unwrap_or_default()
}

/// Normalizes each posting with a summary naming its URL, and offers pay the step must
/// ignore.
fn normalization(request: &ChatRequest) -> agent_llm::ChatResponse {
    let url = posting_url(request);
    let mut answer = serde_json::to_value(extracted(&format!("Normalized {url}"))).unwrap();
    answer["salary"] = json!({"min": 999_999, "max": 999_999, "currency": "USD"});
    responses::tool_call("t", "ExtractedJob", answer)
}

#[tokio::test]
async fn process_jobs_normalizes_each_posting_and_leaves_out_the_one_that_fails() {
    let model = ScriptedModel::from_fn(|request| {
        if posting_url(request) == URL_FAILING {
            return Err(LlmError::Transport("connection reset".into()));
        }
        Ok(normalization(request))
    });
    let rig = Rig::new(&model);
    let mut state = rig.state();
    state.raw_jobs = postings();
    steps::process_jobs::run(&mut state, &rig.env())
        .await
        .unwrap();

    // One fast-tier call per posting, each naming its posting in a `URL:` line.
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let mut asked: Vec<String> = Vec::new();
    for request in &requests {
        assert_eq!(
            request.model.as_deref(),
            Some(rig.settings.haiku_model.as_str())
        );
        assert_eq!(request.system.as_deref(), Some(steps::process_jobs::SYSTEM));
        let urls = lines_after(&prompt_of(request), "URL: ");
        assert_eq!(urls.len(), 1, "{urls:?}");
        asked.extend(urls);
    }
    asked.sort();
    let mut expected: Vec<String> = postings().into_iter().map(|j| j.url).collect();
    expected.sort();
    assert_eq!(asked, expected);
    let described = requests
        .iter()
        .find(|r| posting_url(r) == URL_DESCRIBED)
        .unwrap();
    let prompt = prompt_of(described);
    assert_eq!(prompt, steps::process_jobs::prompt(&postings()[1]));
    insta::assert_snapshot!("process_jobs_prompt", prompt);

    // The others are kept, in their order, each with its own answer.
    let urls: Vec<&str> = state.jobs.iter().map(|j| j.url.as_str()).collect();
    assert_eq!(urls, [URL_STRUCTURED, URL_DESCRIBED, URL_UNPAID]);
    for job in &state.jobs {
        assert_eq!(job.id, steps::process_jobs::job_id(&job.url));
        assert_eq!(job.extracted.summary, format!("Normalized {}", job.url));
    }
    let [structured, described, unpaid] = &state.jobs[..] else {
        panic!("{:#?}", state.jobs)
    };
    assert_eq!(structured.apply_url, URL_STRUCTURED);
    assert_eq!(structured.location.as_deref(), Some("Berlin"));
    assert_eq!(described.apply_url, format!("{URL_DESCRIBED}/apply"));
    assert_eq!(
        described.location.as_deref(),
        Some("Remote (Europe)"),
        "from the model when the posting has none"
    );

    // Pay from the structured fields, else the description; never from the model.
    assert_eq!(structured.salary, postings()[0].salary);
    assert_eq!(
        described.salary,
        Some(Salary {
            min: Some(150_000.0),
            max: Some(180_000.0),
            currency: "USD".into(),
            interval: PayInterval::Year,
            origin: SalaryOrigin::Description,
        })
    );
    assert_eq!(unpaid.salary, None);

    // The failure is a non-fatal issue naming the posting.
    let [issue] = &state.issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert_eq!(
        (issue.step.as_str(), issue.kind.as_str()),
        ("process_jobs", "llm")
    );
    assert_eq!(issue.job_url.as_deref(), Some(URL_FAILING));
    assert_eq!(issue.company.as_deref(), Some("Lumen Health"));
    assert!(
        issue.message.contains("Platform Engineer"),
        "{}",
        issue.message
    );
    assert!(!issue.fatal);
    assert_eq!(state.raw_jobs, postings(), "the postings are kept");

    let progress: Vec<(usize, usize)> = rig
        .events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            HuntEvent::Progress { step, done, total } if step == "process_jobs" => {
                Some((done, total))
            }
            _ => None,
        })
        .collect();
    assert_eq!(progress, [(1, 4), (2, 4), (3, 4), (4, 4)]);
}

#[tokio::test]
async fn process_jobs_stops_at_the_cost_limit_keeping_what_was_done() {
    // Every answer reports a million input tokens: $1 on the fast model.
    let model = ScriptedModel::from_fn(|request| {
        Ok(responses::with_usage(
            normalization(request),
            Usage {
                input_tokens: 1_000_000,
                output_tokens: 100,
                ..Usage::default()
            },
        ))
    });
    let rig = Rig::with(&model, |s| {
        s.max_cost_per_run_usd = 0.01;
        s.warn_cost_threshold_usd = 0.005;
        s.max_concurrency = 1;
    });
    let mut state = rig.state();
    let raw: Vec<RawJob> = postings()
        .into_iter()
        .filter(|j| j.url != URL_FAILING)
        .collect();
    state.raw_jobs = raw.clone();
    let error = steps::process_jobs::run(&mut state, &rig.env())
        .await
        .unwrap_err();

    assert_eq!(error.kind(), NodeErrorKind::Limit);
    assert!(error.message().contains("1 of 3 jobs processed"), "{error}");
    assert_eq!(model.call_count(), 1, "later calls are refused unsent");
    let urls: Vec<&str> = state.jobs.iter().map(|j| j.url.as_str()).collect();
    assert_eq!(urls, [URL_STRUCTURED]);
    assert_eq!(state.raw_jobs, raw);
    assert!(state.issues.is_empty(), "{:#?}", state.issues);
    assert!(rig.llm.cost().usd >= 1.0);
    assert!(rig.llm.limit_reached().is_some());
    assert!(
        rig.events
            .events()
            .iter()
            .any(|e| matches!(e, HuntEvent::CostWarning { .. }))
    );
}

// ---------------------------------------------------------------------------------------
// 6. score_jobs

/// The `(id, url)` pairs of a scoring prompt: each `- id:` line and the `url:` line
/// right after it.
fn listed_jobs(prompt: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = prompt.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter_map(|(at, line)| {
            let id = line.strip_prefix("- id: ")?;
            let url = lines.get(at + 1)?.trim_start().strip_prefix("url: ")?;
            Some((id.to_owned(), url.to_owned()))
        })
        .collect()
}

fn score(id: &str, score: u8, reason: &str, evidence: bool) -> Value {
    let quotes = |text: &str| {
        if evidence {
            vec![text.to_owned()]
        } else {
            Vec::new()
        }
    };
    json!({
        "job_id": id,
        "score": score,
        "reason": reason,
        // Quoted from each job's summary.
        "job_evidence": quotes("builds backend services in Rust"),
        "profile_evidence": quotes("8 years in Rust and Go"),
    })
}

#[tokio::test]
async fn score_jobs_ranks_valid_scores_and_records_each_invalid_one() {
    let mut first = job(
        1,
        "Northwind Robotics",
        "Staff Rust Engineer",
        Some("2025-05-01T00:00:00Z"),
    );
    first.salary = Some(Salary {
        min: Some(90_000.0),
        max: Some(110_000.0),
        currency: "EUR".into(),
        interval: PayInterval::Year,
        origin: SalaryOrigin::Structured,
    });
    let jobs = vec![
        first,
        job(
            2,
            "Quill Labs",
            "Platform Engineer",
            Some("2025-04-01T00:00:00Z"),
        ),
        job(
            3,
            "Quill Labs",
            "Backend Engineer",
            Some("2025-06-01T00:00:00Z"),
        ),
        job(4, "Lumen Health", "Data Analyst", None),
        job(5, "Lumen Health", "SRE", None),
        job(6, "Tidewater Energy", "Go Engineer", None),
        job(7, "Tidewater Energy", "Rust Engineer", None),
    ];
    let id = |n: usize| jobs[n - 1].id.clone();
    let mut answers: HashMap<String, Value> = HashMap::new();
    answers.insert(
        id(1),
        score(&id(1), 90, "Rust platform work at her level.", true),
    );
    answers.insert(id(2), score(&id(2), 80, "Platform work in Berlin.", true));
    answers.insert(id(3), score(&id(3), 80, "Backend work in Rust.", true));
    answers.insert(
        id(4),
        score(&id(4), 30, "An analyst role, not engineering.", false),
    );
    answers.insert(id(5), score(&id(5), 120, "Very good.", true));
    answers.insert(id(6), score(&id(6), 70, "Go services.", false));
    // Job 7 gets no score; an unknown id is scored instead.
    let missing = id(7);
    let model = ScriptedModel::from_fn(move |request| {
        let mut scores = Vec::new();
        for (id, _) in listed_jobs(&prompt_of(request)) {
            match answers.get(&id) {
                Some(answer) => scores.push(answer.clone()),
                None if id == missing => {
                    scores.push(score("bogus", 60, "Looks good.", true));
                }
                None => {}
            }
        }
        Ok(responses::tool_call(
            "t",
            "BatchScoreResult",
            json!({ "scores": scores }),
        ))
    });
    let rig = Rig::with(&model, |s| s.score_batch_size = 3);
    let mut state = rig.state();
    state.profile = Some(profile());
    state.preferences = Some(prefs());
    state.jobs = jobs.clone();
    steps::score_jobs::run(&mut state, &rig.env())
        .await
        .unwrap();

    // Batches of three, quality tier, each listing its jobs' ids and URLs.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests
            .iter()
            .all(|r| r.model.as_deref() == Some(rig.settings.sonnet_model.as_str()))
    );
    let mut listed: Vec<Vec<(String, String)>> = requests
        .iter()
        .map(|r| listed_jobs(&prompt_of(r)))
        .collect();
    listed.sort();
    let mut batches: Vec<Vec<(String, String)>> = jobs
        .chunks(3)
        .map(|batch| {
            batch
                .iter()
                .map(|j| (j.id.clone(), j.url.clone()))
                .collect()
        })
        .collect();
    batches.sort();
    assert_eq!(listed, batches);
    let first_batch = requests
        .iter()
        .map(prompt_of)
        .find(|p| p.contains(&jobs[0].id))
        .unwrap();
    let batch: Vec<&Job> = jobs[..3].iter().collect();
    assert_eq!(
        first_batch,
        steps::score_jobs::prompt(&profile(), &prefs(), &batch)
    );
    insta::assert_snapshot!("score_jobs_batch_prompt", first_batch);

    // Best first; the tie at 80 goes to the newer posting; a low score needs no evidence.
    let ranked: Vec<(&str, u8)> = state
        .scored
        .iter()
        .map(|s| (s.job.url.as_str(), s.score))
        .collect();
    assert_eq!(
        ranked,
        [
            ("https://jobs.example/1", 90),
            ("https://jobs.example/3", 80),
            ("https://jobs.example/2", 80),
            ("https://jobs.example/4", 30),
        ]
    );
    assert_eq!(state.scored[0].reason, "Rust platform work at her level.");
    assert!(state.scored[3].job_evidence.is_empty());

    // Each rejected score is a validation issue, and its job is not scored.
    assert!(
        state
            .issues
            .iter()
            .all(|i| i.step == "score_jobs" && i.kind == "validation" && !i.fatal),
        "{:#?}",
        state.issues
    );
    let issues: Vec<(Option<&str>, Option<&str>, &str)> = state
        .issues
        .iter()
        .map(|i| {
            (
                i.job_url.as_deref(),
                i.company.as_deref(),
                i.message.as_str(),
            )
        })
        .collect();
    assert_eq!(
        issues,
        [
            (None, None, "score for unknown job id \"bogus\""),
            (
                Some("https://jobs.example/5"),
                Some("Lumen Health"),
                "score 120 is out of range"
            ),
            (
                Some("https://jobs.example/6"),
                Some("Tidewater Energy"),
                "a score of 70 must quote what in the job and in the profile it rests on"
            ),
            (
                Some("https://jobs.example/7"),
                Some("Tidewater Energy"),
                "the model returned no score for this job"
            ),
        ]
    );
    assert_eq!(rig.llm.cost().calls_by_step.get("score_jobs"), Some(&3));
}
