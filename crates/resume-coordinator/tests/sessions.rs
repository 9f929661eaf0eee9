//! Whole sessions through the HTTP API, on the recorded (dry-run) model.
#![cfg(test)]

mod common;

use common::{
    Started, TestServer, approve_all, base64_decode, dry_run_product, durable_server, every_stage,
    named, numbered_in_order, sample_body, stages_started,
};
use job_capabilities::documents::{DocumentKind, extract_text};
use serde_json::{Value, json};
use std::collections::HashMap;

/// The gate ids opened, in order.
fn opened(events: &[common::SseEvent]) -> Vec<String> {
    named(events, "gate_open")
        .iter()
        .map(|e| e.data["gate_id"].as_str().unwrap().to_owned())
        .collect()
}

fn position(events: &[common::SseEvent], pred: impl Fn(&common::SseEvent) -> bool) -> usize {
    events.iter().position(pred).expect("event not found")
}

/// The user of the full session: a revise and an edit, a rejected blueprint.
fn picky_user() -> impl FnMut(&str, &Value) -> Value {
    let mut seen: HashMap<String, u32> = HashMap::new();
    move |name, payload| {
        let count = seen.entry(name.to_owned()).or_default();
        *count += 1;
        match (name, *count) {
            ("questionnaire_1", _) => json!({"answers": {
                "q1": "I built the Kafka pipelines for settlement events at Tidewater; they peaked at 50,000 events per second.",
                "q2": "Yes, weekly on call for 3 years; I led the response to a 40-minute payment outage and wrote the postmortem."
            }}),
            ("positioning_q_1", _) => {
                json!({"answer": "I built Prometheus and OpenTelemetry dashboards and alerts for our services."})
            }
            ("positioning_q_2", _) => {
                json!({"answer": "Six teams adopted the alerting templates I wrote."})
            }
            ("architect_review", _) => {
                json!({"approved": false, "feedback": "Lead with reliability and on-call work."})
            }
            ("section_review_summary", 1) => {
                assert_eq!(payload["section"], "Summary");
                json!({"action": "revise", "feedback": "Sound more like a platform engineer."})
            }
            ("section_review_skills", _) => {
                json!({"action": "edit", "markdown": "- Go, Python, PostgreSQL, Kafka\n- Kubernetes, Terraform, AWS (my own words)"})
            }
            _ => approve_all(name, payload),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_session_answers_every_gate_and_delivers_markdown_and_a_docx() {
    let server = TestServer::with_product(dry_run_product()).await;
    let session = server.start(sample_body()).await;
    let events = server.drive(&session, picky_user()).await;

    assert_eq!(
        opened(&events),
        [
            "coordinator:research_validation:1",
            "strategist:questionnaire_1:1",
            "strategist:positioning_q_1:1",
            "strategist:positioning_q_2:1",
            "coordinator:architect_review:1",
            "craftsman:section_review_summary:1",
            "craftsman:section_review_summary:2",
            "craftsman:section_review_experience:1",
            "craftsman:section_review_skills:1",
            // The Producer's revision of Experience, shown to the user again.
            "craftsman:section_review_experience:2",
            "coordinator:quality_review:1",
        ]
    );
    assert_eq!(stages_started(&events), every_stage());
    assert_eq!(named(&events, "stage_complete").len(), 8);
    // Ids number the events from 1, with no gap.
    assert!(numbered_in_order(&events));

    let intake = named(&events, "intake_complete")[0];
    assert_eq!(intake.data["candidate_name"], "Maya Okafor");
    assert_eq!(intake.data["evidence"][6]["id"], "R7");
    assert_eq!(
        named(&events, "jd_analysis")[0].data["role"],
        "Senior Platform Engineer"
    );
    assert_eq!(
        named(&events, "research")[0].data["notes"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    // A question comes before its gate.
    let question = position(&events, |e| e.event == "question");
    assert_eq!(events[question].data["gate"], "positioning_q_1");
    assert_eq!(events[question + 1].event, "gate_open");
    assert_eq!(
        events[question + 1].data["payload"]["why"],
        events[question].data["why"]
    );
    assert_eq!(
        named(&events, "questionnaire")[0].data["questions"][1]["id"],
        "q2"
    );
    assert_eq!(
        named(&events, "gap_analysis")[0].data["gaps"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // The rejected blueprint was redone once with the feedback.
    let blueprints = named(&events, "blueprint_ready");
    assert_eq!(blueprints.len(), 2);
    assert_ne!(
        blueprints[0].data["blueprint"]["positioning"],
        blueprints[1].data["blueprint"]["positioning"]
    );
    assert_eq!(
        blueprints[1].data["blueprint"]["sections"][0]["name"],
        "Summary"
    );

    // The revised Summary was presented again; the edit was taken as is; the Producer's
    // revision of Experience was presented again after the Producer's run.
    let drafts = named(&events, "section_draft");
    assert_eq!(drafts.len(), 5);
    assert_eq!(drafts[4].data["section"], "Experience");
    assert!(
        drafts[4].data["markdown"]
            .as_str()
            .unwrap()
            .contains("peaking at 50,000 events per second")
    );
    assert_eq!(drafts[0].data["bullets"][0]["evidence"], json!(["R4"]));
    assert!(
        drafts[1].data["markdown"]
            .as_str()
            .unwrap()
            .contains("Platform-minded")
    );
    assert_eq!(named(&events, "section_approved").len(), 4);

    // The review flagged the unsupported claim, and the Producer's request reached the
    // Craftsman over the bus and came back.
    let finding = named(&events, "review_finding")[0];
    assert_eq!(finding.data["section"], "Experience");
    assert!(
        finding.data["claim"]
            .as_str()
            .unwrap()
            .contains("1 billion")
    );
    let requested = position(&events, |e| e.event == "revision_requested");
    let completed = position(&events, |e| e.event == "revision_complete");
    assert!(requested < completed);
    assert_eq!(
        events[requested].data["request_id"],
        events[completed].data["request_id"]
    );
    assert_eq!(events[completed].data["section"], "Experience");

    let report = named(&events, "quality_report")[0];
    assert!(report.data["ats_score"].as_u64().unwrap() > 50);
    assert!(report.data["keyword_coverage"].as_f64().unwrap() > 0.5);

    let complete = named(&events, "pipeline_complete")[0];
    let markdown = complete.data["resume_markdown"].as_str().unwrap();
    assert!(markdown.starts_with("# Maya Okafor\n"));
    assert!(
        markdown.contains("peaking at 50,000 events per second"),
        "{markdown}"
    );
    assert!(!markdown.contains("1 billion"), "{markdown}");
    assert!(markdown.contains("Platform-minded backend engineer"));
    assert!(markdown.contains("- Kubernetes, Terraform, AWS (my own words)"));
    let docx = base64_decode(complete.data["docx_base64"].as_str().unwrap());
    assert_eq!(complete.data["docx_bytes"], docx.len());
    let text = extract_text(&docx, DocumentKind::Docx).unwrap();
    for expected in [
        "Maya Okafor",
        "EXPERIENCE",
        "• Built Kafka event pipelines for settlement events, peaking at 50,000 events per second",
    ] {
        assert!(text.contains(expected), "{expected} not in {text}");
    }
    assert!(complete.data["usage"]["input_tokens"].as_u64().unwrap() > 10_000);
    assert!(complete.data["usage"]["output_tokens"].as_u64().unwrap() > 1_000);
    assert_eq!(
        complete.data["cost_usd"], 0.0,
        "dry-run models have no price"
    );

    let last = events.last().unwrap();
    assert_eq!(last.event, "session_complete");
    let mut expected = complete.data.clone();
    expected.as_object_mut().unwrap().remove("type");
    assert_eq!(last.data["result"], expected);
    let status = server.status(&session).await;
    assert_eq!(status["status"], "complete");
    assert_eq!(status["stage"], "complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_draft_skips_the_blueprint_approval() {
    let server = TestServer::with_product(dry_run_product()).await;
    let mut body = sample_body();
    body["fast_draft"] = json!(true);
    let session = server.start(body).await;
    let events = server.drive(&session, approve_all).await;
    let gates = opened(&events);
    assert!(
        !gates.iter().any(|g| g.contains("architect_review")),
        "{gates:?}"
    );
    assert!(gates.contains(&"coordinator:quality_review:1".to_owned()));
    assert_eq!(named(&events, "blueprint_ready").len(), 1);
    assert_eq!(events.last().unwrap().event, "session_complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_every_flag_off_the_session_asks_nothing() {
    let server = TestServer::with_product(dry_run_product()).await;
    let mut body = sample_body();
    body["flags"] = json!({"intake_quiz": false, "research_validation": false, "gap_analysis_quiz": false, "blueprint_approval": false, "section_review": false, "quality_review_approval": false});
    let session = server.start(body).await;
    let events = server
        .drive(&session, |name, _| panic!("gate {name} opened"))
        .await;
    assert!(named(&events, "questionnaire").is_empty());
    // Three sections, and the Producer's revision of one (no review: approved as shown).
    assert_eq!(named(&events, "section_approved").len(), 4);
    // With no interview answers, the recorded bullets keep only resume evidence.
    let markdown = named(&events, "pipeline_complete")[0].data["resume_markdown"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!markdown.contains("Prometheus"), "{markdown}");
    assert_eq!(events.last().unwrap().event, "session_complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_with_last_event_id_replays_the_missed_events() {
    let server = TestServer::with_product(dry_run_product()).await;
    let session = server.start(sample_body()).await;
    let mut first = server.stream(&session, None).await;
    let seen = first.until("gate_open").await;
    drop(first);
    assert!(seen.len() > 5);
    let mut again = server.stream(&session, Some(2)).await;
    let replayed = again.until("gate_open").await;
    assert_eq!(replayed, seen[2..]);
    let status = server.status(&session).await;
    assert_eq!(status["status"], "waiting");
    assert_eq!(status["stage"], "research");
    assert_eq!(
        status["pending_gates"][0]["id"],
        "coordinator:research_validation:1"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_refused() {
    let server = TestServer::with_product(dry_run_product()).await;
    let session = server.start(sample_body()).await;
    let wrong = Started {
        token: "0".repeat(64),
        ..session.clone()
    };
    let stream = server
        .client
        .get(server.url(&session.stream_url))
        .query(&[("token", wrong.token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 401);
    let status = server
        .client
        .get(server.url(&session.status_url))
        .bearer_auth(&wrong.token)
        .send()
        .await
        .unwrap();
    assert_eq!(status.status(), 401);
    let body: Value = status.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized");
    assert_eq!(
        server
            .respond(
                &wrong,
                "strategist:questionnaire_1:1",
                json!({"answers": {}})
            )
            .await,
        401
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_answer_is_refused_and_the_gate_stays_open() {
    let server = TestServer::with_product(dry_run_product()).await;
    let session = server.start(sample_body()).await;
    let mut stream = server.stream(&session, None).await;
    stream.until("gate_open").await;
    let gate = "coordinator:research_validation:1";
    let response = server
        .client
        .post(server.url("/api/resume/respond"))
        .bearer_auth(&session.token)
        .json(&json!({"session_id": session.id, "gate": gate, "answer": {"answer": "no"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_answer");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("approved"),
        "{body}"
    );
    let status = server.status(&session).await;
    assert_eq!(status["pending_gates"][0]["id"], gate);
    assert_eq!(
        server
            .respond(&session, gate, json!({"approved": true}))
            .await,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_resumes_at_the_pending_gate() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let mut first = TestServer::spawn(durable_server(&path).await).await;
    let session = first.start(sample_body()).await;
    let mut stream = first.stream(&session, None).await;
    let mut user = picky_user();
    let last_id = loop {
        let event = stream.next().await.expect("stream ended");
        if event.event != "gate_open" {
            continue;
        }
        let gate = event.data["gate_id"].as_str().unwrap().to_owned();
        if gate == "craftsman:section_review_experience:1" {
            break event.id;
        }
        let answer = user(event.data["name"].as_str().unwrap(), &event.data["payload"]);
        assert_eq!(first.respond(&session, &gate, answer).await, 200);
    };
    drop(stream);
    first.task.abort();
    let _ = (&mut first.task).await;

    let server = durable_server(&path).await;
    assert_eq!(server.resume_unfinished().await.unwrap(), 1);
    let second = TestServer::spawn(server).await;
    let status = second.status(&session).await;
    assert_eq!(status["stage"], "writing");
    let pending: Vec<&str> = status["pending_gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap())
        .collect();
    assert_eq!(pending, ["craftsman:section_review_experience:1"]);

    // Answer the pending gate, then the rest, on the new server.
    assert_eq!(
        second
            .respond(
                &session,
                "craftsman:section_review_experience:1",
                json!({"action": "approve"})
            )
            .await,
        200
    );
    let mut stream = second.stream(&session, Some(last_id)).await;
    let mut rest = Vec::new();
    while let Some(event) = stream.next().await {
        if event.event == "gate_open" {
            let gate = event.data["gate_id"].as_str().unwrap();
            let answer = user(event.data["name"].as_str().unwrap(), &event.data["payload"]);
            assert_eq!(second.respond(&session, gate, answer).await, 200);
        }
        rest.push(event);
    }
    // The rerun passed the answered gates at once: only the later ones opened again.
    assert_eq!(
        opened(&rest),
        [
            "craftsman:section_review_skills:1",
            "craftsman:section_review_experience:2",
            "coordinator:quality_review:1"
        ]
    );
    let complete = named(&rest, "pipeline_complete")[0];
    assert!(
        complete.data["resume_markdown"]
            .as_str()
            .unwrap()
            .contains("Platform-minded")
    );
    assert_eq!(rest.last().unwrap().event, "session_complete");
    // The run resumed inside the writing stage, at the Craftsman's last round: the stage
    // was not started again and no earlier work was redone.
    assert!(named(&rest, "blueprint_ready").is_empty());
    assert_eq!(named(&rest, "stage_start")[0].data["stage"], "production");
    // Replayed from the start, the session has every event once, ids strictly increasing.
    let all = second.replay(&session).await;
    assert!(numbered_in_order(&all));
    assert_eq!(stages_started(&all), every_stage());
}
