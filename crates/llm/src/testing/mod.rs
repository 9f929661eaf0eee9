//! Test doubles: unit-test agents and LLM code offline, deterministically and for free.
//!
//! Pick the double that fits the test:
//!
//! | Double | Answers from | Good for |
//! |---|---|---|
//! | [`ScriptedModel`] | a queue of canned responses, or a closure over the request | agent loops with a known conversation |
//! | [`FixtureModel`] | recorded `ChatResponse` JSON files (`fixtures/llm/<key>.json`) routed by tool or schema name | realistic answers kept out of the code |
//! | [`RecordedModel`] | one recording file of answers routed by agent, tool or schema name, key and ordinal ([format](recorded)) | a product's `--dry-run`, end-to-end tests |
//! | [`TestModel`] | nothing: it calls every offered tool with schema-generated arguments, then answers | smoke tests of a whole agent with no script |
//! | `MockChatModel` (feature `mock`) | mockall expectations | asserting exact calls and arguments |
//!
//! All of them record the requests they get, so a test can assert on the prompt, the
//! tools offered or the tool results sent back. [`LatencyModel`] and [`FaultyModel`] wrap
//! any model to add delays or inject errors, for benchmarks and retry tests;
//! [`responses`] builds canned answers; [`value_for_schema`] builds a valid instance of a
//! JSON Schema.
//!
//! To make sure no test reaches (and pays) a real provider by accident, call
//! [`deny_network_requests`] at the start of a test suite, or set the [`DENY_ENV`]
//! environment variable (`AGENT_LLM_DENY_NETWORK=1`): providers then refuse every request
//! to a non-loopback host with [`crate::LlmError::RequestsDisabled`], while local test
//! servers keep working.
//!
//! A typical agent test scripts the model, runs the code under test, then checks what the
//! model was sent:
//!
//! ```
//! use agent_llm::{ChatModel, ChatRequest, ContentBlock, Message, Role};
//! use agent_llm::testing::{ScriptedModel, deny_network_requests};
//! use serde_json::json;
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! deny_network_requests();
//! let model = ScriptedModel::new(vec![
//!     ScriptedModel::tool_call_response("call_1", "add", json!({"a": 2, "b": 3})),
//!     ScriptedModel::text_response("2 + 3 = 5"),
//! ]);
//!
//! // The code under test: a tiny agent loop.
//! let mut request = ChatRequest::from_prompt("What is 2 + 3?");
//! let answer = loop {
//!     let response = model.chat(&request.clone()).await.unwrap();
//!     let calls: Vec<_> = response.tool_calls().iter().map(|(id, _, input)| {
//!         let sum = input["a"].as_i64().unwrap() + input["b"].as_i64().unwrap();
//!         ContentBlock::tool_result(*id, sum.to_string())
//!     }).collect();
//!     if calls.is_empty() { break response.text(); }
//!     request.messages.push(response.to_message());
//!     request.messages.push(Message::new(Role::User, calls));
//! };
//!
//! assert_eq!(answer, "2 + 3 = 5");
//! assert_eq!(model.call_count(), 2);
//! let last = model.last_request().unwrap();
//! assert_eq!(last.messages[2].content, [ContentBlock::tool_result("call_1", "5")]);
//! # agent_llm::testing::allow_network_requests();
//! # });
//! ```

mod conversation;
mod fixture;
mod hashed_embeddings;
mod log;
pub mod recorded;
pub mod responses;
mod schema_values;
mod scripted;
mod test_model;
mod wrappers;

pub use fixture::FixtureModel;
pub use hashed_embeddings::HashedEmbeddings;
pub use recorded::{
    RECORDED_MODEL, RecordedModel, RecordingError, dry_run_pricing, dry_run_router,
};
pub use schema_values::value_for_schema;
pub use scripted::ScriptedModel;
pub use test_model::TestModel;
pub use wrappers::{FaultyModel, LatencyModel};

pub use crate::guard::{
    DENY_ENV, allow_network_requests, deny_network_requests, network_requests_denied,
};
#[cfg(feature = "mock")]
pub use crate::model::{MockChatModel, MockEmbeddingModel};
