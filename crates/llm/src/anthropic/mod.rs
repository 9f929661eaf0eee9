//! Anthropic Messages API provider.
//!
//! Sends `POST {base_url}/v1/messages` with `x-api-key` and `anthropic-version`, maps
//! tools, `tool_choice`, `tool_use`/`tool_result` blocks, stop reasons and usage (cache
//! tokens included), marks the system prompt and tool list for prompt caching, and
//! streams answers over SSE.

#[cfg(test)]
mod fuzz;
mod stream;
mod wire;

use crate::error::LlmError;
use crate::http::{HttpClient, HttpSettings, Vendor, join_url, secret_header};
use crate::model::{ChatModel, StructuredOutputMode};
use crate::retry::RetryPolicy;
use crate::secret::ApiKey;
use crate::stream::ChatStream;
use crate::types::{ChatRequest, ChatResponse};
use async_trait::async_trait;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use stream::AnthropicStreamDecoder;
use tracing::Instrument;

/// The public API address.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version header value this client speaks.
pub const API_VERSION: &str = "2023-06-01";

/// Which parts of a request are marked with `cache_control` for prompt caching.
///
/// Anthropic caches the prefix (tools, then system, then messages) up to each marked
/// block, at most four marks a request; prompts shorter than the model's minimum (1,024
/// to 4,096 tokens) are simply not cached, so marking is harmless. At most three marks
/// are set here: the last tool, the system prompt, and the last block of the message a
/// request names as its [`cache_breakpoint`](crate::ChatRequest::cache_breakpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCaching {
    /// Mark the system prompt.
    pub system: bool,
    /// Mark the last tool definition (caching the whole tool list).
    pub tools: bool,
    /// Mark the request's `cache_breakpoint` message (an agent loop's conversation so
    /// far, which its next round repeats).
    pub messages: bool,
    /// Cache lifetime: `None` for the default 5 minutes, or `Some("1h")`.
    pub ttl: Option<String>,
}

impl Default for PromptCaching {
    /// Tools, system prompt and a loop's conversation cached for the default 5 minutes.
    fn default() -> Self {
        PromptCaching {
            system: true,
            tools: true,
            messages: true,
            ttl: None,
        }
    }
}

impl PromptCaching {
    /// No `cache_control` anywhere.
    pub fn disabled() -> Self {
        PromptCaching {
            system: false,
            tools: false,
            messages: false,
            ttl: None,
        }
    }

    fn cache_control(&self) -> Value {
        match &self.ttl {
            Some(ttl) => json!({ "type": "ephemeral", "ttl": ttl }),
            None => json!({ "type": "ephemeral" }),
        }
    }
}

/// Settings of an [`AnthropicModel`].
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// The key sent as `x-api-key`; `None` sends no key (a local proxy, say).
    pub api_key: Option<ApiKey>,
    /// Base URL without `/v1` (default [`DEFAULT_BASE_URL`]).
    pub base_url: String,
    /// The `anthropic-version` header.
    pub api_version: String,
    /// Values for the `anthropic-beta` header, if any.
    pub beta: Vec<String>,
    /// Model used when a request names none.
    pub default_model: String,
    /// `max_tokens` when a request sets none (the API requires one).
    pub default_max_tokens: u32,
    /// Prompt caching marks.
    pub caching: PromptCaching,
    /// Retries of failed calls.
    pub retry: RetryPolicy,
    /// HTTP timeouts.
    pub http: HttpSettings,
}

impl AnthropicConfig {
    /// Defaults for the public API with this key.
    ///
    /// ```
    /// let config = agent_llm::AnthropicConfig::new("sk-ant-test")
    ///     .with_base_url("http://127.0.0.1:9000")
    ///     .with_default_model("claude-haiku-4-5");
    /// assert_eq!(config.base_url, "http://127.0.0.1:9000");
    /// assert!(!format!("{config:?}").contains("sk-ant-test"));
    /// ```
    pub fn new(api_key: impl Into<ApiKey>) -> Self {
        AnthropicConfig {
            api_key: Some(api_key.into()),
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_version: API_VERSION.to_owned(),
            beta: Vec::new(),
            default_model: "claude-sonnet-4-5".to_owned(),
            default_max_tokens: 4096,
            caching: PromptCaching::default(),
            retry: RetryPolicy::default(),
            http: HttpSettings::default(),
        }
    }

    /// Sets the base URL.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Sets the default model.
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.default_model = model.into();
        self
    }

    /// Sets the prompt caching marks.
    pub fn with_caching(mut self, caching: PromptCaching) -> Self {
        self.caching = caching;
        self
    }

    /// Sets the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets the HTTP timeouts.
    pub fn with_http(mut self, http: HttpSettings) -> Self {
        self.http = http;
        self
    }
}

/// A [`ChatModel`] on the Anthropic Messages API.
///
/// ```no_run
/// use agent_llm::{AnthropicConfig, AnthropicModel, ChatModel, ChatRequest};
/// # async fn run() -> Result<(), agent_llm::LlmError> {
/// let model = AnthropicModel::new(AnthropicConfig::new(std::env::var("ANTHROPIC_API_KEY").unwrap_or_default()))?;
/// let answer = model.chat(&ChatRequest::from_prompt("Say hi").with_max_tokens(50)).await?;
/// println!("{}", answer.text());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct AnthropicModel {
    config: AnthropicConfig,
    url: reqwest::Url,
    headers: HeaderMap,
    http: HttpClient,
}

impl AnthropicModel {
    /// Builds the client; fails on an invalid base URL or header value.
    pub fn new(config: AnthropicConfig) -> Result<Self, LlmError> {
        let url = join_url(&config.base_url, "v1/messages")?;
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            let (name, value) = secret_header("x-api-key", key.expose())?;
            headers.insert(name, value);
        } else {
            tracing::warn!(
                "Anthropic provider has no API key; requests are sent without x-api-key"
            );
        }
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            header_value(&config.api_version)?,
        );
        if !config.beta.is_empty() {
            headers.insert(
                HeaderName::from_static("anthropic-beta"),
                header_value(&config.beta.join(","))?,
            );
        }
        let http = HttpClient::new(Vendor::Anthropic, config.http.clone(), config.retry.clone())?;
        Ok(AnthropicModel {
            config,
            url,
            headers,
            http,
        })
    }

    /// The settings this model was built with.
    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }

    fn body(&self, request: &ChatRequest, stream: bool) -> Value {
        let model = request
            .model
            .as_deref()
            .unwrap_or(&self.config.default_model);
        wire::request_body(
            request,
            model,
            self.config.default_max_tokens,
            &self.config.caching,
            stream,
        )
    }
}

fn header_value(value: &str) -> Result<HeaderValue, LlmError> {
    HeaderValue::from_str(value)
        .map_err(|_| LlmError::Config(format!("invalid header value {value:?}")))
}

#[async_trait]
impl ChatModel for AnthropicModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = self.body(request, false);
        let span = tracing::debug_span!("anthropic.chat", gen_ai.request.model = %body["model"]);
        let answer = self
            .http
            .post_json(&self.url, &self.headers, &body)
            .instrument(span)
            .await?;
        let response = wire::response_from_wire(answer)?;
        tracing::debug!(
            gen_ai.response.model = %response.model,
            gen_ai.usage.input_tokens = response.usage.input_tokens,
            gen_ai.usage.output_tokens = response.usage.output_tokens,
            "Anthropic answered"
        );
        Ok(response)
    }

    async fn chat_stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        let body = self.body(request, true);
        let events = self.http.post_sse(&self.url, &self.headers, &body).await?;
        let mut decoder = AnthropicStreamDecoder::default();
        let stream = events
            .map(move |item| {
                let decoded = item.and_then(|event| decoder.decode(&event.event, &event.data));
                futures::stream::iter(match decoded {
                    Ok(events) => events.into_iter().map(Ok).collect::<Vec<_>>(),
                    Err(error) => vec![Err(error)],
                })
            })
            .flatten();
        Ok(Box::pin(stream))
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        StructuredOutputMode::ForcedTool
    }

    fn default_model(&self) -> Option<String> {
        Some(self.config.default_model.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ContentBlock, Message, Role, ToolChoice, ToolDefinition};

    #[test]
    fn caching_marks_system_and_last_tool_only() {
        let request = ChatRequest::from_prompt("hi")
            .with_system("You are terse.")
            .with_tool(ToolDefinition::new(
                "a",
                "A",
                json!({"type":"object","properties":{}}),
            ))
            .with_tool(ToolDefinition::new(
                "b",
                "B",
                json!({"type":"object","properties":{}}),
            ))
            .with_tool_choice(ToolChoice::Any);
        let body = wire::request_body(&request, "m", 1000, &PromptCaching::default(), false);
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type":"ephemeral"})
        );
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(
            body["tools"][1]["cache_control"],
            json!({"type":"ephemeral"})
        );
        assert_eq!(body["tool_choice"], json!({"type":"any"}));
        let plain = wire::request_body(&request, "m", 1000, &PromptCaching::disabled(), false);
        assert_eq!(plain["system"], json!("You are terse."));
    }

    #[test]
    fn the_breakpoint_message_is_marked_on_its_last_markable_block() {
        let request = ChatRequest::new(vec![
            Message::user("q"),
            Message::new(
                Role::Assistant,
                vec![
                    ContentBlock::text("Looking."),
                    ContentBlock::Thinking {
                        thinking: "hm".into(),
                        signature: Some("sig".into()),
                    },
                ],
            ),
            Message::user("more"),
        ]);
        let marked = |request: &ChatRequest, caching: &PromptCaching| {
            let body = wire::request_body(request, "m", 10, caching, false);
            body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|m| m["content"].as_array().unwrap().clone())
                .filter(|block| block.get("cache_control").is_some())
                .map(|block| block["text"].clone())
                .collect::<Vec<_>>()
        };
        let one_off = request.clone();
        assert!(marked(&one_off, &PromptCaching::default()).is_empty());
        let mut at_answer = request.clone();
        at_answer.cache_breakpoint = Some(1);
        assert_eq!(
            marked(&at_answer, &PromptCaching::default()),
            [json!("Looking.")]
        );
        let looping = request.caching_conversation();
        assert_eq!(marked(&looping, &PromptCaching::default()), [json!("more")]);
        assert!(marked(&looping, &PromptCaching::disabled()).is_empty());
    }

    #[test]
    fn empty_text_blocks_and_messages_are_dropped() {
        let request = ChatRequest::new(vec![
            Message::user("q"),
            Message::new(Role::Assistant, vec![ContentBlock::text("")]),
        ]);
        let body = wire::request_body(&request, "m", 10, &PromptCaching::disabled(), false);
        assert_eq!(body["messages"].as_array().unwrap().len(), 1);
    }
}
