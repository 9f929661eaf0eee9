//! The `ChatModel` and `EmbeddingModel` traits.

use crate::error::LlmError;
use crate::stream::{ChatStream, response_to_events};
use crate::types::{ChatRequest, ChatResponse, Usage};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// How [`crate::extract()`] asks this model for schema-shaped output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StructuredOutputMode {
    /// Offer the schema as the one tool and force the model to call it (Anthropic).
    #[default]
    ForcedTool,
    /// Send the schema as a strict `json_schema` response format (OpenAI).
    JsonSchema,
    /// Ask for a JSON object (`response_format: json_object`) and give the schema in the
    /// system prompt, for servers with neither strict schemas nor forced tool calls (Z.AI).
    JsonObject,
}

/// A chat model: one provider, or a wrapper around one.
///
/// Object-safe; use it as `Arc<dyn ChatModel>`. With the `mock` feature, mockall
/// generates `MockChatModel`. Implementing it takes one method:
///
/// ```
/// use agent_llm::{ChatModel, ChatRequest, ChatResponse, ContentBlock, LlmError, StopReason, Usage};
///
/// /// Answers every request with its own prompt.
/// struct Echo;
///
/// #[async_trait::async_trait]
/// impl ChatModel for Echo {
///     async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
///         let prompt = request.messages.last().map(|m| m.text()).unwrap_or_default();
///         Ok(ChatResponse {
///             id: "echo_1".into(),
///             model: "echo".into(),
///             content: vec![ContentBlock::text(prompt)],
///             stop_reason: StopReason::EndTurn,
///             usage: Usage::default(),
///         })
///     }
/// }
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let response = Echo.chat(&ChatRequest::from_prompt("Hello!")).await.unwrap();
/// assert_eq!(response.text(), "Hello!");
/// # });
/// ```
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Sends a request and waits for the whole answer.
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// Sends a request and streams the answer. The default calls [`ChatModel::chat`] and
    /// replays its answer as events.
    async fn chat_stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        let response = self.chat(request).await?;
        let events = response_to_events(response).into_iter().map(Ok);
        Ok(Box::pin(futures::stream::iter(events)))
    }

    /// How structured output is requested from this model.
    fn structured_output_mode(&self) -> StructuredOutputMode {
        StructuredOutputMode::ForcedTool
    }

    /// The model used when a request names none; `None` if the caller must name one.
    fn default_model(&self) -> Option<String> {
        None
    }

    /// The context window in tokens (prompt and answer together), when known: configured,
    /// or read from a server that publishes it. Callers size their prompts to it.
    fn context_window(&self) -> Option<u32> {
        None
    }
}

/// A request for embeddings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EmbeddingRequest {
    /// Model id; `None` uses the provider's default embedding model.
    pub model: Option<String>,
    /// Texts to embed.
    pub inputs: Vec<String>,
    /// Requested vector size, where the model supports it.
    pub dimensions: Option<u32>,
}

/// Embeddings, one per input, in input order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingResponse {
    /// The model that answered.
    pub model: String,
    /// One vector per input.
    pub vectors: Vec<Vec<f32>>,
    /// Tokens used (input only).
    pub usage: Usage,
}

/// A model that turns texts into vectors.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait EmbeddingModel: Send + Sync {
    /// Embeds the inputs.
    async fn embed(&self, request: EmbeddingRequest) -> Result<EmbeddingResponse, LlmError>;
}

#[async_trait]
impl<M: ChatModel + ?Sized> ChatModel for std::sync::Arc<M> {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        (**self).chat(request).await
    }
    async fn chat_stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        (**self).chat_stream(request).await
    }
    fn structured_output_mode(&self) -> StructuredOutputMode {
        (**self).structured_output_mode()
    }
    fn default_model(&self) -> Option<String> {
        (**self).default_model()
    }
    fn context_window(&self) -> Option<u32> {
        (**self).context_window()
    }
}

#[async_trait]
impl<M: EmbeddingModel + ?Sized> EmbeddingModel for std::sync::Arc<M> {
    async fn embed(&self, request: EmbeddingRequest) -> Result<EmbeddingResponse, LlmError> {
        (**self).embed(request).await
    }
}
