//! scrape_jobs on a careers page with no known job board, served over loopback by a
//! local server and fetched by the real page fetcher: the jobs are read by the (scripted)
//! model, and only those the page bears out are kept.
#![cfg(test)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_llm::testing::{ScriptedModel, responses};
use agent_llm::{LlmError, Usage};
use job_capabilities::JobSource;
use job_capabilities::fetch::{FetchPolicy, PageFetcher};
use job_hunter::HuntState;
use job_hunter::models::{
    Company, CompanyOrigin, CompanyOutcome, RemotePreference, SearchPreferences,
};
use job_hunter::steps::{self, careers_page};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use common::rig::Rig;

const PAGE: &str = r#"<!DOCTYPE html><html><head><title>Careers at Acme</title></head><body>
<nav><a href="/">Acme</a> <a href="/careers">Careers</a></nav>
<h1>Join Acme</h1>
<p>We build warehouse software in Berlin.</p>
<ul class="jobs">
  <li><a href="/careers/platform-engineer">Senior Platform Engineer</a> <span>Berlin &middot; Full time</span></li>
  <li><a href="/careers/designer#apply">Product Designer</a> <span>Remote</span></li>
</ul>
<footer><a href="/about">About us</a></footer>
</body></html>"#;

/// Serves [`PAGE`] at `/careers` and, at `/empty`, a page with no text and no link.
async fn server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/careers"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(PAGE, "text/html; charset=utf-8"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/empty"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            "<html><body><div id=\"app\"></div></body></html>",
            "text/html",
        ))
        .mount(&server)
        .await;
    server
}

/// A rig whose careers pages are fetched from loopback by the real fetcher.
fn rig(model: &ScriptedModel, tweak: impl FnOnce(&mut job_hunter::Settings)) -> Rig {
    let mut rig = Rig::with(model, tweak);
    rig.deps.pages = Arc::new(
        PageFetcher::new(FetchPolicy {
            allow_loopback: true,
            min_interval_per_host: Duration::ZERO,
            ..FetchPolicy::default()
        })
        .unwrap(),
    );
    rig
}

fn state_with(rig: &Rig, companies: &[(&str, String)]) -> HuntState {
    let mut state = rig.state();
    state.companies = companies
        .iter()
        .map(|(name, url)| Company {
            name: (*name).into(),
            origin: CompanyOrigin::Named,
            domain: None,
            careers_url: Some(url.clone()),
            board: None,
        })
        .collect();
    // An open search: no title, place or exclusion cuts a job the page lists.
    state.preferences = Some(SearchPreferences {
        target_titles: Vec::new(),
        target_companies: Vec::new(),
        industries: Vec::new(),
        locations: Vec::new(),
        remote: RemotePreference::Any,
        min_salary: None,
        salary_currency: None,
        excluded_companies: Vec::new(),
        excluded_industries: Vec::new(),
    });
    state
}

fn page_jobs(jobs: Value) -> ScriptedModel {
    ScriptedModel::new(vec![responses::tool_call(
        "t1",
        "CareersPageJobs",
        json!({ "jobs": jobs }),
    )])
}

#[tokio::test]
async fn only_the_jobs_the_page_lists_are_kept_the_others_dropped_with_the_reason() {
    let server = server().await;
    let base = server.uri();
    let model = page_jobs(json!([
        // On the page: a relative URL with a trailing slash, the title in other case.
        {"title": "senior platform engineer", "url": "/careers/platform-engineer/", "location": "Berlin"},
        // The title is on the page, the URL is not one of its links.
        {"title": "Product Designer", "url": format!("{base}/careers/product-designer"), "location": null},
        // The URL is a link of the page, the title is nowhere on it.
        {"title": "Head of Sales", "url": "/careers/designer", "location": "Remote"}
    ]));
    let rig = rig(&model, |_| {});
    let mut state = state_with(&rig, &[("Acme", format!("{base}/careers"))]);
    steps::scrape_jobs::run(&mut state, &rig.env())
        .await
        .unwrap();

    assert_eq!(
        state.company_reports[0].outcome,
        CompanyOutcome::JobsFetched {
            count: 1,
            source: JobSource::CareerPage
        }
    );
    let [job] = &state.raw_jobs[..] else {
        panic!("{:#?}", state.raw_jobs)
    };
    assert_eq!(job.url, format!("{base}/careers/platform-engineer"));
    assert_eq!(job.title, "senior platform engineer");
    assert_eq!(job.company, "Acme");
    assert_eq!(job.source, JobSource::CareerPage);
    assert_eq!(job.location.as_deref(), Some("Berlin"));
    assert_eq!(
        job.description,
        "Senior Platform Engineer Berlin · Full time"
    );

    // The two others are dropped, each a non-fatal issue naming the company, the job's
    // URL and why.
    let issues: Vec<(&str, &str, Option<&str>)> = state
        .issues
        .iter()
        .map(|i| (i.kind.as_str(), i.message.as_str(), i.job_url.as_deref()))
        .collect();
    let [(kind1, message1, url1), (kind2, message2, url2)] = &issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert_eq!((*kind1, *kind2), ("validation", "validation"));
    assert!(
        message1.contains("\"Product Designer\"") && message1.contains("not a link of the page")
    );
    assert_eq!(
        *url1,
        Some(format!("{base}/careers/product-designer").as_str())
    );
    assert!(message2.contains("\"Head of Sales\"") && message2.contains("not in the page's text"));
    assert_eq!(*url2, Some("/careers/designer"));
    assert!(
        state
            .issues
            .iter()
            .all(|i| i.step == "scrape_jobs" && !i.fatal && i.company.as_deref() == Some("Acme"))
    );

    // One call of the fast model, shown the page's text and its links, resolved.
    assert_eq!(model.call_count(), 1);
    let request = model.last_request().unwrap();
    assert_eq!(
        request.model.as_deref(),
        Some(rig.settings.haiku_model.as_str())
    );
    assert_eq!(request.system.as_deref(), Some(careers_page::SYSTEM));
    let prompt = request.messages[0].text();
    assert!(prompt.starts_with(&format!("Company: Acme\nCareers page: {base}/careers\n")));
    assert!(
        prompt.contains("We build warehouse software in Berlin."),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!(
            "- Senior Platform Engineer -> {base}/careers/platform-engineer\n"
        )),
        "{prompt}"
    );
    assert!(prompt.contains(&format!("- Product Designer -> {base}/careers/designer\n")));
    assert_eq!(rig.llm.cost().calls_by_step.get("scrape_jobs"), Some(&1));
}

#[tokio::test]
async fn a_model_error_leaves_the_company_unsupported_with_the_reason_and_the_run_going() {
    let server = server().await;
    let base = server.uri();
    let model = ScriptedModel::from_results([Err(LlmError::Timeout("read timed out".into()))]);
    let rig = rig(&model, |_| {});
    let mut state = state_with(&rig, &[("Acme", format!("{base}/careers"))]);
    steps::scrape_jobs::run(&mut state, &rig.env())
        .await
        .unwrap();

    assert_eq!(
        state.company_reports[0].outcome,
        CompanyOutcome::UnsupportedAts {
            careers_url: format!("{base}/careers")
        }
    );
    assert!(state.raw_jobs.is_empty());
    let [issue] = &state.issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert_eq!(issue.kind, "llm");
    assert_eq!(issue.company.as_deref(), Some("Acme"));
    assert!(!issue.fatal);
    assert!(
        issue.message.contains("could not be read") && issue.message.contains("read timed out"),
        "{}",
        issue.message
    );
}

#[tokio::test]
async fn past_the_cost_limit_a_page_is_not_read_and_the_step_still_ends() {
    let server = server().await;
    let base = server.uri();
    // The first page's answer reports a million input tokens: $1 on the fast model.
    let model = ScriptedModel::new(vec![responses::with_usage(
        responses::tool_call(
            "t1",
            "CareersPageJobs",
            json!({"jobs": [{"title": "Product Designer", "url": "/careers/designer", "location": null}]}),
        ),
        Usage {
            input_tokens: 1_000_000,
            output_tokens: 100,
            ..Usage::default()
        },
    )]);
    let rig = rig(&model, |s| {
        s.max_cost_per_run_usd = 0.01;
        s.warn_cost_threshold_usd = 0.005;
        s.max_concurrency = 1;
    });
    let mut state = state_with(
        &rig,
        &[
            ("Acme", format!("{base}/careers")),
            ("Acme Two", format!("{base}/careers?second")),
        ],
    );
    steps::scrape_jobs::run(&mut state, &rig.env())
        .await
        .unwrap();

    assert_eq!(model.call_count(), 1, "the second call is refused unsent");
    assert_eq!(state.company_reports[0].outcome.label(), "jobs_fetched");
    assert_eq!(
        state.company_reports[1].outcome,
        CompanyOutcome::UnsupportedAts {
            careers_url: format!("{base}/careers?second")
        }
    );
    let [issue] = &state.issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert_eq!(issue.kind, "limit");
    assert_eq!(issue.company.as_deref(), Some("Acme Two"));
    assert!(issue.message.contains("cost limit"), "{}", issue.message);
}

#[tokio::test]
async fn a_page_with_nothing_to_read_or_no_job_on_it_stays_unsupported_with_the_reason() {
    let server = server().await;
    let base = server.uri();
    let model = page_jobs(json!([
        {"title": "Staff Rust Engineer", "url": "/careers/rust", "location": null}
    ]));
    let rig = rig(&model, |s| s.max_concurrency = 1);
    let mut state = state_with(
        &rig,
        &[
            ("Acme", format!("{base}/careers")),
            ("Blank", format!("{base}/empty")),
        ],
    );
    steps::scrape_jobs::run(&mut state, &rig.env())
        .await
        .unwrap();

    let labels: Vec<&str> = state
        .company_reports
        .iter()
        .map(|r| r.outcome.label())
        .collect();
    assert_eq!(labels, ["unsupported_ats", "unsupported_ats"]);
    assert!(state.raw_jobs.is_empty());
    // The blank page is not sent to the model.
    assert_eq!(model.call_count(), 1);
    let issues: Vec<(&str, Option<&str>)> = state
        .issues
        .iter()
        .map(|i| (i.kind.as_str(), i.company.as_deref()))
        .collect();
    assert_eq!(
        issues,
        [
            ("validation", Some("Acme")),
            ("careers_page", Some("Acme")),
            ("careers_page", Some("Blank")),
        ]
    );
    assert!(state.issues[1].message.contains("none of the 1 jobs"));
    assert!(state.issues[2].message.contains("no text or links"));
}
