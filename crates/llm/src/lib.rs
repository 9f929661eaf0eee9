//! # agent-llm
//!
//! One provider-neutral way to talk to LLM services: chat types, the [`ChatModel`] and
//! [`EmbeddingModel`] traits, the Anthropic Messages and OpenAI-compatible Chat Completions
//! providers, retries with backoff, structured output through [`extract()`], model tiers,
//! pricing, and test doubles in [`testing`].
//!
//! This crate knows nothing about agents; `agent-runtime` builds the agent loop on it.
//!
//! ```
//! use agent_llm::{ChatModel, ChatRequest, testing::ScriptedModel};
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = ScriptedModel::from_texts(["Paris."]);
//! let answer = model.chat(&ChatRequest::from_prompt("Capital of France?")).await.unwrap();
//! assert_eq!(answer.text(), "Paris.");
//! # });
//! ```

pub mod anthropic;
pub mod capacity;
pub mod config;
pub mod context_fit;
mod error;
#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod fuzz_support;
mod guard;
mod http;
mod limit;
#[cfg(feature = "local-embeddings")]
pub mod local_embedding;
mod model;
pub mod openai;
pub mod pricing;
mod prompt_layout;
mod provider;
mod retry;
mod secret;
mod stream;
pub mod structured;
pub mod testing;
mod tiers;
mod types;

pub use anthropic::{AnthropicConfig, AnthropicModel, PromptCaching};
pub use config::ProviderConfig;
pub use error::LlmError;
pub use http::HttpSettings;
pub use http::retry_after as parse_retry_after;
pub use limit::Limit;
#[cfg(feature = "local-embeddings")]
pub use local_embedding::{LocalEmbeddingError, LocalEmbeddingModel};
pub use model::{
    ChatModel, EmbeddingModel, EmbeddingRequest, EmbeddingResponse, StructuredOutputMode,
};
pub use openai::{OpenAiConfig, OpenAiModel};
pub use pricing::{ModelPrice, PricingConfigError, PricingTable, UnknownModel};
pub use prompt_layout::PromptLayout;
pub use provider::ProviderKind;
pub use retry::RetryPolicy;
pub use secret::ApiKey;
pub use stream::{ChatStream, StreamAccumulator, StreamEvent, collect_stream, response_to_events};
pub use structured::{ExtractError, ExtractOptions, Extracted, extract, extract_with};
pub use tiers::{ModelRouter, ModelTier, UnknownModelTier};
pub use types::{
    ChatRequest, ChatResponse, ContentBlock, Message, ResponseFormat, Role, StopReason, ToolChoice,
    ToolDefinition, Usage,
};

#[cfg(feature = "mock")]
pub use model::{MockChatModel, MockEmbeddingModel};
