//! The Producer's revisions and the final review, on the recorded model and on scripted
//! Producers: a revision is shown to the user again and needs their approval; a section
//! the user edited is never overwritten; a section is revised for the Producer at most
//! once, counted in code; rejecting `quality_review` with feedback sends the sections it
//! names back to revision.
#![cfg(test)]

mod common;

use agent_llm::testing::RecordedModel;
use common::{
    SseEvent, TestServer, approve_all, durable_server, fixture_text, fixtures, named, sample_body,
};
use resume_coordinator::{ResumeProduct, dry_run};
use serde_json::{Value, json};
use std::sync::Arc;

/// The recorded model, with its Producer's turns replaced by `producer` (tool calls per
/// turn, then a closing sentence) when given.
fn model(producer: Option<Vec<Vec<Value>>>) -> Arc<RecordedModel> {
    let mut recording: Value = serde_json::from_str(&fixture_text("model.json")).unwrap();
    if let Some(turns) = producer {
        let answers = recording["answers"].as_array_mut().unwrap();
        answers.retain(|a| a["route"] != "Producer");
        let count = turns.len();
        for (turn, calls) in turns.into_iter().enumerate() {
            answers.push(json!({"route": "Producer", "when": "Phase: production\n", "turn": turn + 1, "tool_calls": calls}));
        }
        answers.push(json!({"route": "Producer", "when": "Phase: production\n", "turn": count + 1, "text": "Done."}));
    }
    let text = serde_json::to_string(&recording).unwrap();
    Arc::new(
        RecordedModel::from_json(&text, "test")
            .unwrap()
            .with_default_model("dry-run")
            .with_request_log(true),
    )
}

fn server_for(model: &Arc<RecordedModel>) -> impl Future<Output = TestServer> {
    let product = Arc::new(ResumeProduct::new(model.clone(), dry_run::router()));
    TestServer::with_product(product)
}

fn opened(events: &[SseEvent]) -> Vec<String> {
    named(events, "gate_open")
        .iter()
        .map(|e| e.data["gate_id"].as_str().unwrap().to_owned())
        .collect()
}

fn position(events: &[SseEvent], pred: impl Fn(&SseEvent) -> bool) -> usize {
    events.iter().position(pred).expect("event not found")
}

/// The revision prompts the model was sent for `section`.
fn revisions_of(model: &RecordedModel, section: &str) -> Vec<String> {
    model
        .requests_on("SectionRevision")
        .iter()
        .map(|r| r.messages[0].text())
        .filter(|text| text.contains(&format!("Section: {section}\n")))
        .collect()
}

fn markdown(events: &[SseEvent]) -> String {
    named(events, "pipeline_complete")[0].data["resume_markdown"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_producers_revision_is_shown_again_and_the_user_can_send_it_back() {
    let model = model(None);
    let server = server_for(&model).await;
    let session = server.start(sample_body()).await;
    let feedback = "Name the settlement events in the Kafka bullet.";
    let mut revised_shown = 0;
    let events = server
        .drive(&session, |name, payload| match name {
            "section_review_experience"
                if payload["markdown"].as_str().unwrap().contains("50,000") =>
            {
                // The first time the Producer's revision is shown, send it back.
                revised_shown += 1;
                if revised_shown == 1 {
                    json!({"action": "revise", "feedback": feedback})
                } else {
                    json!({"action": "approve"})
                }
            }
            _ => approve_all(name, payload),
        })
        .await;
    assert_eq!(events.last().unwrap().event, "session_complete");
    let gates = opened(&events);
    let experience: Vec<&String> = gates
        .iter()
        .filter(|g| g.contains("section_review_experience"))
        .collect();
    assert_eq!(
        experience,
        [
            "craftsman:section_review_experience:1",
            "craftsman:section_review_experience:2",
            "craftsman:section_review_experience:3",
        ]
    );
    // The revision came back, then was shown as a new draft before anything else.
    let completed = position(&events, |e| e.event == "revision_complete");
    let draft = position(&events, |e| {
        e.event == "section_draft" && e.id > events[completed].id
    });
    assert_eq!(events[draft].data["section"], "Experience");
    assert!(
        events[draft].data["markdown"]
            .as_str()
            .unwrap()
            .contains("peaking at 50,000")
    );
    let report = position(&events, |e| e.event == "quality_report");
    assert!(draft < report);
    // The Producer's revision, then the user's, each once.
    let prompts = revisions_of(&model, "Experience");
    assert_eq!(prompts.len(), 2, "{prompts:#?}");
    assert!(prompts[0].contains("Revision request: The Kafka bullet claims 1 billion"));
    assert!(prompts[1].contains(&format!("Revision request: {feedback}")));
    assert!(gates.last().unwrap().contains("quality_review"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_producer_never_overwrites_a_section_the_user_edited() {
    let model = model(None);
    let server = server_for(&model).await;
    let session = server.start(sample_body()).await;
    let mine = "### Senior Backend Engineer, Tidewater Payments (2020-2025)\n- My own Kafka bullet, 50,000 events per second";
    let events = server
        .drive(&session, |name, payload| match name {
            "section_review_experience" => json!({"action": "edit", "markdown": mine}),
            _ => approve_all(name, payload),
        })
        .await;
    assert_eq!(events.last().unwrap().event, "session_complete");
    // The recorded Producer still asks for Experience; nothing is sent or revised.
    assert!(named(&events, "revision_requested").is_empty());
    assert!(revisions_of(&model, "Experience").is_empty());
    let gates = opened(&events);
    assert_eq!(
        gates
            .iter()
            .filter(|g| g.contains("section_review_experience"))
            .count(),
        1
    );
    // The Producer was told why.
    let told = model.requests_on("Producer").iter().any(|r| {
        serde_json::to_string(&r.messages)
            .unwrap()
            .contains("their text is final")
    });
    assert!(told);
    let markdown = markdown(&events);
    assert!(markdown.contains("## EXPERIENCE\n\n### Senior Backend Engineer, Tidewater Payments (2020-2025)\n- My own Kafka bullet"), "{markdown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_section_is_revised_for_the_producer_at_most_once() {
    let ask = |reason: &str| json!({"name": "request_revision", "input": {"section": "Experience", "reason": reason}});
    // Two requests for Experience in one turn, then a third: only the first is sent.
    let model = model(Some(vec![
        vec![json!({"name": "adversarial_review", "input": {}})],
        vec![
            ask("The Kafka bullet overstates A1."),
            ask("Also shorten it."),
        ],
        vec![ask("Try once more.")],
    ]));
    let server = server_for(&model).await;
    let session = server.start(sample_body()).await;
    let events = server.drive(&session, approve_all).await;
    assert_eq!(events.last().unwrap().event, "session_complete");
    assert_eq!(named(&events, "revision_requested").len(), 1);
    assert_eq!(named(&events, "revision_complete").len(), 1);
    assert_eq!(revisions_of(&model, "Experience").len(), 1);
    // The Producer was told, twice, that Experience is revised already.
    let conversation =
        serde_json::to_string(&model.requests_on("Producer").last().unwrap().messages).unwrap();
    assert_eq!(
        conversation
            .matches("was revised 1 time(s) already")
            .count(),
        2,
        "{conversation}"
    );
    // The one revision was shown to the user again.
    assert!(opened(&events).contains(&"craftsman:section_review_experience:2".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_the_quality_review_sends_the_named_sections_back() {
    let model = model(None);
    let server = server_for(&model).await;
    let session = server.start(sample_body()).await;
    let mut shown = Vec::new();
    let events = server
        .drive(&session, |name, payload| match name {
            "quality_review" => {
                shown.push(payload["resume_markdown"].as_str().unwrap().to_owned());
                if shown.len() == 1 {
                    json!({"approved": false, "feedback": "Group the Skills by kind."})
                } else {
                    json!({"approved": true})
                }
            }
            _ => approve_all(name, payload),
        })
        .await;
    assert_eq!(
        events.last().unwrap().event,
        "session_complete",
        "{:?}",
        events.last()
    );
    let gates = opened(&events);
    let tail: Vec<&str> = gates[gates.len() - 3..]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(
        tail,
        [
            "coordinator:quality_review:1",
            "craftsman:section_review_skills:2",
            "coordinator:quality_review:2"
        ]
    );
    // Only Skills went back, with the feedback, and its new text was what the second
    // review showed and what was delivered.
    let prompts = revisions_of(&model, "Skills");
    assert_eq!(prompts.len(), 1);
    assert!(prompts[0].contains("Revision request: Group the Skills by kind."));
    assert_eq!(revisions_of(&model, "Summary").len(), 0);
    assert!(!shown[0].contains("Languages and data"));
    assert!(shown[1].contains("Languages and data: Go, Python, PostgreSQL, Kafka"));
    assert_eq!(shown[1], markdown(&events));
    assert_eq!(named(&events, "quality_report").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quality_review_shows_the_text_it_asks_to_approve() {
    let server =
        TestServer::with_product(Arc::new(ResumeProduct::dry_run(fixtures()).unwrap())).await;
    let session = server.start(sample_body()).await;
    let mut shown = None;
    let events = server
        .drive(&session, |name, payload| {
            if name == "quality_review" {
                shown = Some(payload["resume_markdown"].as_str().unwrap().to_owned());
                assert!(payload["keyword_coverage"].as_f64().is_some());
            }
            approve_all(name, payload)
        })
        .await;
    assert_eq!(shown.unwrap(), markdown(&events));
    // A rejection without feedback still ends the session, saying so.
    let session = server.start(sample_body()).await;
    let events = server
        .drive(&session, |name, payload| match name {
            "quality_review" => json!({"approved": false}),
            _ => approve_all(name, payload),
        })
        .await;
    assert_eq!(
        named(&events, "pipeline_error")[0].data["error"],
        "the user did not approve the final review"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_at_the_second_review_of_a_revision_resumes_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let mut first = TestServer::spawn(durable_server(&path).await).await;
    let session = first.start(sample_body()).await;
    let mut stream = first.stream(&session, None).await;
    let second_review = "craftsman:section_review_experience:2";
    loop {
        let event = stream.next().await.expect("stream ended");
        if event.event != "gate_open" {
            continue;
        }
        let gate = event.data["gate_id"].as_str().unwrap().to_owned();
        if gate == second_review {
            break;
        }
        let answer = approve_all(event.data["name"].as_str().unwrap(), &event.data["payload"]);
        assert_eq!(first.respond(&session, &gate, answer).await, 200);
    }
    drop(stream);
    first.task.abort();
    let _ = (&mut first.task).await;

    let server = durable_server(&path).await;
    assert_eq!(server.resume_unfinished().await.unwrap(), 1);
    let second = TestServer::spawn(server).await;
    let status = second.status(&session).await;
    let pending: Vec<&str> = status["pending_gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap())
        .collect();
    assert_eq!(pending, [second_review]);
    assert_eq!(
        second
            .respond(&session, second_review, json!({"action": "approve"}))
            .await,
        200
    );
    // Follow from the first event, answering what is still open (earlier gates are
    // answered already: 409).
    let mut stream = second.stream(&session, None).await;
    let mut all = Vec::new();
    while let Some(event) = stream.next().await {
        if event.event == "gate_open" {
            let gate = event.data["gate_id"].as_str().unwrap();
            let answer = approve_all(event.data["name"].as_str().unwrap(), &event.data["payload"]);
            let code = second.respond(&session, gate, answer).await;
            assert!(code == 200 || code == 409, "{gate}: {code}");
        }
        all.push(event);
    }
    assert_eq!(all.last().unwrap().event, "session_complete");
    // Every event once, numbered in order: the draft shown again is not shown twice.
    assert!(all.iter().zip(1..).all(|(e, n)| e.id == n));
    let drafts: Vec<&str> = named(&all, "section_draft")
        .iter()
        .map(|e| e.data["section"].as_str().unwrap())
        .collect();
    assert_eq!(drafts, ["Summary", "Experience", "Skills", "Experience"]);
    assert!(markdown(&all).contains("peaking at 50,000 events per second"));
}
