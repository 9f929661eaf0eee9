//! Each vendor's real recorded board, mapped; Workday's paging.

use super::*;

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
