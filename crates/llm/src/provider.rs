//! The supported providers, named as in `LLM_PROVIDER`.

use crate::error::LlmError;
use std::fmt;
use std::str::FromStr;

/// The supported providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI Chat Completions.
    OpenAi,
    /// Azure OpenAI (deployment URLs, `api-key` header).
    Azure,
    /// DeepSeek (OpenAI-compatible).
    DeepSeek,
    /// Z.AI GLM models (OpenAI-compatible).
    Zai,
    /// A local OpenAI-compatible server (llama.cpp, vLLM, Ollama, ...).
    Local,
}

impl ProviderKind {
    /// The name used in `LLM_PROVIDER`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAi => "openai",
            ProviderKind::Azure => "azure",
            ProviderKind::DeepSeek => "deepseek",
            ProviderKind::Zai => "zai",
            ProviderKind::Local => "local",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProviderKind {
    type Err = LlmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "anthropic" | "claude" => ProviderKind::Anthropic,
            "openai" => ProviderKind::OpenAi,
            "azure" | "azure_openai" | "azure-openai" => ProviderKind::Azure,
            "deepseek" => ProviderKind::DeepSeek,
            "zai" | "z.ai" | "glm" | "zhipu" => ProviderKind::Zai,
            "local" | "openai_compatible" | "openai-compatible" | "ollama" | "vllm"
            | "llamacpp" => ProviderKind::Local,
            other => {
                return Err(LlmError::Config(format!(
                    "unknown LLM_PROVIDER {other:?}: use anthropic, openai, azure, deepseek, zai or local"
                )));
            }
        })
    }
}
