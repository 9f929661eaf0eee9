//! Choosing and building a provider from the environment.

use crate::anthropic::{AnthropicConfig, AnthropicModel};
use crate::capacity::{CapacityLimited, ModelCapacity};
use crate::error::LlmError;
use crate::http::HttpSettings;
use crate::model::{ChatModel, EmbeddingModel};
use crate::openai::ServedModels;
use crate::openai::{OpenAiConfig, OpenAiModel};
use crate::retry::RetryPolicy;
use crate::secret::ApiKey;
use crate::tiers::{ModelRouter, ModelTier};
use std::sync::Arc;

pub use crate::provider::ProviderKind;

/// Which provider to use and how to reach it.
///
/// Read from the environment by [`ProviderConfig::from_env`]:
///
/// | provider | key | base URL | notes |
/// |---|---|---|---|
/// | `anthropic` | `ANTHROPIC_API_KEY` | `ANTHROPIC_BASE_URL` | |
/// | `openai` | `OPENAI_API_KEY` | `OPENAI_BASE_URL` | |
/// | `azure` | `AZURE_OPENAI_API_KEY` or `OPENAI_API_KEY` | `AZURE_OPENAI_ENDPOINT` or `OPENAI_BASE_URL` | `AZURE_OPENAI_API_VERSION` or `OPENAI_API_VERSION` |
/// | `deepseek` | `DEEPSEEK_API_KEY` or `OPENAI_API_KEY` | `DEEPSEEK_BASE_URL` or `OPENAI_BASE_URL` | |
/// | `zai` | `ZAI_API_KEY` or `OPENAI_API_KEY` | `ZAI_BASE_URL` or `OPENAI_BASE_URL` | |
/// | `local` | `OPENAI_API_KEY` (optional) | `OPENAI_BASE_URL` | |
///
/// `LLM_PROVIDER` picks the provider; without it, Anthropic is used when
/// `ANTHROPIC_API_KEY` or `ANTHROPIC_BASE_URL` is set, else OpenAI when `OPENAI_API_KEY` or
/// `OPENAI_BASE_URL` is set, else nothing is configured. Tier models come from
/// [`ModelRouter`] with `LLM_MODEL_*` overrides.
///
/// Also read: `LLM_TIMEOUT_SECS`, `LLM_CONNECT_TIMEOUT_SECS`, `LLM_READ_TIMEOUT_SECS`
/// ([`HttpSettings`]); `LLM_MAX_CONCURRENCY`, the calls sent at once (default 8, or the
/// slots a local server publishes, see [`ProviderConfig::discover`]); `LLM_CONTEXT_WINDOW`,
/// the models' context window in tokens when the server does not publish it.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The provider.
    pub kind: ProviderKind,
    /// Base URL; `None` uses the provider's public address.
    pub base_url: Option<String>,
    /// The key; never printed.
    pub api_key: Option<ApiKey>,
    /// Azure `api-version`.
    pub api_version: Option<String>,
    /// Tier-to-model mapping.
    pub router: ModelRouter,
    /// HTTP timeouts.
    pub http: HttpSettings,
    /// The calls the provider takes at once, shared by every model built from this
    /// configuration (and its clones).
    pub capacity: ModelCapacity,
    /// The models' context window in tokens, when configured or discovered.
    pub context_window: Option<u32>,
    /// Whether `LLM_MAX_CONCURRENCY` set the capacity (discovery then leaves it alone).
    concurrency_configured: bool,
}

/// Calls sent at once to a provider unless configured or discovered otherwise.
pub const DEFAULT_MAX_CONCURRENCY: usize = 8;

/// Azure OpenAI's generally available API version used when none is configured.
pub const DEFAULT_AZURE_API_VERSION: &str = "2024-10-21";

impl ProviderConfig {
    /// Reads the process environment; `Ok(None)` when no provider is configured.
    pub fn from_env() -> Result<Option<Self>, LlmError> {
        ProviderConfig::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`ProviderConfig::from_env`], reading variables through `lookup`.
    ///
    /// ```
    /// use agent_llm::{ProviderConfig, ProviderKind};
    /// let env = |name: &str| match name {
    ///     "OPENAI_BASE_URL" => Some("http://127.0.0.1:8000/v1".to_string()),
    ///     "OPENAI_API_KEY" => Some("sk-test".to_string()),
    ///     _ => None,
    /// };
    /// let config = ProviderConfig::from_lookup(env).unwrap().unwrap();
    /// assert_eq!(config.kind, ProviderKind::OpenAi);
    /// assert!(ProviderConfig::from_lookup(|_| None).unwrap().is_none());
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, LlmError> {
        let var = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let first = |names: &[&str]| names.iter().find_map(|name| var(name));
        let kind = match var("LLM_PROVIDER") {
            Some(name) => name.parse()?,
            None if var("ANTHROPIC_API_KEY").is_some() || var("ANTHROPIC_BASE_URL").is_some() => {
                ProviderKind::Anthropic
            }
            None if var("OPENAI_API_KEY").is_some() || var("OPENAI_BASE_URL").is_some() => {
                ProviderKind::OpenAi
            }
            None => return Ok(None),
        };
        let (key_vars, url_vars): (&[&str], &[&str]) = match kind {
            ProviderKind::Anthropic => (&["ANTHROPIC_API_KEY"], &["ANTHROPIC_BASE_URL"]),
            ProviderKind::OpenAi | ProviderKind::Local => {
                (&["OPENAI_API_KEY"], &["OPENAI_BASE_URL"])
            }
            ProviderKind::Azure => (
                &["AZURE_OPENAI_API_KEY", "OPENAI_API_KEY"],
                &["AZURE_OPENAI_ENDPOINT", "OPENAI_BASE_URL"],
            ),
            ProviderKind::DeepSeek => (
                &["DEEPSEEK_API_KEY", "OPENAI_API_KEY"],
                &["DEEPSEEK_BASE_URL", "OPENAI_BASE_URL"],
            ),
            ProviderKind::Zai => (
                &["ZAI_API_KEY", "OPENAI_API_KEY"],
                &["ZAI_BASE_URL", "OPENAI_BASE_URL"],
            ),
        };
        let api_key = first(key_vars).map(ApiKey::new);
        let base_url = first(url_vars);
        let needs_url = matches!(kind, ProviderKind::Azure | ProviderKind::Local);
        if needs_url && base_url.is_none() {
            return Err(LlmError::Config(format!(
                "LLM_PROVIDER={kind} needs a base URL: set {}",
                url_vars.join(" or ")
            )));
        }
        if api_key.is_none() && base_url.is_none() {
            return Err(LlmError::Config(format!(
                "LLM_PROVIDER={kind} needs an API key: set {}",
                key_vars.join(" or ")
            )));
        }
        let api_version = first(&["AZURE_OPENAI_API_VERSION", "OPENAI_API_VERSION"]);
        let router = ModelRouter::for_provider(kind).with_env_overrides(&lookup);
        let http = HttpSettings::from_lookup(&lookup)?;
        let positive = |name: &str| -> Result<Option<u64>, LlmError> {
            var(name)
                .map(|value| {
                    value
                        .parse::<u64>()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| {
                            LlmError::Config(format!(
                                "{name}={value:?}: expected a whole number, at least 1"
                            ))
                        })
                })
                .transpose()
        };
        let concurrency = positive("LLM_MAX_CONCURRENCY")?;
        let context_window =
            positive("LLM_CONTEXT_WINDOW")?.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        Ok(Some(ProviderConfig {
            kind,
            base_url,
            api_key,
            api_version,
            router,
            http,
            capacity: ModelCapacity::new(
                concurrency.map_or(DEFAULT_MAX_CONCURRENCY, |n| n as usize),
            ),
            context_window,
            concurrency_configured: concurrency.is_some(),
        }))
    }

    /// Asks an OpenAI-compatible server at a configured base URL what it serves, and fits
    /// the configuration to it: tiers naming a model the server does not serve use the
    /// one model it serves (a local server hosts one; the banner and the prices then name
    /// the model that answers), the context window is the one it publishes unless
    /// `LLM_CONTEXT_WINDOW` set one, and the capacity is its slots unless
    /// `LLM_MAX_CONCURRENCY` set it. Hosted APIs at their public address and Anthropic are
    /// left alone (`Ok(None)`). Call it before building models.
    ///
    /// Discovery is an optimisation: a server that does not publish its models (it
    /// answers `GET /models` with 404, 405, 501 or any other refusal, or with a body that
    /// is not a model list) leaves the configuration as it is, with one warning, and
    /// `Ok(None)`. Only a server that cannot be reached at all (no connection, no answer
    /// in time) is an error, and the error names its address.
    pub async fn discover(&mut self) -> Result<Option<ServedModels>, LlmError> {
        let Some(base_url) = self.base_url.clone() else {
            return Ok(None);
        };
        if matches!(self.kind, ProviderKind::Anthropic | ProviderKind::Azure) {
            return Ok(None);
        }
        let probe = OpenAiModel::new(self.openai_config()?.with_retry(RetryPolicy::none()))?;
        let served = match probe.served_models().await {
            Ok(served) if !served.models.is_empty() => served,
            Ok(_) => {
                tracing::warn!(%base_url, "the server's GET /models is not a model list: using the configured models");
                return Ok(None);
            }
            Err(LlmError::Transport(reason)) => {
                return Err(LlmError::Transport(format!(
                    "the model server at {base_url} cannot be reached: {reason}"
                )));
            }
            Err(LlmError::Timeout(reason)) => {
                return Err(LlmError::Timeout(format!(
                    "the model server at {base_url} did not answer: {reason}"
                )));
            }
            Err(error @ (LlmError::Config(_) | LlmError::RequestsDisabled(_))) => {
                return Err(error);
            }
            Err(error) => {
                tracing::warn!(%base_url, %error, "the server does not publish its models: using the configured models");
                return Ok(None);
            }
        };
        if let Some(only) = served.only() {
            for tier in ModelTier::ALL {
                if served.get(self.router.model(tier)).is_none() {
                    tracing::info!(%tier, configured = self.router.model(tier), served = %only.id, "the server serves one model: using it");
                    self.router = self.router.clone().with_model(tier, only.id.clone());
                }
            }
        }
        if self.context_window.is_none() {
            self.context_window = served
                .get(self.router.model(ModelTier::Primary))
                .and_then(|model| model.context_window);
        }
        if let Some(slots) = served.slots.filter(|_| !self.concurrency_configured) {
            self.capacity = ModelCapacity::new(slots);
        }
        Ok(Some(served))
    }

    /// One line for logs and banners: provider, address, whether a key is set, the tier
    /// models, and what is known of their capacity.
    ///
    /// ```
    /// use agent_llm::ProviderConfig;
    /// let config = ProviderConfig::from_lookup(|name| (name == "OPENAI_API_KEY").then(|| "sk".to_owned()))
    ///     .unwrap()
    ///     .unwrap();
    /// assert_eq!(
    ///     config.describe(),
    ///     "openai at its public API (key set); models: gpt-4.1 (primary), gpt-4.1-mini (mid, orchestrator), gpt-4.1-nano (light); 8 calls at once"
    /// );
    /// ```
    pub fn describe(&self) -> String {
        let url = self.base_url.as_deref().unwrap_or("its public API");
        let key = if self.api_key.is_some() {
            "key set"
        } else {
            "no key"
        };
        let mut models: Vec<(String, Vec<&str>)> = Vec::new();
        for tier in ModelTier::ALL {
            let model = self.router.model(tier);
            match models.iter_mut().find(|(known, _)| known == model) {
                Some((_, tiers)) => tiers.push(tier.as_str()),
                None => models.push((model.to_owned(), vec![tier.as_str()])),
            }
        }
        let models = models
            .iter()
            .map(|(model, tiers)| format!("{model} ({})", tiers.join(", ")))
            .collect::<Vec<_>>()
            .join(", ");
        let window = self
            .context_window
            .map(|tokens| format!("; context window {tokens} tokens"))
            .unwrap_or_default();
        let calls = match self.capacity.limit() {
            1 => "one call at a time".to_owned(),
            n => format!("{n} calls at once"),
        };
        format!(
            "{} at {url} ({key}); models: {models}{window}; {calls}",
            self.kind
        )
    }

    /// Builds the chat model; requests without a model use the `default_tier` model.
    pub fn chat_model(&self, default_tier: ModelTier) -> Result<Arc<dyn ChatModel>, LlmError> {
        self.chat_model_with_retry(default_tier, RetryPolicy::default())
    }

    /// Like [`chat_model`](Self::chat_model), with the client retrying transient errors
    /// by `retry` instead of the default policy.
    ///
    /// ```
    /// use agent_llm::{ModelTier, ProviderConfig, RetryPolicy};
    /// use std::time::Duration;
    /// let config = ProviderConfig::from_lookup(|name| {
    ///     (name == "ANTHROPIC_API_KEY").then(|| "sk-ant-test".to_owned())
    /// }).unwrap().unwrap();
    /// let retry = RetryPolicy::default().with_base_delay(Duration::from_secs(1)).with_max_delay(Duration::from_secs(10));
    /// let model = config.chat_model_with_retry(ModelTier::Primary, retry).unwrap();
    /// # let _ = model;
    /// ```
    pub fn chat_model_with_retry(
        &self,
        default_tier: ModelTier,
        retry: RetryPolicy,
    ) -> Result<Arc<dyn ChatModel>, LlmError> {
        let model = self.router.model(default_tier).to_owned();
        let capacity = self.capacity.clone();
        Ok(match self.kind {
            ProviderKind::Anthropic => {
                let mut config = AnthropicConfig::new(ApiKey::new(""))
                    .with_default_model(model)
                    .with_retry(retry);
                config.api_key = self.api_key.clone();
                config.http = self.http.clone();
                if let Some(url) = &self.base_url {
                    config = config.with_base_url(url);
                }
                Arc::new(CapacityLimited::new(AnthropicModel::new(config)?, capacity))
            }
            _ => {
                let mut config = self
                    .openai_config()?
                    .with_default_model(model)
                    .with_retry(retry);
                config.context_window = self.context_window;
                Arc::new(CapacityLimited::new(OpenAiModel::new(config)?, capacity))
            }
        })
    }

    /// Builds the embedding model (OpenAI-compatible providers only).
    pub fn embedding_model(&self) -> Result<Arc<dyn EmbeddingModel>, LlmError> {
        if self.kind == ProviderKind::Anthropic {
            return Err(LlmError::Config(
                "Anthropic has no embeddings endpoint; configure an OpenAI-compatible provider"
                    .into(),
            ));
        }
        Ok(Arc::new(OpenAiModel::new(self.openai_config()?)?))
    }

    fn openai_config(&self) -> Result<OpenAiConfig, LlmError> {
        let no_key = || ApiKey::new("");
        let mut config = match self.kind {
            ProviderKind::OpenAi => OpenAiConfig::openai(no_key()),
            ProviderKind::Azure => {
                let version = self
                    .api_version
                    .clone()
                    .unwrap_or_else(|| DEFAULT_AZURE_API_VERSION.into());
                OpenAiConfig::azure("", no_key(), version)
            }
            ProviderKind::DeepSeek => OpenAiConfig::deepseek(no_key()),
            ProviderKind::Zai => OpenAiConfig::zai(no_key()),
            ProviderKind::Local => OpenAiConfig::local(""),
            ProviderKind::Anthropic => {
                return Err(LlmError::Config(
                    "Anthropic is not OpenAI-compatible".into(),
                ));
            }
        };
        config.api_key = self.api_key.clone();
        config.http = self.http.clone();
        if let Some(url) = &self.base_url {
            config = config.with_base_url(url);
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn anthropic_wins_without_llm_provider() {
        let config = ProviderConfig::from_lookup(env(&[
            ("ANTHROPIC_API_KEY", "sk-ant-secret"),
            ("OPENAI_API_KEY", "sk-openai"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(config.kind, ProviderKind::Anthropic);
        assert!(!format!("{config:?}").contains("secret"));
        assert!(!config.describe().contains("secret"));
    }

    #[test]
    fn explicit_provider_needs_its_key() {
        let error = ProviderConfig::from_lookup(env(&[("LLM_PROVIDER", "deepseek")])).unwrap_err();
        assert!(error.to_string().contains("DEEPSEEK_API_KEY"));
        let error = ProviderConfig::from_lookup(env(&[("LLM_PROVIDER", "mystery")])).unwrap_err();
        assert!(error.to_string().contains("unknown LLM_PROVIDER"));
        let error =
            ProviderConfig::from_lookup(env(&[("LLM_PROVIDER", "azure"), ("OPENAI_API_KEY", "k")]))
                .unwrap_err();
        assert!(error.to_string().contains("AZURE_OPENAI_ENDPOINT"));
    }

    #[test]
    fn zai_uses_glm_tiers_with_overrides() {
        let config = ProviderConfig::from_lookup(env(&[
            ("LLM_PROVIDER", "zai"),
            ("ZAI_API_KEY", "k"),
            ("LLM_MODEL_PRIMARY", "glm-5"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(config.router.model(ModelTier::Primary), "glm-5");
        assert_eq!(config.router.model(ModelTier::Mid), "glm-4.5-air");
        assert_eq!(config.router.model(ModelTier::Light), "glm-4.7-flash");
    }

    #[test]
    fn base_url_alone_configures_a_provider() {
        let config =
            ProviderConfig::from_lookup(env(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")]))
                .unwrap()
                .unwrap();
        assert_eq!(config.kind, ProviderKind::Anthropic);
        assert!(config.api_key.is_none());
        assert!(config.chat_model(ModelTier::Primary).is_ok());
    }
}
