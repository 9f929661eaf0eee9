//! The ATS clients replaying real recorded job-board bodies (read in place from the
//! shared real-data checkout, see its INDEX.md §3) from a local mock server.
#![cfg(test)]

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use job_capabilities::ats::{
    AtsBoard, AtsClient, AtsEndpoints, AtsError, AtsKind, JobBoardClient, detect_ats, parse_ashby,
    parse_greenhouse, parse_lever, parse_workday_list,
};
use job_capabilities::http::{PoliteClient, PolitePolicy};
use job_capabilities::{JobSource, PayInterval, RawJob, SalaryOrigin};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A real recorded body, read in place (never copied into this repository).
fn realdata(relative: &str) -> Vec<u8> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/realdata/ats")
        .join(relative);
    std::fs::read(&file).unwrap_or_else(|error| {
        panic!(
            "real ATS body missing at {}: {error}. These tests replay the shared real-data \
             checkout (../shared/realdata next to the workspace, INDEX.md §3); it must be present.",
            file.display()
        )
    })
}

fn realdata_json(relative: &str) -> Value {
    serde_json::from_slice(&realdata(relative)).unwrap()
}

fn json_response(body: Vec<u8>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "application/json")
}

/// A client whose four API bases all point at `server`.
fn client_for(server: &MockServer) -> AtsClient {
    let base = server.uri();
    let endpoints =
        AtsEndpoints::from_lookup(|name| name.ends_with("_API_BASE").then(|| format!("{base}/")));
    assert_eq!(endpoints.workday.as_deref(), Some(base.as_str()));
    let http = PoliteClient::new(PolitePolicy {
        min_interval_per_host: Duration::from_millis(1),
        ..Default::default()
    });
    AtsClient::new(http, endpoints)
}

fn at(rfc3339: &str) -> Option<DateTime<Utc>> {
    Some(
        DateTime::parse_from_rfc3339(rfc3339)
            .unwrap()
            .with_timezone(&Utc),
    )
}

/// No markup and no entities left in a description.
fn assert_plain_text(job: &RawJob) {
    let text = &job.description;
    let tag = text
        .as_bytes()
        .windows(2)
        .any(|w| w[0] == b'<' && (w[1].is_ascii_alphabetic() || w[1] == b'/' || w[1] == b'!'));
    assert!(!tag, "HTML left in {:?}: {text}", job.title);
    for entity in [
        "&lt;", "&gt;", "&amp;", "&quot;", "&#39;", "&nbsp;", "&rsquo;",
    ] {
        assert!(
            !text.contains(entity),
            "{entity} left in {:?}: {text}",
            job.title
        );
    }
}

#[tokio::test]
async fn greenhouse_real_board_is_mapped() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/boards/vercel/jobs"))
        .and(query_param("content", "true"))
        .respond_with(json_response(realdata("hunt/greenhouse.json")))
        .expect(1)
        .mount(&server)
        .await;
    let board = detect_ats("https://boards.greenhouse.io/vercel/jobs/5432101").unwrap();
    // The body's `company_name` wins over the name we pass.
    let jobs = client_for(&server)
        .fetch_jobs(&board, "Vercel Inc.")
        .await
        .unwrap();

    let expected = [
        (
            "6136160004",
            "Account Executive, Commercial",
            "https://job-boards.greenhouse.io/vercel/jobs/6136160004",
            "2026-08-06T12:50:10-04:00",
        ),
        (
            "5999792004",
            "Account Executive, Majors",
            "https://job-boards.greenhouse.io/vercel/jobs/5999792004",
            "2026-05-21T09:26:09-04:00",
        ),
    ];
    assert_eq!(jobs.len(), expected.len());
    for (job, (id, title, url, published)) in jobs.iter().zip(expected) {
        assert_eq!(job.source, JobSource::Greenhouse);
        assert_eq!(job.external_id.as_deref(), Some(id));
        assert_eq!(job.title, title);
        assert_eq!(job.company, "Vercel");
        assert_eq!(job.location.as_deref(), Some("Hybrid - London"));
        assert_eq!(job.department.as_deref(), Some("Account Executive"));
        assert_eq!(job.url, url);
        assert_eq!(job.posted_at, at(published));
        assert!(
            job.description.starts_with(
                "About Vercel:\nVercel is the agentic infrastructure company, freeing people \
                 and agents to ship what's next."
            ),
            "{}",
            job.description
        );
        assert!(job.description.contains("trusted by OpenAI, PayPal, Ramp"));
        assert_plain_text(job);
        assert_eq!((job.remote, &job.salary), (None, &None));
    }
    insta::assert_json_snapshot!("greenhouse_job", &jobs[0]);
}

#[tokio::test]
async fn lever_real_postings_are_mapped() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v0/postings/spotify"))
        .and(query_param("mode", "json"))
        .respond_with(json_response(realdata("hunt/lever.json")))
        .expect(1)
        .mount(&server)
        .await;
    let board =
        detect_ats("https://jobs.lever.co/spotify/2193db3f-77c5-43b8-b030-8f92c9882bf1/apply")
            .unwrap();
    let jobs = client_for(&server)
        .fetch_jobs(&board, "Spotify")
        .await
        .unwrap();

    let expected = [
        (
            "2193db3f-77c5-43b8-b030-8f92c9882bf1",
            "Android Engineer - Experience",
            "London; Stockholm",
            "Engineering",
            "Permanent",
            "2026-06-23T11:29:45.805Z",
            [
                "We design Spotify’s consumer experience—end to end",
                // `<li><p>…</p></li>`: html_to_text drops the marker when a block is inside.
                "What You'll Do\n- Develop and maintain mobile client components",
                "Where You'll Be\n- This role is based in London or Stockholm.",
                "Spotify is an equal opportunity employer.",
            ],
        ),
        (
            "d87833d0-fb78-4794-b45d-3fe5c8274bc8",
            "Artist & Label Partnerships Contractor, Vietnam",
            "Ho Chi Minh",
            "Content",
            "Short Term",
            "2026-08-27T03:43:07.805Z",
            [
                "Spotify is looking for a short-term contractor for the Artist & Label Partnerships team in Vietnam.",
                "What You'll Do\n- Maintain positive partnerships across artist and label communities within Vietnam.",
                "- This contract is based in Ho Chi Minh City, Vietnam.",
                "Spotify is an equal opportunity employer.",
            ],
        ),
    ];
    assert_eq!(jobs.len(), expected.len());
    for (job, (id, title, location, department, commitment, created, phrases)) in
        jobs.iter().zip(expected)
    {
        assert_eq!(job.source, JobSource::Lever);
        assert_eq!(job.external_id.as_deref(), Some(id));
        assert_eq!(job.title, title);
        assert_eq!(job.company, "Spotify");
        assert_eq!(job.location.as_deref(), Some(location));
        assert_eq!(job.department.as_deref(), Some(department));
        assert_eq!(job.employment_type.as_deref(), Some(commitment));
        assert_eq!(job.url, format!("https://jobs.lever.co/spotify/{id}"));
        assert_eq!(
            job.apply_url.as_deref(),
            Some(format!("https://jobs.lever.co/spotify/{id}/apply").as_str())
        );
        assert_eq!(job.posted_at, at(created));
        assert_eq!(job.remote, Some(false), "workplaceType hybrid");
        for phrase in phrases {
            assert!(
                job.description.contains(phrase),
                "{phrase:?} not in {}",
                job.description
            );
        }
        assert_plain_text(job);
        assert_eq!(job.salary, None);
    }
    insta::assert_json_snapshot!("lever_job", &jobs[0]);
}

#[tokio::test]
async fn ashby_real_board_is_mapped() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/posting-api/job-board/linear"))
        .and(query_param("includeCompensation", "true"))
        .respond_with(json_response(realdata("hunt/ashby.json")))
        .expect(1)
        .mount(&server)
        .await;
    let board = detect_ats("https://jobs.ashbyhq.com/linear").unwrap();
    let jobs = client_for(&server)
        .fetch_jobs(&board, "Linear")
        .await
        .unwrap();

    let expected = [
        (
            "d3bc1ced-3ce4-4086-a050-555055dbb1ff",
            "Europe",
            "2021-04-27T20:13:45.158+00:00",
        ),
        (
            "cd5ae036-0223-427a-b038-ba16ef9dcb32",
            "North America",
            "2021-08-18T20:48:26.891+00:00",
        ),
    ];
    assert_eq!(jobs.len(), expected.len());
    for (job, (id, location, published)) in jobs.iter().zip(expected) {
        assert_eq!(job.source, JobSource::Ashby);
        assert_eq!(job.external_id.as_deref(), Some(id));
        assert_eq!(job.title, "Senior / Staff Fullstack Engineer");
        assert_eq!(job.company, "Linear");
        assert_eq!(job.location.as_deref(), Some(location));
        assert_eq!(job.remote, Some(true));
        assert_eq!(job.department.as_deref(), Some("Product"));
        assert_eq!(job.employment_type.as_deref(), Some("FullTime"));
        assert_eq!(job.url, format!("https://jobs.ashbyhq.com/linear/{id}"));
        assert_eq!(
            job.apply_url.as_deref(),
            Some(format!("https://jobs.ashbyhq.com/linear/{id}/application").as_str())
        );
        assert_eq!(job.posted_at, at(published));
        assert!(job.description.starts_with(
            "At Linear, we're building the product development system for teams and agents."
        ));
        assert!(
            job.description
                .contains("platform of choice for more than 40,000 companies")
        );
        assert_plain_text(job);
        // `summaryComponents` is empty in this body.
        assert_eq!(job.salary, None);
    }
    insta::assert_json_snapshot!("ashby_job", &jobs[0]);
}

#[tokio::test]
async fn workday_real_page_is_mapped_and_paging_stops_at_an_empty_page() {
    let server = MockServer::start().await;
    let jobs_path = "/wday/cxs/nvidia/NVIDIAExternalCareerSite/jobs";
    Mock::given(method("POST"))
        .and(path(jobs_path))
        .and(body_partial_json(json!({"offset": 0})))
        .respond_with(json_response(realdata("hunt/workday.json")))
        .expect(1)
        .mount(&server)
        .await;
    // Later pages of real sites carry `total: 0`; this one is empty, which ends paging.
    Mock::given(method("POST"))
        .and(path(jobs_path))
        .and(body_partial_json(json!({"offset": 20})))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"total": 0, "jobPostings": []})),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .with_priority(10)
        .expect(0)
        .mount(&server)
        .await;
    // The first posting's detail (a body we wrote in Workday's `jobPostingInfo` shape);
    // the second's is missing, which leaves that job without a description.
    Mock::given(method("GET"))
        .and(path(
            "/wday/cxs/nvidia/NVIDIAExternalCareerSite/job/Vietnam-Hanoi/Director--Engineering---Software-Engineering_JR2021061",
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "jobPostingInfo": {
                "title": "Director, Engineering – Software Engineering",
                "jobDescription": "<p>Lead the <b>software</b> engineering teams.</p><ul><li>Own delivery</li></ul>",
                "timeType": "Full time",
                "jobReqId": "JR2021061"
            }
        })))
        .expect(1)
        .mount(&server)
        .await;
    let board =
        detect_ats("https://nvidia.wd5.myworkdayjobs.com/NVIDIAExternalCareerSite").unwrap();
    let before = Utc::now();
    let jobs = client_for(&server)
        .fetch_jobs(&board, "NVIDIA")
        .await
        .unwrap();
    let after = Utc::now();

    let requests = server.received_requests().await.unwrap();
    let bodies: Vec<Value> = requests
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .map(|r| r.body_json().unwrap())
        .collect();
    assert_eq!(
        bodies,
        [
            json!({"appliedFacets": {}, "limit": 20, "offset": 0, "searchText": ""}),
            json!({"appliedFacets": {}, "limit": 20, "offset": 20, "searchText": ""}),
        ]
    );

    let site_url = "https://nvidia.wd5.myworkdayjobs.com/NVIDIAExternalCareerSite";
    let expected = [
        (
            "JR2021061",
            "Director, Engineering – Software Engineering",
            "2 Locations",
            "/job/Vietnam-Hanoi/Director--Engineering---Software-Engineering_JR2021061",
        ),
        (
            "JR2026094",
            "Senior System Engineer, Solution Engineering",
            "5 Locations",
            "/job/Poland-Remote/Senior-System-Engineer--Solution-Engineering_JR2026094",
        ),
    ];
    assert_eq!(jobs.len(), expected.len());
    for (job, (id, title, location, external_path)) in jobs.iter().zip(expected) {
        assert_eq!(job.source, JobSource::Workday);
        assert_eq!(job.external_id.as_deref(), Some(id));
        assert_eq!(job.title, title);
        assert_eq!(job.company, "NVIDIA");
        assert_eq!(job.location.as_deref(), Some(location));
        assert_eq!(job.url, format!("{site_url}{external_path}"));
    }
    // The list carries no description: each comes from the posting's detail, when it
    // can be read.
    assert!(
        jobs[0]
            .description
            .contains("Lead the software engineering teams."),
        "{}",
        jobs[0].description
    );
    assert_eq!(jobs[0].employment_type.as_deref(), Some("Full time"));
    assert_eq!(jobs[1].description, "");
    // "Posted 30+ Days Ago" says too little; "Posted 4 Days Ago" is about four days back.
    assert_eq!(jobs[0].posted_at, None);
    let posted = jobs[1].posted_at.unwrap();
    assert!(before - TimeDelta::days(4) <= posted && posted <= after - TimeDelta::days(4));
    insta::assert_json_snapshot!("workday_job", &jobs[0]);
}

#[tokio::test]
async fn workday_paging_is_capped_at_200_postings() {
    let server = MockServer::start().await;
    let real = realdata_json("hunt/workday.json");
    let posting = real["jobPostings"][0].clone();
    let page = json!({"total": 2000, "jobPostings": vec![posting; 20]});
    Mock::given(method("POST"))
        .and(path("/wday/cxs/nvidia/NVIDIAExternalCareerSite/jobs"))
        .respond_with(ResponseTemplate::new(200).set_body_json(page))
        .mount(&server)
        .await;
    let board =
        detect_ats("https://nvidia.wd5.myworkdayjobs.com/en-US/NVIDIAExternalCareerSite").unwrap();
    let jobs = client_for(&server)
        .fetch_jobs(&board, "NVIDIA")
        .await
        .unwrap();
    assert_eq!(jobs.len(), 200);
    let requests = server.received_requests().await.unwrap();
    let count = |verb: &str| {
        requests
            .iter()
            .filter(|r| r.method.as_str() == verb)
            .count()
    };
    assert_eq!(count("POST"), 10);
    // Descriptions are read for the first postings only, one detail each.
    assert_eq!(count("GET"), job_capabilities::ats::MAX_WORKDAY_DETAILS);
    // The locale of the site's URL is kept in posting pages.
    assert!(
        jobs[0].url.starts_with(
            "https://nvidia.wd5.myworkdayjobs.com/en-US/NVIDIAExternalCareerSite/job/"
        )
    );
}

#[test]
fn workday_detail_body_agrees_with_detection_and_page_urls() {
    let detail = realdata_json("alexypeng-swe-intern-alerts/workday_job_detail.json");
    let info = &detail["jobPostingInfo"];
    let external_url = info["externalUrl"].as_str().unwrap();
    let board = detect_ats(external_url).unwrap();
    let site = board.workday.clone().unwrap();
    assert_eq!(
        (board.kind, board.token.as_str()),
        (AtsKind::Workday, "salesforce")
    );
    assert_eq!(site.host, "salesforce.wd12.myworkdayjobs.com");
    assert_eq!(
        (site.site.as_str(), site.locale.as_deref()),
        ("Futureforce_Internships", None)
    );

    // A list entry for this posting maps to the very page Workday publishes as externalUrl.
    let external_path = external_url
        .split_once("/Futureforce_Internships")
        .unwrap()
        .1;
    let list = json!({"total": 1, "jobPostings": [{
        "title": info["title"], "externalPath": external_path, "locationsText": info["location"],
        "postedOn": "Posted Today", "bulletFields": [info["jobReqId"]],
    }]});
    let jobs = parse_workday_list(
        list.to_string().as_bytes(),
        &site,
        "Salesforce",
        &AtsEndpoints::default(),
    )
    .unwrap();
    assert_eq!(jobs[0].url, external_url);
    assert_eq!(jobs[0].title, "Summer 2027 Intern - Software Engineer");
    assert_eq!(jobs[0].external_id.as_deref(), Some("JR340771"));
    assert_eq!(
        jobs[0].location.as_deref(),
        Some("California - San Francisco")
    );

    // The detail body is not a list page: the list parser says which field is missing.
    let err = parse_workday_list(
        &realdata("alexypeng-swe-intern-alerts/workday_job_detail.json"),
        &site,
        "Salesforce",
        &AtsEndpoints::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, AtsError::Parse { kind: AtsKind::Workday, message } if message.contains("jobPostings")),
        "{err}"
    );
}

#[tokio::test]
async fn missing_boards_are_board_not_found() {
    let server = MockServer::start().await;
    Mock::given(path("/v1/boards/nosuchboard/jobs"))
        .respond_with(
            ResponseTemplate::new(404)
                .set_body_json(json!({"status": 404, "error": "Job not found"})),
        )
        .mount(&server)
        .await;
    Mock::given(path("/v0/postings/nosuchco"))
        .respond_with(
            ResponseTemplate::new(404)
                .set_body_json(json!({"ok": false, "error": "Document not found"})),
        )
        .mount(&server)
        .await;
    let client = client_for(&server);
    for url in [
        "https://boards.greenhouse.io/nosuchboard",
        "https://jobs.lever.co/nosuchco",
        "https://jobs.ashbyhq.com/nosuchboard",
        "https://nosuch.wd1.myworkdayjobs.com/External",
    ] {
        let board = detect_ats(url).unwrap();
        let err = client.fetch_jobs(&board, "Nobody").await.unwrap_err();
        assert_eq!(
            err,
            AtsError::BoardNotFound {
                kind: board.kind,
                token: board.token.clone()
            },
            "{url}"
        );
        assert!(!err.is_blocked());
    }
    // A Workday board without its site cannot be located either.
    let bare = AtsBoard {
        kind: AtsKind::Workday,
        token: "nvidia".into(),
        workday: None,
    };
    assert!(matches!(
        client.fetch_jobs(&bare, "NVIDIA").await,
        Err(AtsError::BoardNotFound {
            kind: AtsKind::Workday,
            ..
        })
    ));
}

#[tokio::test]
async fn a_long_retry_after_is_blocked() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "3600"))
        .expect(1)
        .mount(&server)
        .await;
    let board = detect_ats("https://jobs.ashbyhq.com/linear").unwrap();
    let err = client_for(&server)
        .fetch_jobs(&board, "Linear")
        .await
        .unwrap_err();
    assert!(err.is_blocked(), "{err}");
    assert!(matches!(err, AtsError::Http(_)));
}

#[tokio::test]
async fn unexpected_bodies_name_the_vendor_and_field() {
    let server = MockServer::start().await;
    let cases: [(&str, &str, Value, &str); 4] = [
        (
            "https://boards.greenhouse.io/acme",
            "/v1/boards/acme/jobs",
            json!({"jobs": [{"title": 42}]}),
            "jobs[0].title",
        ),
        (
            "https://jobs.lever.co/acme",
            "/v0/postings/acme",
            json!([{"text": "Engineer", "categories": {"allLocations": "London"}}]),
            "[0].categories.allLocations",
        ),
        (
            "https://jobs.ashbyhq.com/acme",
            "/posting-api/job-board/acme",
            json!({"jobs": [{"title": "Engineer", "isListed": "yes"}]}),
            "jobs[0].isListed",
        ),
        (
            "https://acme.wd1.myworkdayjobs.com/External",
            "/wday/cxs/acme/External/jobs",
            json!({"total": 1, "jobPostings": {"title": "Engineer"}}),
            "jobPostings",
        ),
    ];
    for (_, api_path, body, _) in &cases {
        Mock::given(path(*api_path))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .mount(&server)
            .await;
    }
    let client = client_for(&server);
    for (url, _, _, field) in cases {
        let board = detect_ats(url).unwrap();
        let err = client.fetch_jobs(&board, "Acme").await.unwrap_err();
        let AtsError::Parse { kind, message } = &err else {
            panic!("{url}: {err:?}")
        };
        assert_eq!(*kind, board.kind);
        assert!(message.contains(&format!("`{field}`")), "{url}: {message}");
        assert!(err.to_string().contains(board.kind.as_str()), "{err}");
    }
    // Not JSON at all, e.g. a login page.
    let err = parse_greenhouse(b"<!DOCTYPE html><html></html>", "Acme").unwrap_err();
    assert!(
        matches!(
            err,
            AtsError::Parse {
                kind: AtsKind::Greenhouse,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn untitled_postings_are_skipped() {
    let mut greenhouse = realdata_json("hunt/greenhouse.json");
    greenhouse["jobs"][0]
        .as_object_mut()
        .unwrap()
        .remove("title");
    let jobs = parse_greenhouse(greenhouse.to_string().as_bytes(), "Vercel").unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].title, "Account Executive, Majors");

    let mut lever = realdata_json("hunt/lever.json");
    lever[1]["text"] = json!("");
    let jobs = parse_lever(lever.to_string().as_bytes(), "Spotify").unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].title, "Android Engineer - Experience");
}

#[test]
fn structured_pay_and_workplace_fields_are_read() {
    // The recorded bodies publish no pay; these fields are added in the vendors' shapes.
    let mut lever = realdata_json("hunt/lever.json");
    lever[0]["salaryRange"] =
        json!({"min": 95000, "max": 130000, "currency": "GBP", "interval": "per-year-salary"});
    lever[1]["salaryRange"] =
        json!({"min": 25.5, "max": 30, "currency": "USD", "interval": "per-hour-wage"});
    lever[1]["workplaceType"] = json!("remote");
    let jobs = parse_lever(lever.to_string().as_bytes(), "Spotify").unwrap();
    let salary = jobs[0].salary.clone().unwrap();
    assert_eq!((salary.min, salary.max), (Some(95000.0), Some(130000.0)));
    assert_eq!(
        (salary.currency.as_str(), salary.interval),
        ("GBP", PayInterval::Year)
    );
    assert_eq!(salary.origin, SalaryOrigin::Structured);
    let hourly = jobs[1].salary.clone().unwrap();
    assert_eq!(
        (hourly.min, hourly.interval),
        (Some(25.5), PayInterval::Hour)
    );
    assert_eq!(jobs[1].remote, Some(true));

    let mut ashby = realdata_json("hunt/ashby.json");
    ashby["jobs"][1]["compensation"]["summaryComponents"] = json!([
        {"compensationType": "Salary", "interval": "1 YEAR", "currencyCode": "USD",
         "minValue": 180000, "maxValue": 240000},
        {"compensationType": "EquityPercentage", "interval": "NONE", "minValue": 0.01, "maxValue": 0.05}
    ]);
    ashby["jobs"][0]["isListed"] = json!(false);
    let jobs = parse_ashby(ashby.to_string().as_bytes(), "Linear").unwrap();
    assert_eq!(jobs.len(), 1, "the unlisted job is skipped");
    let salary = jobs[0].salary.clone().unwrap();
    assert_eq!((salary.min, salary.max), (Some(180000.0), Some(240000.0)));
    assert_eq!(
        (salary.currency.as_str(), salary.interval),
        ("USD", PayInterval::Year)
    );
    assert_eq!(salary.origin, SalaryOrigin::Structured);
}

#[tokio::test]
async fn a_lever_board_hosted_in_the_eu_is_read_from_lever_eu_api() {
    let global = MockServer::start().await;
    let eu = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v0/postings/spotify"))
        .respond_with(json_response(realdata("hunt/lever.json")))
        .expect(1)
        .mount(&eu)
        .await;
    let (global_base, eu_base) = (global.uri(), eu.uri());
    let endpoints = AtsEndpoints::from_lookup(|name| match name {
        "LEVER_API_BASE" => Some(global_base.clone()),
        "LEVER_EU_API_BASE" => Some(eu_base.clone()),
        _ => None,
    });
    let client = AtsClient::new(
        PoliteClient::new(PolitePolicy {
            min_interval_per_host: Duration::from_millis(1),
            ..Default::default()
        }),
        endpoints,
    );
    let board = detect_ats("https://jobs.eu.lever.co/spotify").unwrap();
    let jobs = client.fetch_jobs(&board, "Spotify").await.unwrap();
    assert_eq!(jobs.len(), 2);
    // Asked of the global API first (a 404 there), then of the EU API.
    assert_eq!(global.received_requests().await.unwrap().len(), 1);

    let nowhere = detect_ats("https://jobs.lever.co/nobody").unwrap();
    let err = client.fetch_jobs(&nowhere, "Nobody").await.unwrap_err();
    assert!(matches!(err, AtsError::BoardNotFound { .. }), "{err:?}");
}
