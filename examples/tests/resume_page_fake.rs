//! The resume page (`crates/resume-coordinator/assets/index.html`) in a real headless
//! Chromium against a stand-in `resume` product that follows `docs/resume-api.md`: the
//! page starts a session, shows the events, renders every kind of gate and sends answers
//! of the contract's shapes (the stand-in fails the session on any other), reconnects
//! after a reload, and offers the finished resume and its DOCX.
#![cfg(test)]

mod support;

use std::io::{Read as _, Write as _};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_runtime::AnswerError;
use agent_runtime::GateRequest;
use agent_server::{AgentServer, InMemorySessionStore, Product, SessionHandle};
use serde_json::{Value, json};
use support::browser::{Canned, Chromium, SectionAnswer, StartInput};

/// How long a whole session in the browser may take.
const PATIENCE: Duration = Duration::from_secs(60);

/// A stand-in for the resume product: the contract's events and gates, in the contract's
/// order, with answers checked against the contract's table.
struct StandIn {
    /// Every answer it was given: (gate name, answer).
    answers: Mutex<Vec<(String, Value)>>,
}

impl StandIn {
    fn new() -> Self {
        StandIn {
            answers: Mutex::new(Vec::new()),
        }
    }

    fn answers(&self) -> Vec<(String, Value)> {
        self.answers.lock().unwrap().clone()
    }

    async fn ask(
        &self,
        session: &SessionHandle<Value>,
        agent: &str,
        name: &str,
        payload: Value,
    ) -> Result<Value, String> {
        let id = session.gates().next_id(agent, name);
        let cancel = session.cancellation();
        let answer = session
            .gates()
            .wait(
                &id,
                GateRequest::new(name).with_payload(payload),
                Some(&cancel),
            )
            .await
            .map_err(|e| e.to_string())?;
        self.answers
            .lock()
            .unwrap()
            .push((name.to_owned(), answer.clone()));
        Ok(answer)
    }
}

fn text_field<'a>(answer: &'a Value, field: &str, gate: &str) -> Result<&'a str, String> {
    answer[field]
        .as_str()
        .filter(|text| !text.trim().is_empty())
        .ok_or_else(|| format!("{gate}: the answer has no {field:?} text: {answer}"))
}

const SUMMARY: &str = "Backend engineer who makes **billing** reliable: <script>window.__injected = 1</script> & more.\n\n- Built the billing platform in Rust [R3]\n- Led a team of five [R4]";
const EXPERIENCE: &str = "### Senior Engineer, Acme (2019-2024)\n- Cut invoice latency by 40% [A1]\n- Moved payments to an event log [R3]";

/// Why the stand-in's session failed.
#[derive(Debug)]
struct StandInError(String);

impl std::fmt::Display for StandInError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StandInError {}

impl From<String> for StandInError {
    fn from(message: String) -> Self {
        StandInError(message)
    }
}

#[async_trait::async_trait]
impl Product for StandIn {
    type Start = Value;
    type Event = Value;
    type Output = Value;
    type Error = StandInError;

    fn name(&self) -> &str {
        "resume"
    }

    fn check_start(&self, body: &Value) -> Result<(), AnswerError> {
        let refuse = |path: &str, message: &str| AnswerError {
            path: path.to_owned(),
            message: message.to_owned(),
        };
        for field in ["resume_text", "job_description"] {
            match body.get(field) {
                Some(Value::String(text)) if !text.trim().is_empty() => {}
                _ => return Err(refuse(field, "must be a non-empty string")),
            }
        }
        if !body["fast_draft"].is_boolean() {
            return Err(refuse("fast_draft", "the page should send it"));
        }
        Ok(())
    }

    async fn run(
        &self,
        session: SessionHandle<Value>,
        request: Value,
    ) -> Result<Value, StandInError> {
        let stage = |name: &str, message: &str| {
            session.emit(&json!({"type": "stage_start", "stage": name, "message": message}));
        };
        let done = |name: &str| session.emit(&json!({"type": "stage_complete", "stage": name}));

        stage("intake", "Reading your resume");
        if request["resume_text"]
            .as_str()
            .unwrap_or_default()
            .contains("UNREADABLE")
        {
            let error = "the resume is unreadable: it has no words";
            session.emit(&json!({"type": "pipeline_error", "stage": "intake", "error": error}));
            return Err(error.to_owned().into());
        }
        session.emit(&json!({"type": "intake_complete", "candidate_name": "Jane Doe",
            "evidence": [{"id": "R1", "text": "Jane Doe"}, {"id": "R3", "text": "Built the billing platform in Rust"},
                         {"id": "R4", "text": "Led a team of five"}]}));
        done("intake");

        stage("research", "Reading the job description");
        session.emit(&json!({"type": "jd_analysis", "role": "Staff Backend Engineer",
            "company": request["company"].as_str().unwrap_or("Globex"),
            "must_haves": ["Rust", "Distributed systems", "Mentoring"], "keywords": ["Rust", "Kafka", "SLO"]}));
        session.emit(&json!({"type": "research", "notes": ["Globex bills 2M customers monthly"]}));
        done("research");

        stage("interview", "A few questions");
        let questions = json!([{"id": "q1", "question": "What did the billing platform save?"},
                               {"id": "q2", "question": "How large was the team you led?"}]);
        session.emit(
            &json!({"type": "questionnaire", "gate": "questionnaire_1", "questions": questions}),
        );
        let answer = self
            .ask(
                &session,
                "strategist",
                "questionnaire_1",
                json!({"questions": questions}),
            )
            .await?;
        for id in ["q1", "q2"] {
            text_field(&answer["answers"], id, "questionnaire_1")?;
        }
        let (question, why) = (
            "Which role do you want to be seen in?",
            "It sets the summary's angle",
        );
        session.emit(&json!({"type": "question", "gate": "positioning_q_1", "question": question, "why": why}));
        let answer = self
            .ask(
                &session,
                "strategist",
                "positioning_q_1",
                json!({"question": question, "why": why}),
            )
            .await?;
        text_field(&answer, "answer", "positioning_q_1")?;
        done("interview");

        stage("gap_analysis", "Comparing you with the job");
        session.emit(
            &json!({"type": "gap_analysis", "strengths": ["Rust", "Billing"], "gaps": ["Kafka"]}),
        );
        done("gap_analysis");

        stage("blueprint", "Planning the resume");
        let mut blueprint = json!({"positioning": "Reliable billing at scale",
            "sections": [{"name": "summary", "goal": "Lead with reliability"},
                         {"name": "experience", "goal": "Numbers first"}]});
        session.emit(&json!({"type": "blueprint_ready", "blueprint": blueprint}));
        if request["fast_draft"] != json!(true) {
            let mut redone = false;
            loop {
                let answer = self
                    .ask(
                        &session,
                        "architect",
                        "architect_review",
                        json!({"blueprint": blueprint}),
                    )
                    .await?;
                match answer["approved"].as_bool() {
                    Some(true) => break,
                    Some(false) if !redone => {
                        let feedback = text_field(&answer, "feedback", "architect_review")?;
                        blueprint["positioning"] =
                            json!(format!("Reliable billing at scale ({feedback})"));
                        session.emit(&json!({"type": "blueprint_ready", "blueprint": blueprint}));
                        redone = true;
                    }
                    _ => return Err(format!("architect_review: bad answer {answer}").into()),
                }
            }
        }
        done("blueprint");

        stage("writing", "Writing the sections");
        let mut sections = Vec::new();
        for (section, first) in [("summary", SUMMARY), ("experience", EXPERIENCE)] {
            let mut markdown = first.to_owned();
            let bullets =
                json!([{"text": "Built the billing platform in Rust", "evidence": ["R3"]}]);
            let gate = format!("section_review_{section}");
            loop {
                session.emit(&json!({"type": "section_draft", "section": section, "markdown": markdown, "bullets": bullets}));
                let answer = self
                    .ask(
                        &session,
                        "craftsman",
                        &gate,
                        json!({"section": section, "markdown": markdown, "bullets": bullets}),
                    )
                    .await?;
                match answer["action"].as_str() {
                    Some("approve") => break,
                    Some("edit") => {
                        markdown = text_field(&answer, "markdown", &gate)?.to_owned();
                        break;
                    }
                    Some("revise") => {
                        let feedback = text_field(&answer, "feedback", &gate)?;
                        session.emit(&json!({"type": "revision_requested", "section": section,
                            "reason": feedback, "request_id": "rev-1"}));
                        markdown = format!("{markdown}\n- Revised: {feedback} [A1]");
                        session.emit(&json!({"type": "revision_complete", "section": section, "request_id": "rev-1"}));
                    }
                    _ => return Err(format!("{gate}: bad answer {answer}").into()),
                }
            }
            session.emit(&json!({"type": "section_approved", "section": section}));
            sections.push((section, markdown));
        }
        done("writing");

        stage("production", "Checking the resume");
        let findings = json!(["\"40%\" rests on an interview answer"]);
        session.emit(&json!({"type": "review_finding", "section": "experience",
            "claim": "Cut invoice latency by 40%", "problem": "needs a number from the resume"}));
        session.emit(&json!({"type": "quality_report", "ats_score": 87, "keyword_coverage": 0.75, "findings": findings}));
        let answer = self
            .ask(
                &session,
                "producer",
                "quality_review",
                json!({"ats_score": 87, "findings": findings}),
            )
            .await?;
        if answer != json!({"approved": true}) {
            return Err(format!("quality_review: bad answer {answer}").into());
        }
        done("production");

        let mut markdown = String::from("# Jane Doe\n");
        for (section, body) in &sections {
            markdown.push_str(&format!("\n## {}\n\n{body}\n", capitalized(section)));
        }
        let docx = docx(&markdown);
        let result = json!({"resume_markdown": markdown, "docx_base64": base64(&docx),
            "docx_bytes": docx.len(), "usage": {"input_tokens": 1200, "output_tokens": 800}, "cost_usd": 0.0123});
        let mut event = result.clone();
        event["type"] = json!("pipeline_complete");
        session.emit(&event);
        stage("complete", "Done");
        Ok(result)
    }

    fn page(&self) -> Option<String> {
        Some(include_str!("../../crates/resume-coordinator/assets/index.html").to_owned())
    }
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A minimal Word document with one paragraph per line of `text`.
fn docx(text: &str) -> Vec<u8> {
    let escape = |line: &str| {
        line.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let paragraphs: String = text
        .lines()
        .map(|line| {
            format!(
                "<w:p><w:r><w:t xml:space=\"preserve\">{}</w:t></w:r></w:p>",
                escape(line)
            )
        })
        .collect();
    let files = [
        (
            "[Content_Types].xml",
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?><Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\"><Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/><Default Extension=\"xml\" ContentType=\"application/xml\"/><Override PartName=\"/word/document.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml\"/></Types>".to_owned(),
        ),
        (
            "_rels/.rels",
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?><Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\"><Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" Target=\"word/document.xml\"/></Relationships>".to_owned(),
        ),
        (
            "word/document.xml",
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?><w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\"><w:body>{paragraphs}</w:body></w:document>"
            ),
        ),
    ];
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, content) in files {
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(content.as_bytes()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// `word/document.xml` of a DOCX.
fn document_xml(docx: &[u8]) -> String {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(docx)).unwrap();
    let mut xml = String::new();
    archive
        .by_name("word/document.xml")
        .unwrap()
        .read_to_string(&mut xml)
        .unwrap();
    xml
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A server with the stand-in on a loopback port: (its base URL, the stand-in).
async fn serve() -> (String, Arc<StandIn>) {
    let product = Arc::new(StandIn::new());
    let server =
        AgentServer::new(Arc::new(InMemorySessionStore::new())).with_product(product.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(server.serve(listener));
    (base, product)
}

#[test]
fn base64_matches_the_standard() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_runs_a_whole_session_through_every_kind_of_gate() {
    let (base, product) = serve().await;
    let chromium = Chromium::launch().await.expect("a browser");
    let began = Instant::now();
    let outcome = async {
        let page = chromium.open(&format!("{base}/")).await?;
        let canned = Canned {
            architect_feedback: Some("Lead with the team".to_owned()),
            sections: vec![
                SectionAnswer::Revise {
                    feedback: "mention the on-call rotation".to_owned(),
                },
                SectionAnswer::Approve,
                SectionAnswer::Edit {
                    append: "\n- Added by hand: mentored two juniors".to_owned(),
                },
            ],
            // After the questionnaire and the positioning question: the page must find
            // its session again and show the pending architect review.
            reload_after: Some(2),
            ..Canned::default()
        };
        let outcome =
            support::browser::run_session(&page, &StartInput::sample(), &canned, PATIENCE).await?;
        let injected: Value = page
            .evaluate("typeof window.__injected")
            .await?
            .into_value()?;
        // A reload of the finished page shows the same resume and timeline again.
        page.reload().await?;
        let again = support::browser::read_outcome(&page, PATIENCE).await?;
        anyhow::Ok((outcome, injected, again))
    }
    .await;
    chromium.close().await;
    let (outcome, injected, again) = outcome.unwrap();
    let elapsed = began.elapsed();

    // The gates, in order, each answered with the button the canned answers say.
    let answered: Vec<(&str, &str)> = outcome
        .answered
        .iter()
        .map(|a| (a.name.as_str(), a.action.as_str()))
        .collect();
    assert_eq!(
        answered,
        [
            ("questionnaire_1", "submit"),
            ("positioning_q_1", "submit"),
            ("architect_review", "revise"),
            ("architect_review", "approve"),
            ("section_review_summary", "revise"),
            ("section_review_summary", "approve"),
            ("section_review_experience", "edit"),
            ("quality_review", "approve"),
        ]
    );
    assert_eq!(outcome.answered[0].id, "strategist:questionnaire_1:1");
    assert_eq!(outcome.answered[3].id, "architect:architect_review:2");

    // The product received the contract's shapes.
    let answers = product.answers();
    assert_eq!(answers.len(), 8, "{answers:?}");
    assert_eq!(
        answers[0].1,
        json!({"answers": {
            "q1": "I owned this end to end and can give numbers (q1)",
            "q2": "I owned this end to end and can give numbers (q2)"}})
    );
    assert_eq!(
        answers[1].1,
        json!({"answer": Canned::default().positioning})
    );
    assert_eq!(
        answers[2].1,
        json!({"approved": false, "feedback": "Lead with the team"})
    );
    assert_eq!(answers[3].1, json!({"approved": true}));
    assert_eq!(
        answers[4].1,
        json!({"action": "revise", "feedback": "mention the on-call rotation"})
    );
    assert_eq!(answers[5].1, json!({"action": "approve"}));
    assert_eq!(
        answers[6].1,
        json!({"action": "edit", "markdown": format!("{EXPERIENCE}\n- Added by hand: mentored two juniors")})
    );
    assert_eq!(answers[7].1, json!({"approved": true}));

    // The final resume, rendered from Markdown with its HTML escaped.
    assert!(
        outcome.result_text.contains("Jane Doe"),
        "{}",
        outcome.result_text
    );
    assert!(
        outcome.result_html.contains("<h1>Jane Doe</h1>"),
        "{}",
        outcome.result_html
    );
    assert!(
        outcome.result_html.contains("<h2>Summary</h2>"),
        "{}",
        outcome.result_html
    );
    assert!(
        outcome
            .result_html
            .contains("<h3>Senior Engineer, Acme (2019-2024)</h3>")
    );
    assert!(
        outcome
            .result_html
            .contains("<li>Revised: mention the on-call rotation [A1]</li>")
    );
    assert!(
        outcome
            .result_html
            .contains("<li>Added by hand: mentored two juniors</li>")
    );
    assert!(outcome.result_html.contains("<strong>billing</strong>"));
    assert!(
        outcome
            .result_text
            .contains("<script>window.__injected = 1</script> & more")
    );
    assert!(outcome.result_html.contains("&lt;script&gt;"));
    assert_eq!(injected, json!("undefined"), "the resume's HTML ran");

    // The download is the product's DOCX.
    let xml = document_xml(&outcome.docx);
    assert!(xml.contains("Added by hand: mentored two juniors"), "{xml}");

    // The timeline shows the events readably, replayed once after the reload.
    for kind in [
        "stage_start",
        "intake_complete",
        "jd_analysis",
        "research",
        "questionnaire",
        "question",
        "gap_analysis",
        "blueprint_ready",
        "section_draft",
        "revision_requested",
        "revision_complete",
        "section_approved",
        "review_finding",
        "quality_report",
        "gate_open",
        "gate_answered",
        "pipeline_complete",
        "session_complete",
    ] {
        assert!(
            !outcome.events(kind).is_empty(),
            "no {kind} in the timeline"
        );
    }
    assert_eq!(outcome.events("session_complete").len(), 1);
    assert_eq!(outcome.events("intake_complete").len(), 1);
    assert_eq!(outcome.events("gate_open").len(), 8);
    for item in &outcome.timeline {
        assert!(
            !item.text.contains("{\""),
            "raw JSON in the timeline: {item:?}"
        );
    }
    let jd = &outcome.events("jd_analysis")[0].text;
    assert!(jd.contains("Staff Backend Engineer at Globex"), "{jd}");
    let quality = &outcome.events("quality_report")[0].text;
    assert!(
        quality.contains("ATS score 87") && quality.contains("75%"),
        "{quality}"
    );
    assert!(elapsed < PATIENCE, "{elapsed:?}");

    assert_eq!(again.result_text, outcome.result_text);
    assert_eq!(again.docx, outcome.docx);
    let kinds = |o: &support::browser::Outcome| -> Vec<String> {
        o.timeline.iter().map(|i| i.kind.clone()).collect()
    };
    assert_eq!(kinds(&again), kinds(&outcome));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_a_refused_start_and_a_failed_session() {
    let (base, _product) = serve().await;
    let chromium = Chromium::launch().await.expect("a browser");
    let outcome = async {
        let page = chromium.open(&format!("{base}/")).await?;
        let empty = StartInput {
            resume_text: "   ".to_owned(),
            ..StartInput::sample()
        };
        let refused = support::browser::start_expecting_error(&page, &empty).await?;

        let unreadable = StartInput {
            resume_text: "UNREADABLE ###".to_owned(),
            fast_draft: true,
            ..StartInput::sample()
        };
        support::browser::start(&page, &unreadable).await?;
        let failed = support::browser::wait_for_error(&page, Duration::from_secs(15)).await?;
        let status: String = page
            .evaluate("document.getElementById('status').dataset.state")
            .await?
            .into_value()?;
        anyhow::Ok((refused, failed, status))
    }
    .await;
    chromium.close().await;
    let (refused, failed, status) = outcome.unwrap();
    assert!(
        refused.contains("at resume_text: must be a non-empty string"),
        "{refused}"
    );
    assert!(
        failed.contains("the resume is unreadable: it has no words"),
        "{failed}"
    );
    assert_eq!(status, "failed");
}
