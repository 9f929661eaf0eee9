//! The pipeline's external services as trait objects: live, or recorded fixtures for a
//! dry run. Nothing is patched; a test builds the `Deps` it needs.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_llm::testing::{LatencyModel, dry_run_pricing};
use agent_llm::{ChatModel, ModelTier, PricingTable, ProviderConfig, RetryPolicy};
use agent_runtime::EventSink;
use job_capabilities::ats::{AtsClient, AtsEndpoints, JobBoardClient};
use job_capabilities::fetch::{FetchPolicy, PageFetcher, PageSource};
use job_capabilities::http::{PoliteClient, PolitePolicy};
use job_capabilities::mail::{Mailer, SmtpMailer};
use job_capabilities::search::{WebSearch, web_search_from_env};

use crate::dry_run::{FixtureBoards, FixtureError, FixturePages, FixtureSearch, recorded_model};
use crate::events::HuntEvent;
use crate::settings::Settings;

/// Everything the pipeline talks to.
#[derive(Clone)]
pub struct Deps {
    /// The chat model behind every step.
    pub model: Arc<dyn ChatModel>,
    /// What its calls cost: the built-in prices and the configured ones
    /// (`LLM_PRICE_<MODEL>`, `LLM_PRICING_FILE`); recorded answers are free.
    pub pricing: PricingTable,
    /// Job-board APIs.
    pub boards: Arc<dyn JobBoardClient>,
    /// Careers pages.
    pub pages: Arc<dyn PageSource>,
    /// Web search; `None` searches the companies the preferences name, or, when they
    /// name none, companies the model suggests that have a job board under their name.
    pub search: Option<Arc<dyn WebSearch>>,
    /// The SMTP mailer; `None` writes the summary as an `.eml` file (always so in a dry
    /// run: [`Deps::dry_run`] never builds one).
    pub mailer: Option<Arc<dyn Mailer>>,
    /// Progress events.
    pub events: Arc<dyn EventSink<HuntEvent>>,
    /// Whether this is a dry run on recorded fixtures.
    pub dry_run: bool,
}

impl std::fmt::Debug for Deps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deps")
            .field("dry_run", &self.dry_run)
            .field(
                "search",
                &self.search.as_ref().map(|s| s.provider().to_owned()),
            )
            .field("mailer", &self.mailer.as_ref().map(|m| m.describe()))
            .finish_non_exhaustive()
    }
}

/// Why the services could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DepsError {
    /// No LLM provider is configured, or its configuration is wrong.
    #[error("LLM provider: {0}")]
    Provider(String),
    /// A client could not be built.
    #[error("{0}")]
    Client(String),
    /// The dry-run fixtures are missing or malformed.
    #[error("fixtures: {0}")]
    Fixtures(#[from] FixtureError),
}

fn mailer(settings: &Settings) -> Result<Option<Arc<dyn Mailer>>, DepsError> {
    settings
        .smtp_url
        .as_deref()
        .map(|url| {
            SmtpMailer::from_url(url)
                .map(|m| Arc::new(m) as Arc<dyn Mailer>)
                .map_err(|e| DepsError::Client(format!("SMTP_URL: {e}")))
        })
        .transpose()
}

/// The LLM provider from the environment; `JH_ANTHROPIC_API_KEY` (the spec's setting)
/// stands in for `ANTHROPIC_API_KEY` when that is unset.
pub fn live_provider() -> Result<ProviderConfig, DepsError> {
    live_provider_from(|name| std::env::var(name).ok())
}

/// [`live_provider`] reading variables through `lookup`.
///
/// ```
/// let provider = job_hunter::deps::live_provider_from(|name| {
///     (name == "JH_ANTHROPIC_API_KEY").then(|| "sk-ant-test".to_owned())
/// })
/// .unwrap();
/// assert_eq!(provider.kind, agent_llm::ProviderKind::Anthropic);
/// ```
pub fn live_provider_from(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<ProviderConfig, DepsError> {
    ProviderConfig::from_lookup(|name| {
        lookup(name).or_else(|| {
            (name == "ANTHROPIC_API_KEY")
                .then(|| lookup("JH_ANTHROPIC_API_KEY"))
                .flatten()
        })
    })
    .map_err(|e| DepsError::Provider(e.to_string()))?
    .ok_or_else(|| {
        DepsError::Provider(
            "no LLM provider configured: set ANTHROPIC_API_KEY (or LLM_PROVIDER and its key), or use --dry-run"
                .into(),
        )
    })
}

fn discard_events() -> Arc<dyn EventSink<HuntEvent>> {
    Arc::new(|_event: HuntEvent| {})
}

impl Deps {
    /// Real services: the LLM provider from the environment ([`live_provider`]) retrying 3 times with backoff from 1 s to 10 s, the ATS
    /// APIs (`GREENHOUSE_API_BASE`, ...), careers pages through the address guard,
    /// Brave search when `BRAVE_API_KEY` is set, and SMTP when `SMTP_URL` is set.
    ///
    /// The provider is used as configured; to ask a local server which model it serves
    /// first, call [`ProviderConfig::discover`] and use [`Deps::from_provider`].
    pub fn live(settings: &Settings) -> Result<Self, DepsError> {
        Self::from_provider(&live_provider()?, settings)
    }

    /// Like [`Deps::live`], with the model from `provider` (for instance one that
    /// [`ProviderConfig::discover`] fitted to what its server serves).
    pub fn from_provider(
        provider: &ProviderConfig,
        settings: &Settings,
    ) -> Result<Self, DepsError> {
        let retry = RetryPolicy::default()
            .with_max_attempts(3)
            .with_base_delay(Duration::from_secs(1))
            .with_max_delay(Duration::from_secs(10));
        let model = provider
            .chat_model_with_retry(ModelTier::Primary, retry)
            .map_err(|e| DepsError::Provider(e.to_string()))?;
        let pricing = PricingTable::from_env().map_err(|e| DepsError::Provider(e.to_string()))?;
        let polite = PoliteClient::new(PolitePolicy {
            min_interval_per_host: settings.host_interval,
            ..PolitePolicy::default()
        });
        let pages = PageFetcher::new(FetchPolicy {
            min_interval_per_host: settings.host_interval,
            ..FetchPolicy::default()
        })
        .map_err(|e| DepsError::Client(e.to_string()))?;
        Ok(Deps {
            model,
            pricing,
            boards: Arc::new(AtsClient::new(polite, AtsEndpoints::from_env())),
            pages: Arc::new(pages),
            search: web_search_from_env(),
            mailer: mailer(settings)?,
            events: discard_events(),
            dry_run: false,
        })
    }

    /// Recorded fixtures from `fixtures` (normally `fixtures/job-hunter/`) for the
    /// model ([`recorded_model`]), search, job boards and careers pages; the real ATS
    /// detection and parsing and the real resume reader still run. `latency` delays every
    /// model call. A dry run never sends mail, whatever `SMTP_URL` says: the summary is
    /// written as an `.eml` file, and the `notify` step says so when `SMTP_URL` is set.
    pub fn dry_run(
        fixtures: &Path,
        settings: &Settings,
        latency: Option<Duration>,
    ) -> Result<Self, DepsError> {
        if settings.smtp_url.is_some() {
            tracing::info!(
                "dry run: SMTP_URL is set, but no mail is sent; the summary is written as an .eml file"
            );
        }
        let model = recorded_model(fixtures)?;
        let model: Arc<dyn ChatModel> = match latency {
            Some(delay) if !delay.is_zero() => Arc::new(LatencyModel::new(model, delay)),
            _ => Arc::new(model),
        };
        Ok(Deps {
            model,
            pricing: dry_run_pricing(),
            boards: Arc::new(FixtureBoards::load(&fixtures.join("ats"))?),
            pages: Arc::new(FixturePages::load(&fixtures.join("pages"))?),
            search: Some(Arc::new(FixtureSearch::load(&fixtures.join("search"))?)),
            mailer: None,
            events: discard_events(),
            dry_run: true,
        })
    }

    /// Sends progress events to `sink`.
    pub fn with_events(mut self, sink: Arc<dyn EventSink<HuntEvent>>) -> Self {
        self.events = sink;
        self
    }

    /// Replaces the chat model (a scripted model in tests).
    pub fn with_model(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.model = model;
        self
    }

    /// Replaces or removes web search.
    pub fn with_search(mut self, search: Option<Arc<dyn WebSearch>>) -> Self {
        self.search = search;
        self
    }
}
