//! The live wiring, end to end on loopback: the real Anthropic client, job-board
//! clients, Brave search client and careers-page fetcher, each pointed at a local server
//! that speaks its vendor's wire format and serves the recorded scenario.
#![cfg(test)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use agent_llm::testing::RecordedModel;
use agent_llm::{
    AnthropicConfig, AnthropicModel, ApiKey, ChatRequest, ContentBlock, RetryPolicy, ToolChoice,
};
use agent_runtime::graph::RunStatus;
use job_capabilities::ats::{AtsClient, AtsEndpoints};
use job_capabilities::fetch::{FetchPolicy, PageFetcher};
use job_capabilities::http::{PoliteClient, PolitePolicy};
use job_capabilities::search::{BraveSearch, SearchHit};
use job_hunter::{Deps, JobHunter};
use serde_json::{Value, json};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// An Anthropic Messages endpoint answering forced-tool calls from the recordings.
struct FakeAnthropic(RecordedModel);

impl Respond for FakeAnthropic {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let name = body["tool_choice"]["name"].as_str().unwrap();
        let content = &body["messages"][0]["content"];
        let text = match content {
            Value::String(text) => text.clone(),
            blocks => blocks
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect(),
        };
        let chat = ChatRequest::from_prompt(text)
            .with_model(body["model"].as_str().unwrap())
            .with_tool_choice(ToolChoice::Tool { name: name.into() });
        let answer = self.0.respond(&chat).unwrap();
        let Some(ContentBlock::ToolUse { input, .. }) = answer.content.first() else {
            panic!("no tool call recorded for {name}");
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_local",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "tool_use", "id": "toolu_local", "name": name, "input": input}],
            "stop_reason": "tool_use",
            "stop_sequence": null,
            "usage": {"input_tokens": answer.usage.input_tokens, "output_tokens": answer.usage.output_tokens}
        }))
    }
}

/// A Brave web-search endpoint serving the recorded hits, with careers pages moved to
/// the local server.
struct FakeBrave {
    hits: BTreeMap<String, Vec<SearchHit>>,
    local: String,
}

impl Respond for FakeBrave {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        assert_eq!(
            request.headers.get("x-subscription-token").unwrap(),
            "brave-test-key"
        );
        let query = request
            .url
            .query_pairs()
            .find(|(k, _)| k == "q")
            .map(|(_, v)| v.to_lowercase())
            .unwrap();
        let results: Vec<Value> = self
            .hits
            .iter()
            .filter(|(company, _)| query.contains(&company.to_lowercase()))
            .flat_map(|(_, hits)| hits.iter())
            .map(|hit| {
                let url = hit
                    .url
                    .replace("https://www.brightlinedata.example", &self.local)
                    .replace("https://oldmill.example", &self.local);
                json!({"title": hit.title, "url": url, "description": hit.snippet, "type": "search_result"})
            })
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({
            "type": "search",
            "query": {"original": query},
            "web": {"type": "search", "results": results}
        }))
    }
}

#[tokio::test]
async fn the_live_clients_run_the_whole_pipeline_over_their_wire_formats() {
    let fixtures = common::fixtures();
    let server = MockServer::start().await;
    let read = |p: &str| std::fs::read(fixtures.join(p)).unwrap();

    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(FakeAnthropic(
            job_hunter::dry_run::recorded_model(&fixtures).unwrap(),
        ))
        .mount(&server)
        .await;
    for token in ["northwindrobotics", "brightlinedata", "meridianpayments"] {
        Mock::given(method("GET"))
            .and(path(format!("/v1/boards/{token}/jobs")))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_bytes(read(&format!("ats/greenhouse/{token}.json"))),
            )
            .mount(&server)
            .await;
    }
    Mock::given(path("/v1/boards/stonewallsecurity/jobs"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "3600"))
        .mount(&server)
        .await;
    for token in ["lumenhealth", "copperleaf"] {
        Mock::given(path(format!("/v0/postings/{token}")))
            .respond_with(
                ResponseTemplate::new(200).set_body_bytes(read(&format!("ats/lever/{token}.json"))),
            )
            .mount(&server)
            .await;
    }
    for token in ["quill-labs", "halcyonbio"] {
        Mock::given(path(format!("/posting-api/job-board/{token}")))
            .respond_with(
                ResponseTemplate::new(200).set_body_bytes(read(&format!("ats/ashby/{token}.json"))),
            )
            .mount(&server)
            .await;
    }
    Mock::given(method("POST"))
        .and(path("/wday/cxs/tidewater/TidewaterCareers/jobs"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(read("ats/workday/tidewater.json")))
        .mount(&server)
        .await;
    Mock::given(path_regex("^/careers$"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/html; charset=utf-8")
                .set_body_bytes(read("pages/brightline-careers.html")),
        )
        .mount(&server)
        .await;
    let hits: BTreeMap<String, Vec<SearchHit>> =
        serde_json::from_slice(&read("search/hits.json")).unwrap();
    // Old Mill's page is served under another path on the same host.
    let mut hits = hits;
    for hit in hits.values_mut().flatten() {
        if hit.url.starts_with("https://oldmill.example") {
            hit.url = hit.url.replace("/careers", "/oldmill/careers");
        }
    }
    Mock::given(path("/oldmill/careers"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/html")
                .set_body_bytes(read("pages/oldmill-careers.html")),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/res/v1/web/search"))
        .respond_with(FakeBrave {
            hits,
            local: server.uri(),
        })
        .mount(&server)
        .await;

    let dir = tempfile::tempdir().unwrap();
    let settings = common::settings(dir.path());
    let polite = PoliteClient::new(PolitePolicy {
        min_interval_per_host: Duration::ZERO,
        ..PolitePolicy::default()
    });
    let base = server.uri();
    let endpoints = AtsEndpoints::from_lookup(|name| match name {
        "GREENHOUSE_API_BASE" | "LEVER_API_BASE" | "ASHBY_API_BASE" | "WORKDAY_API_BASE" => {
            Some(base.clone())
        }
        _ => None,
    });
    let model = AnthropicModel::new(
        AnthropicConfig::new(ApiKey::new("sk-ant-local"))
            .with_base_url(server.uri())
            .with_retry(RetryPolicy::none()),
    )
    .unwrap();
    let (dry, _) = common::dry_deps(&settings);
    let deps = Deps {
        model: Arc::new(model),
        pricing: agent_llm::PricingTable::default(),
        boards: Arc::new(AtsClient::new(polite.clone(), endpoints)),
        pages: Arc::new(
            PageFetcher::new(FetchPolicy {
                allow_loopback: true,
                min_interval_per_host: Duration::ZERO,
                ..FetchPolicy::default()
            })
            .unwrap(),
        ),
        search: Some(Arc::new(BraveSearch::new(
            "brave-test-key".into(),
            format!("{}/res/v1", server.uri()),
            polite,
        ))),
        mailer: None,
        dry_run: false,
        ..dry
    };
    let live = JobHunter::new(deps, settings.clone())
        .run(common::config("live-wiring", &settings))
        .await
        .unwrap();
    assert_eq!(live.status, RunStatus::Success, "{:?}", live.reason);

    // The same ranking and outcomes as the dry run, over the real wire formats.
    let dry_settings = common::settings(&dir.path().join("dry"));
    let dry = common::dry_run("dry", &dry_settings).await;
    assert_eq!(common::ranking(&live), common::ranking(&dry));
    let labels = |r: &job_hunter::HuntResult| {
        r.state
            .company_reports
            .iter()
            .map(|c| (c.company.clone(), c.outcome.label()))
            .collect::<Vec<_>>()
    };
    assert_eq!(labels(&live), labels(&dry));
    assert_eq!(live.cost.calls, dry.cost.calls);
    // The same answers: the same output. (Input is estimated from each request as the
    // recorded model sees it, here after the provider's wire format, so it differs.)
    assert_eq!(live.cost.usage.output_tokens, dry.cost.usage.output_tokens);
    assert!(live.cost.usd > 0.0 && live.cost.unpriced_models.is_empty());
    assert_eq!(common::eml_files(&settings.output_dir).len(), 1);
}
