//! Missing boards, a long `retry-after`, unexpected bodies, untitled postings, structured
//! pay, and a Lever board hosted in the EU.

use super::*;

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
