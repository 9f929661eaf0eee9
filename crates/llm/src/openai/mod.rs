//! The OpenAI-compatible provider: Chat Completions and embeddings for OpenAI, Azure
//! OpenAI, DeepSeek, Z.AI (GLM) and local servers (llama.cpp, vLLM, Ollama, ...).
//!
//! One [`OpenAiModel`] talks to one endpoint, configured by an [`OpenAiConfig`]: base URL,
//! how the key is sent, which field carries the output-token limit, and how structured
//! output is requested. The presets ([`OpenAiConfig::openai`], [`OpenAiConfig::azure`],
//! [`OpenAiConfig::deepseek`], [`OpenAiConfig::zai`], [`OpenAiConfig::local`]) set these
//! for each service.

#[cfg(test)]
mod fuzz;
mod served;
mod stream;
mod wire;

pub use served::{ServedModel, ServedModels};

use crate::error::LlmError;
use crate::http::{HttpClient, HttpSettings, Vendor, join_url, secret_header};
use crate::model::{
    ChatModel, EmbeddingModel, EmbeddingRequest, EmbeddingResponse, StructuredOutputMode,
};
use crate::retry::RetryPolicy;
use crate::secret::ApiKey;
use crate::stream::ChatStream;
use crate::types::{ChatRequest, ChatResponse};
use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use wire::BodyOptions;

/// Inputs per embeddings request.
const EMBEDDING_BATCH: usize = 256;

/// OpenAI's and Azure's default chat and embedding models.
const OPENAI_MODELS: (&str, &str) = ("gpt-4.1-mini", "text-embedding-3-small");

/// How the API key is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpenAiAuth {
    /// `Authorization: Bearer <key>` (OpenAI and most compatible servers).
    #[default]
    Bearer,
    /// `api-key: <key>` (Azure OpenAI key authentication).
    AzureApiKey,
}

/// The request field that carries [`ChatRequest::max_tokens`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_tokens`: the older field, the one compatible servers understand.
    MaxTokens,
    /// `max_completion_tokens`: what OpenAI requires for reasoning models.
    MaxCompletionTokens,
}

/// Configuration of an [`OpenAiModel`].
///
/// ```
/// use agent_llm::openai::{MaxTokensField, OpenAiConfig};
/// let config = OpenAiConfig::deepseek("sk-...").with_default_model("deepseek-reasoner");
/// assert_eq!(config.base_url, "https://api.deepseek.com");
/// assert_eq!(config.max_tokens_field, MaxTokensField::MaxTokens);
/// assert_eq!(config.default_model, "deepseek-reasoner");
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL: `/chat/completions` and `/embeddings` are appended. For Azure (see
    /// [`OpenAiConfig::azure_api_version`]) the resource endpoint, such as
    /// `https://my-resource.openai.azure.com`.
    pub base_url: String,
    /// The key; `None` sends no authentication (local servers).
    pub api_key: Option<ApiKey>,
    /// How the key is sent.
    pub auth: OpenAiAuth,
    /// Model used when a request names none (for Azure: the deployment name).
    pub default_model: String,
    /// Embedding model used when an embedding request names none (Azure: deployment).
    /// Empty means none: embedding requests must then name their model.
    pub default_embedding_model: String,
    /// The field the output-token limit goes in.
    pub max_tokens_field: MaxTokensField,
    /// How structured output is requested from this endpoint.
    pub structured_output: StructuredOutputMode,
    /// Azure OpenAI: when set, requests go to
    /// `{base_url}/openai/deployments/{model}/chat/completions?api-version={version}`
    /// (and likewise `/embeddings`), the request's model naming the deployment.
    pub azure_api_version: Option<String>,
    /// Whether streamed requests ask for a final usage chunk (`stream_options.include_usage`).
    /// Turn off for servers that reject `stream_options`.
    pub stream_usage: bool,
    /// Whether the server accepts `tool_choice` `required` and named tools. When false
    /// (Z.AI), forced choices are sent as `auto` and `none` leaves the tools out.
    pub forced_tool_choice: bool,
    /// Retry policy for failed calls.
    pub retry: RetryPolicy,
    /// HTTP timeouts.
    pub http: HttpSettings,
    /// Headers added to every request (`OpenAI-Organization`, proxy headers, ...); one
    /// named like the key's header replaces it. Their values are never printed.
    pub extra_headers: Vec<(String, String)>,
    /// The default model's context window in tokens, when known (see
    /// [`OpenAiModel::served_models`]).
    pub context_window: Option<u32>,
}

impl OpenAiConfig {
    fn base(base_url: &str, api_key: Option<ApiKey>, models: (&str, &str)) -> Self {
        OpenAiConfig {
            base_url: base_url.to_owned(),
            api_key,
            auth: OpenAiAuth::Bearer,
            default_model: models.0.to_owned(),
            default_embedding_model: models.1.to_owned(),
            max_tokens_field: MaxTokensField::MaxTokens,
            structured_output: StructuredOutputMode::ForcedTool,
            azure_api_version: None,
            stream_usage: true,
            forced_tool_choice: true,
            retry: RetryPolicy::default(),
            http: HttpSettings::default(),
            extra_headers: Vec::new(),
            context_window: None,
        }
    }

    /// OpenAI: `https://api.openai.com/v1`, bearer key, `max_completion_tokens`, strict
    /// `json_schema` structured output, `gpt-4.1-mini` and `text-embedding-3-small`.
    pub fn openai(api_key: impl Into<ApiKey>) -> Self {
        OpenAiConfig {
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            structured_output: StructuredOutputMode::JsonSchema,
            ..Self::base(
                "https://api.openai.com/v1",
                Some(api_key.into()),
                OPENAI_MODELS,
            )
        }
    }

    /// Azure OpenAI: `endpoint` is the resource URL (`https://NAME.openai.azure.com`), the
    /// key goes in the `api-key` header, and the request's model names the deployment
    /// (default deployments: `gpt-4.1-mini` and `text-embedding-3-small`; change them
    /// with [`OpenAiConfig::with_default_model`] or the public fields).
    pub fn azure(
        endpoint: impl Into<String>,
        api_key: impl Into<ApiKey>,
        api_version: impl Into<String>,
    ) -> Self {
        let endpoint = endpoint.into();
        OpenAiConfig {
            auth: OpenAiAuth::AzureApiKey,
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            structured_output: StructuredOutputMode::JsonSchema,
            azure_api_version: Some(api_version.into()),
            ..Self::base(&endpoint, Some(api_key.into()), OPENAI_MODELS)
        }
    }

    /// DeepSeek: `https://api.deepseek.com`, `max_tokens`, `deepseek-chat`. DeepSeek has
    /// no `json_schema` response format, so structured output uses a forced tool, and no
    /// embeddings endpoint, so there is no default embedding model.
    pub fn deepseek(api_key: impl Into<ApiKey>) -> Self {
        let models = ("deepseek-chat", "");
        Self::base("https://api.deepseek.com", Some(api_key.into()), models)
    }

    /// Z.AI (GLM): `https://api.z.ai/api/paas/v4`, `max_tokens`, `glm-4.7` and
    /// `embedding-3`. GLM accepts only `tool_choice: auto` and the `json_object` response
    /// format, so structured output is asked for as a JSON object with the schema in the
    /// system prompt; `stream_options` is not sent (the last chunk carries usage anyway).
    pub fn zai(api_key: impl Into<ApiKey>) -> Self {
        let models = ("glm-4.7", "embedding-3");
        OpenAiConfig {
            structured_output: StructuredOutputMode::JsonObject,
            forced_tool_choice: false,
            stream_usage: false,
            ..Self::base("https://api.z.ai/api/paas/v4", Some(api_key.into()), models)
        }
    }

    /// A local OpenAI-compatible server (llama.cpp, vLLM, Ollama, ...) at `base_url`, such
    /// as `http://127.0.0.1:8080/v1`: no key, `max_tokens`, forced-tool structured output,
    /// default chat and embedding model `local` (servers that host one model ignore it).
    pub fn local(base_url: impl Into<String>) -> Self {
        Self::base(&base_url.into(), None, ("local", "local"))
    }

    /// Sets the base URL.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Sets the model used when a request names none.
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.default_model = model.into();
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

    /// Sets the default model's context window in tokens.
    pub fn with_context_window(mut self, tokens: u32) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// Adds a header sent with every request.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_headers.push((name.into(), value.into()));
        self
    }
}

/// A chat and embedding model behind an OpenAI-compatible API.
///
/// ```
/// use agent_llm::openai::{OpenAiConfig, OpenAiModel};
/// use agent_llm::{ChatModel, RetryPolicy, StructuredOutputMode};
///
/// let model = OpenAiModel::new(
///     OpenAiConfig::local("http://127.0.0.1:8080/v1")
///         .with_default_model("qwen3-8b")
///         .with_retry(RetryPolicy::none()),
/// )?;
/// assert_eq!(model.default_model().as_deref(), Some("qwen3-8b"));
/// assert_eq!(model.structured_output_mode(), StructuredOutputMode::ForcedTool);
/// // model.chat(&ChatRequest::from_prompt("Hi")).await? would now POST to
/// // http://127.0.0.1:8080/v1/chat/completions.
/// # Ok::<(), agent_llm::LlmError>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    config: OpenAiConfig,
    http: HttpClient,
    headers: HeaderMap,
}

impl OpenAiModel {
    /// Builds the model. Fails with [`LlmError::Config`] if the base URL does not parse,
    /// a header is invalid, or the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        join_url(&config.base_url, "")?;
        let mut headers = HeaderMap::new();
        if let Some(key) = config.api_key.as_ref().filter(|k| !k.is_empty()) {
            let (name, value) = match config.auth {
                OpenAiAuth::Bearer => {
                    secret_header("authorization", &format!("Bearer {}", key.expose()))?
                }
                OpenAiAuth::AzureApiKey => secret_header("api-key", key.expose())?,
            };
            headers.insert(name, value);
        }
        for (name, value) in &config.extra_headers {
            let header_name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| LlmError::Config(format!("invalid header name {name:?}")))?;
            let mut header_value = HeaderValue::from_str(value)
                .map_err(|_| LlmError::Config(format!("invalid value for header {name:?}")))?;
            // Extra headers may carry credentials too (a proxy token, say).
            header_value.set_sensitive(true);
            headers.insert(header_name, header_value);
        }
        let http = HttpClient::new(Vendor::OpenAi, config.http.clone(), config.retry.clone())?;
        Ok(OpenAiModel {
            config,
            http,
            headers,
        })
    }

    /// The configuration this model was built from.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The URL of `endpoint` (`chat/completions` or `embeddings`) for `model`.
    fn url(&self, endpoint: &str, model: &str) -> Result<reqwest::Url, LlmError> {
        let Some(version) = &self.config.azure_api_version else {
            return join_url(&self.config.base_url, endpoint);
        };
        let mut url = join_url(&self.config.base_url, "openai/deployments")?;
        url.path_segments_mut()
            .map_err(|()| LlmError::Config("the Azure endpoint cannot hold a path".into()))?
            .pop_if_empty()
            .push(model)
            .extend(endpoint.split('/'));
        url.query_pairs_mut().append_pair("api-version", version);
        Ok(url)
    }

    fn body_options(&self, stream: bool) -> BodyOptions {
        BodyOptions {
            max_tokens_field: self.config.max_tokens_field,
            stream: stream.then_some(self.config.stream_usage),
            forced_tool_choice: self.config.forced_tool_choice,
        }
    }

    /// The request sized to the context window, when it is known.
    fn fitted<'a>(
        &self,
        request: &'a ChatRequest,
    ) -> Result<std::borrow::Cow<'a, ChatRequest>, LlmError> {
        match self.config.context_window {
            Some(window) => crate::context_fit::fit_to_context(request, window),
            None => Ok(std::borrow::Cow::Borrowed(request)),
        }
    }

    fn chat_model<'a>(&'a self, request: &'a ChatRequest) -> &'a str {
        request
            .model
            .as_deref()
            .unwrap_or(&self.config.default_model)
    }
}

#[async_trait]
impl ChatModel for OpenAiModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let request = &*self.fitted(request)?;
        let model = self.chat_model(request);
        let url = self.url("chat/completions", model)?;
        let body = wire::chat_body(request, model, self.body_options(false));
        tracing::debug!(model, messages = request.messages.len(), "chat completion");
        let answer = self.http.post_json(&url, &self.headers, &body).await?;
        wire::parse_chat_response(answer)
    }

    async fn chat_stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        let request = &*self.fitted(request)?;
        let model = self.chat_model(request);
        let url = self.url("chat/completions", model)?;
        let body = wire::chat_body(request, model, self.body_options(true));
        tracing::debug!(
            model,
            messages = request.messages.len(),
            "streamed chat completion"
        );
        let sse = self.http.post_sse(&url, &self.headers, &body).await?;
        Ok(stream::event_stream(sse))
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        self.config.structured_output
    }

    fn default_model(&self) -> Option<String> {
        Some(self.config.default_model.clone())
    }

    fn context_window(&self) -> Option<u32> {
        self.config.context_window
    }
}

#[async_trait]
impl EmbeddingModel for OpenAiModel {
    async fn embed(&self, request: EmbeddingRequest) -> Result<EmbeddingResponse, LlmError> {
        let model = request
            .model
            .as_deref()
            .unwrap_or(&self.config.default_embedding_model);
        if model.is_empty() {
            return Err(LlmError::Config(
                "no embedding model: name one in the request or set default_embedding_model".into(),
            ));
        }
        if request.inputs.is_empty() {
            return Ok(EmbeddingResponse {
                model: model.to_owned(),
                vectors: Vec::new(),
                usage: Default::default(),
            });
        }
        let url = self.url("embeddings", model)?;
        // Large requests go in batches (OpenAI takes at most 2,048 inputs and 300,000
        // tokens per request); each batch is retried on its own.
        let mut whole: Option<EmbeddingResponse> = None;
        for batch in request.inputs.chunks(EMBEDDING_BATCH) {
            let part = EmbeddingRequest {
                inputs: batch.to_vec(),
                ..request.clone()
            };
            let body = wire::embedding_body(&part, model);
            tracing::debug!(model, inputs = batch.len(), "embeddings");
            let answer = self.http.post_json(&url, &self.headers, &body).await?;
            let answer = wire::parse_embeddings(answer, batch.len(), model)?;
            match &mut whole {
                None => whole = Some(answer),
                Some(whole) => {
                    whole.vectors.extend(answer.vectors);
                    whole.usage.input_tokens += answer.usage.input_tokens;
                }
            }
        }
        whole.ok_or_else(|| LlmError::InvalidResponse("no embeddings came back".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_match_their_services() {
        let openai = OpenAiConfig::openai("k");
        assert_eq!(openai.base_url, "https://api.openai.com/v1");
        assert_eq!(openai.max_tokens_field, MaxTokensField::MaxCompletionTokens);
        assert_eq!(openai.structured_output, StructuredOutputMode::JsonSchema);
        assert_eq!(openai.default_model, "gpt-4.1-mini");
        let zai = OpenAiConfig::zai("k");
        assert_eq!(zai.base_url, "https://api.z.ai/api/paas/v4");
        assert_eq!(zai.structured_output, StructuredOutputMode::JsonObject);
        assert!(!zai.forced_tool_choice);
        assert_eq!(zai.default_model, "glm-4.7");
        let local = OpenAiConfig::local("http://127.0.0.1:1/v1");
        assert!(local.api_key.is_none());
        assert_eq!(local.default_model, "local");
        let deepseek = OpenAiConfig::deepseek("k");
        assert_eq!(deepseek.max_tokens_field, MaxTokensField::MaxTokens);
        assert_eq!(deepseek.default_embedding_model, "");
    }

    #[tokio::test]
    async fn embedding_without_a_model_fails_before_sending() {
        let model = OpenAiModel::new(OpenAiConfig::deepseek("k")).unwrap();
        let request = EmbeddingRequest {
            inputs: vec!["a".into()],
            ..Default::default()
        };
        assert!(matches!(
            model.embed(request).await,
            Err(LlmError::Config(_))
        ));
    }

    #[test]
    fn urls_for_plain_and_azure_endpoints() {
        let plain =
            OpenAiModel::new(OpenAiConfig::openai("k").with_base_url("http://h/v1/")).unwrap();
        assert_eq!(
            plain.url("chat/completions", "m").unwrap().as_str(),
            "http://h/v1/chat/completions"
        );
        assert_eq!(
            plain.url("embeddings", "m").unwrap().as_str(),
            "http://h/v1/embeddings"
        );
        let azure = OpenAiModel::new(OpenAiConfig::azure(
            "https://r.openai.azure.com/",
            "k",
            "2024-10-21",
        ))
        .unwrap();
        assert_eq!(
            azure.url("chat/completions", "my gpt").unwrap().as_str(),
            "https://r.openai.azure.com/openai/deployments/my%20gpt/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            azure.url("embeddings", "emb").unwrap().as_str(),
            "https://r.openai.azure.com/openai/deployments/emb/embeddings?api-version=2024-10-21"
        );
    }

    #[test]
    fn keys_are_sensitive_headers_and_never_printed() {
        let model = OpenAiModel::new(OpenAiConfig::openai("sk-secret-value")).unwrap();
        let auth = model.headers.get("authorization").unwrap();
        assert!(auth.is_sensitive());
        assert!(!format!("{model:?}").contains("sk-secret-value"));
        let azure = OpenAiModel::new(OpenAiConfig::azure("https://r", "az-secret", "v")).unwrap();
        assert!(azure.headers.get("api-key").unwrap().is_sensitive());
        assert!(azure.headers.get("authorization").is_none());
        let local = OpenAiModel::new(OpenAiConfig::local("http://127.0.0.1:1/v1")).unwrap();
        assert!(local.headers.is_empty());
    }

    #[test]
    fn bad_configuration_is_a_config_error() {
        assert!(matches!(
            OpenAiModel::new(OpenAiConfig::local("not a url")),
            Err(LlmError::Config(_))
        ));
        let bad_header = OpenAiConfig::local("http://127.0.0.1:1").with_header("bad name", "v");
        assert!(matches!(
            OpenAiModel::new(bad_header),
            Err(LlmError::Config(_))
        ));
    }
}
