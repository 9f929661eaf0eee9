//! Model tiers: which model does which kind of work.

use crate::provider::ProviderKind;
use std::fmt;
use std::str::FromStr;

/// A cost/capability tier (spec 001 section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelTier {
    /// Heaviest work: writing, synthesis, review.
    Primary,
    /// Analysis, question generation, checks.
    Mid,
    /// An agent's main loop: deciding which tool to call next.
    Orchestrator,
    /// Cheap, quick tasks: classification, short extraction.
    Light,
}

impl ModelTier {
    /// Every tier.
    pub const ALL: [ModelTier; 4] = [
        ModelTier::Primary,
        ModelTier::Mid,
        ModelTier::Orchestrator,
        ModelTier::Light,
    ];

    /// Lower-case name (`primary`, `mid`, `orchestrator`, `light`).
    pub fn as_str(self) -> &'static str {
        match self {
            ModelTier::Primary => "primary",
            ModelTier::Mid => "mid",
            ModelTier::Orchestrator => "orchestrator",
            ModelTier::Light => "light",
        }
    }

    /// The environment variable overriding this tier's model (`LLM_MODEL_PRIMARY`, ...).
    pub fn env_var(self) -> &'static str {
        match self {
            ModelTier::Primary => "LLM_MODEL_PRIMARY",
            ModelTier::Mid => "LLM_MODEL_MID",
            ModelTier::Orchestrator => "LLM_MODEL_ORCHESTRATOR",
            ModelTier::Light => "LLM_MODEL_LIGHT",
        }
    }

    fn position(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ModelTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a [`ModelTier`] (parsing with [`FromStr`]).
///
/// ```
/// use agent_llm::{ModelTier, UnknownModelTier};
/// assert_eq!(" Mid ".parse::<ModelTier>(), Ok(ModelTier::Mid));
/// let error = "huge".parse::<ModelTier>().unwrap_err();
/// assert_eq!(error, UnknownModelTier { name: "huge".to_owned() });
/// assert_eq!(error.to_string(), r#"unknown model tier "huge" (primary, mid, orchestrator, light)"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown model tier {name:?} (primary, mid, orchestrator, light)")]
pub struct UnknownModelTier {
    /// The name given, as given.
    pub name: String,
}

impl FromStr for ModelTier {
    type Err = UnknownModelTier;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ModelTier::ALL
            .into_iter()
            .find(|tier| tier.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownModelTier { name: s.to_owned() })
    }
}

/// Maps tiers to model ids for one provider.
///
/// ```
/// use agent_llm::{ModelRouter, ModelTier, ProviderKind};
/// let router = ModelRouter::for_provider(ProviderKind::Zai);
/// assert_eq!(router.model(ModelTier::Orchestrator), "glm-4.7-flashx");
/// let router = router.with_env_overrides(|name| (name == "LLM_MODEL_LIGHT").then(|| "glm-4.5-flash".to_string()));
/// assert_eq!(router.model(ModelTier::Light), "glm-4.5-flash");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRouter {
    models: [String; 4],
}

impl ModelRouter {
    /// The defaults for a provider. Z.AI uses the GLM tiers of spec 001; Azure assumes
    /// deployments named after the OpenAI models; a local server gets `local` for every
    /// tier (override with `LLM_MODEL_*`).
    pub fn for_provider(kind: ProviderKind) -> Self {
        let models: [&str; 4] = match kind {
            ProviderKind::Anthropic => [
                "claude-sonnet-4-5",
                "claude-sonnet-4-5",
                "claude-haiku-4-5",
                "claude-haiku-4-5",
            ],
            ProviderKind::OpenAi | ProviderKind::Azure => {
                ["gpt-4.1", "gpt-4.1-mini", "gpt-4.1-mini", "gpt-4.1-nano"]
            }
            ProviderKind::DeepSeek => ["deepseek-chat"; 4],
            ProviderKind::Zai => ["glm-4.7", "glm-4.5-air", "glm-4.7-flashx", "glm-4.7-flash"],
            ProviderKind::Local => ["local"; 4],
        };
        ModelRouter {
            models: models.map(str::to_owned),
        }
    }

    /// The defaults for a provider with `LLM_MODEL_*` overrides from the process environment.
    pub fn from_env(kind: ProviderKind) -> Self {
        ModelRouter::for_provider(kind).with_env_overrides(|name| std::env::var(name).ok())
    }

    /// Applies `LLM_MODEL_*` overrides read through `lookup` (empty values are ignored).
    pub fn with_env_overrides(mut self, lookup: impl Fn(&str) -> Option<String>) -> Self {
        for tier in ModelTier::ALL {
            if let Some(model) = lookup(tier.env_var()).filter(|m| !m.trim().is_empty()) {
                self.models[tier.position()] = model.trim().to_owned();
            }
        }
        self
    }

    /// Sets one tier's model.
    pub fn with_model(mut self, tier: ModelTier, model: impl Into<String>) -> Self {
        self.models[tier.position()] = model.into();
        self
    }

    /// The model id for a tier.
    pub fn model(&self, tier: ModelTier) -> &str {
        &self.models[tier.position()]
    }
}
