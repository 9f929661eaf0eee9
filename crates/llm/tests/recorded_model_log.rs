//! Every answer of a RecordedModel is logged as "recorded model answer" (what the restart
//! check counts model calls by). Alone in its test binary: tracing caches whether a log
//! line is wanted per call site across threads, so a scoped subscriber in a binary whose
//! other tests run at the same time may not see it.
#![cfg(test)]

use agent_llm::ChatRequest;
use agent_llm::testing::RecordedModel;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

fn model(answers: Value) -> RecordedModel {
    RecordedModel::from_json(&json!({ "answers": answers }).to_string(), "test").unwrap()
}

fn agent(name: &str, opening: &str) -> ChatRequest {
    ChatRequest::from_prompt(opening).with_system(format!("You are the {name} of a small team."))
}

#[test]
fn every_answer_is_logged_as_a_recorded_model_answer() {
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("agent_llm=info")
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let model = model(json!([{"route": "Greeter", "text": "hi"}]));
    tracing::subscriber::with_default(subscriber, || {
        model.respond(&agent("Greeter", "a")).unwrap();
        model.respond(&agent("Greeter", "b")).unwrap();
        model.respond(&agent("Nobody", "c")).unwrap_err();
    });
    let logged = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    assert_eq!(
        logged.matches("recorded model answer").count(),
        2,
        "{logged}"
    );
    assert!(logged.contains("route=Greeter"), "{logged}");
}
