//! `JH_` settings from the environment, with defaults and validation.

use std::path::PathBuf;

use agent_llm::{ModelTier, ProviderConfig, ProviderKind};
use std::time::Duration;

/// Settings of a job-hunting run. Every field has a default; [`Settings::from_env`]
/// reads the `JH_` variables (and `SMTP_URL`) over them and validates the result.
///
/// | Variable | Default | Meaning |
/// |---|---|---|
/// | `JH_AGENT_TIMEOUT_SECONDS` | 300 | Time limit of one step |
/// | `JH_CHECKPOINT_ENABLED` | true | Write a checkpoint after every step |
/// | `JH_CHECKPOINT_DIR` | `./output/checkpoints` | Where checkpoints go |
/// | `JH_MAX_COST_PER_RUN_USD` | 5.0 | Hard cost limit: the run ends `partial` |
/// | `JH_WARN_COST_THRESHOLD_USD` | 2.0 | A warning once the cost passes it |
/// | `JH_HAIKU_MODEL` | `claude-haiku-4-5` | Model for fast, cheap steps (another provider: its light tier) |
/// | `JH_SONNET_MODEL` | `claude-sonnet-4-5` | Model for quality steps (another provider: its primary tier) |
/// | `JH_ANTHROPIC_API_KEY` | unset | Anthropic key, when `ANTHROPIC_API_KEY` is not set |
/// | `JH_OUTPUT_DIR` | `./output` | Where the CSV, XLSX and `.eml` go |
/// | `JH_MAX_CONCURRENCY` | 8 | Model calls and company scrapes in flight at once |
/// | `JH_SCORE_BATCH_SIZE` | 5 | Jobs scored per model call |
/// | `JH_MAX_COMPANIES` | 12 | Companies searched per run |
/// | `JH_MAX_JOBS_PER_COMPANY` | 25 | Jobs kept per company |
/// | `JH_MAX_JOBS` | 200 | Jobs processed per run |
/// | `JH_TOP_N` | 10 | Jobs listed in the email |
/// | `JH_LLM_MAX_ATTEMPTS` | 3 | Attempts per model call (transient errors and invalid output) |
/// | `JH_HOST_INTERVAL_MS` | 500 | Least time between two requests to one host |
/// | `JH_EMAIL_TO` | unset | Recipient of the summary |
/// | `JH_EMAIL_FROM` | `job-hunter@localhost` | Sender of the summary |
/// | `SMTP_URL` | unset | `smtp://host:port` or `smtps://user:pass@host`; unset (or a dry run): write an `.eml` |
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Time limit of one step.
    pub agent_timeout: Duration,
    /// Whether checkpoints are written and read.
    pub checkpoint_enabled: bool,
    /// Where checkpoints go.
    pub checkpoint_dir: PathBuf,
    /// Hard cost limit in USD.
    pub max_cost_per_run_usd: f64,
    /// Warning threshold in USD.
    pub warn_cost_threshold_usd: f64,
    /// Fast, cheap model.
    pub haiku_model: String,
    /// High-quality model.
    pub sonnet_model: String,
    /// Output directory.
    pub output_dir: PathBuf,
    /// Concurrency bound for model calls and scrapes.
    pub max_concurrency: usize,
    /// Jobs per scoring call (8: the candidate, the instructions and the schema, a third
    /// of a call's input, are sent once per batch, and eight scores fit the first
    /// answer's token limit).
    pub score_batch_size: usize,
    /// Companies searched per run.
    pub max_companies: usize,
    /// Jobs kept per company.
    pub max_jobs_per_company: usize,
    /// Jobs processed per run.
    pub max_jobs: usize,
    /// Jobs listed in the email.
    pub top_n: usize,
    /// Attempts per model call.
    pub llm_max_attempts: u32,
    /// Least time between two requests to one host.
    pub host_interval: Duration,
    /// Recipient of the summary email.
    pub email_to: Option<String>,
    /// Sender of the summary email.
    pub email_from: String,
    /// SMTP server; without it (and always in a dry run) the email is written as an
    /// `.eml` file.
    pub smtp_url: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            agent_timeout: Duration::from_secs(300),
            checkpoint_enabled: true,
            checkpoint_dir: PathBuf::from("./output/checkpoints"),
            max_cost_per_run_usd: 5.0,
            warn_cost_threshold_usd: 2.0,
            haiku_model: "claude-haiku-4-5".into(),
            sonnet_model: "claude-sonnet-4-5".into(),
            output_dir: PathBuf::from("./output"),
            max_concurrency: 8,
            score_batch_size: 8,
            max_companies: 12,
            max_jobs_per_company: 25,
            max_jobs: 200,
            top_n: 10,
            llm_max_attempts: 3,
            host_interval: Duration::from_millis(500),
            email_to: None,
            email_from: "job-hunter@localhost".into(),
            smtp_url: None,
        }
    }
}

/// A setting that could not be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{variable}={value:?}: {reason}")]
pub struct SettingsError {
    /// The variable.
    pub variable: String,
    /// Its value.
    pub value: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Settings {
    /// Reads the process environment (see the table on [`Settings`]).
    pub fn from_env() -> Result<Self, SettingsError> {
        Settings::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads settings through `lookup` (a variable name to its value), for tests.
    ///
    /// ```
    /// use job_hunter::Settings;
    /// let settings = Settings::from_lookup(|name| match name {
    ///     "JH_MAX_COST_PER_RUN_USD" => Some("7.5".into()),
    ///     _ => None,
    /// }).unwrap();
    /// assert_eq!(settings.max_cost_per_run_usd, 7.5);
    /// assert!(Settings::from_lookup(|name| (name == "JH_MAX_CONCURRENCY").then(|| "0".into())).is_err());
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let env = Env { lookup: &lookup };
        let d = Settings::default();
        let settings = Settings {
            agent_timeout: Duration::from_secs(env.number(
                "JH_AGENT_TIMEOUT_SECONDS",
                d.agent_timeout.as_secs(),
                1..=86_400,
            )?),
            checkpoint_enabled: env.boolean("JH_CHECKPOINT_ENABLED", d.checkpoint_enabled)?,
            checkpoint_dir: env.path("JH_CHECKPOINT_DIR", d.checkpoint_dir),
            max_cost_per_run_usd: env.usd("JH_MAX_COST_PER_RUN_USD", d.max_cost_per_run_usd)?,
            warn_cost_threshold_usd: env
                .usd("JH_WARN_COST_THRESHOLD_USD", d.warn_cost_threshold_usd)?,
            haiku_model: env.text("JH_HAIKU_MODEL").unwrap_or(d.haiku_model),
            sonnet_model: env.text("JH_SONNET_MODEL").unwrap_or(d.sonnet_model),
            output_dir: env.path("JH_OUTPUT_DIR", d.output_dir),
            max_concurrency: env.number("JH_MAX_CONCURRENCY", d.max_concurrency, 1..=64)?,
            score_batch_size: env.number("JH_SCORE_BATCH_SIZE", d.score_batch_size, 1..=25)?,
            max_companies: env.number("JH_MAX_COMPANIES", d.max_companies, 1..=100)?,
            max_jobs_per_company: env.number(
                "JH_MAX_JOBS_PER_COMPANY",
                d.max_jobs_per_company,
                1..=1000,
            )?,
            max_jobs: env.number("JH_MAX_JOBS", d.max_jobs, 1..=5000)?,
            top_n: env.number("JH_TOP_N", d.top_n, 1..=100)?,
            llm_max_attempts: env.number("JH_LLM_MAX_ATTEMPTS", d.llm_max_attempts, 1..=10)?,
            host_interval: Duration::from_millis(env.number(
                "JH_HOST_INTERVAL_MS",
                d.host_interval.as_millis() as u64,
                0..=60_000,
            )?),
            email_to: env.text("JH_EMAIL_TO"),
            email_from: env.text("JH_EMAIL_FROM").unwrap_or(d.email_from),
            smtp_url: env.text("SMTP_URL"),
        };
        settings.validate()?;
        Ok(settings)
    }

    /// Fits the model ids to a provider other than Anthropic: unless `JH_HAIKU_MODEL`
    /// or `JH_SONNET_MODEL` name a model (read through `lookup`), the fast model becomes
    /// the provider's light tier and the quality model its primary tier.
    ///
    /// ```
    /// use agent_llm::ProviderConfig;
    /// use job_hunter::Settings;
    /// let openai = ProviderConfig::from_lookup(|n| (n == "OPENAI_API_KEY").then(|| "sk".to_owned()))
    ///     .unwrap()
    ///     .unwrap();
    /// let mut settings = Settings::default();
    /// settings.adopt_provider_models(&openai, |_| None);
    /// assert!(!settings.haiku_model.starts_with("claude"));
    /// ```
    pub fn adopt_provider_models(
        &mut self,
        provider: &ProviderConfig,
        lookup: impl Fn(&str) -> Option<String>,
    ) {
        if provider.kind == ProviderKind::Anthropic {
            return;
        }
        let set = |name: &str| lookup(name).is_some_and(|v| !v.trim().is_empty());
        if !set("JH_HAIKU_MODEL") {
            self.haiku_model = provider.router.model(ModelTier::Light).to_owned();
        }
        if !set("JH_SONNET_MODEL") {
            self.sonnet_model = provider.router.model(ModelTier::Primary).to_owned();
        }
    }

    /// Checks what the environment reader checks, for settings built by hand: counts
    /// that must be positive, and the warning threshold below the hard limit.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let positive = [
            ("JH_MAX_CONCURRENCY", self.max_concurrency),
            ("JH_SCORE_BATCH_SIZE", self.score_batch_size),
            ("JH_MAX_COMPANIES", self.max_companies),
            ("JH_MAX_JOBS_PER_COMPANY", self.max_jobs_per_company),
            ("JH_MAX_JOBS", self.max_jobs),
            ("JH_TOP_N", self.top_n),
            ("JH_LLM_MAX_ATTEMPTS", self.llm_max_attempts as usize),
            (
                "JH_AGENT_TIMEOUT_SECONDS",
                self.agent_timeout.as_millis() as usize,
            ),
        ];
        if let Some((variable, value)) = positive.iter().find(|(_, value)| *value == 0) {
            return Err(SettingsError {
                variable: (*variable).into(),
                value: value.to_string(),
                reason: "must be at least 1".into(),
            });
        }
        for (variable, usd) in [
            ("JH_MAX_COST_PER_RUN_USD", self.max_cost_per_run_usd),
            ("JH_WARN_COST_THRESHOLD_USD", self.warn_cost_threshold_usd),
        ] {
            if !(usd.is_finite() && usd >= 0.0) {
                return Err(SettingsError {
                    variable: variable.into(),
                    value: usd.to_string(),
                    reason: "must be a non-negative amount of USD".into(),
                });
            }
        }
        if self.warn_cost_threshold_usd > self.max_cost_per_run_usd {
            return Err(SettingsError {
                variable: "JH_WARN_COST_THRESHOLD_USD".into(),
                value: self.warn_cost_threshold_usd.to_string(),
                reason: format!(
                    "the warning threshold must not exceed JH_MAX_COST_PER_RUN_USD ({})",
                    self.max_cost_per_run_usd
                ),
            });
        }
        Ok(())
    }
}

struct Env<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl Env<'_> {
    fn text(&self, name: &str) -> Option<String> {
        (self.lookup)(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    fn path(&self, name: &str, default: PathBuf) -> PathBuf {
        self.text(name).map(PathBuf::from).unwrap_or(default)
    }

    fn error(name: &str, value: &str, reason: impl Into<String>) -> SettingsError {
        SettingsError {
            variable: name.into(),
            value: value.into(),
            reason: reason.into(),
        }
    }

    fn number<T>(
        &self,
        name: &str,
        default: T,
        range: std::ops::RangeInclusive<T>,
    ) -> Result<T, SettingsError>
    where
        T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
    {
        let Some(value) = self.text(name) else {
            return Ok(default);
        };
        let parsed: T = value
            .parse()
            .map_err(|_| Env::error(name, &value, "not a whole number"))?;
        if !range.contains(&parsed) {
            return Err(Env::error(
                name,
                &value,
                format!("must be between {} and {}", range.start(), range.end()),
            ));
        }
        Ok(parsed)
    }

    fn usd(&self, name: &str, default: f64) -> Result<f64, SettingsError> {
        let Some(value) = self.text(name) else {
            return Ok(default);
        };
        match value.parse::<f64>() {
            Ok(usd) if usd.is_finite() && usd >= 0.0 => Ok(usd),
            _ => Err(Env::error(
                name,
                &value,
                "must be a non-negative amount of USD",
            )),
        }
    }

    fn boolean(&self, name: &str, default: bool) -> Result<bool, SettingsError> {
        let Some(value) = self.text(name) else {
            return Ok(default);
        };
        match value.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(Env::error(name, &value, "must be true or false")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Settings::from_lookup(move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn defaults_match_the_spec() {
        let s = with(&[]).unwrap();
        assert_eq!(s.agent_timeout, Duration::from_secs(300));
        assert!(s.checkpoint_enabled);
        assert_eq!(s.checkpoint_dir, PathBuf::from("./output/checkpoints"));
        assert_eq!(
            (s.max_cost_per_run_usd, s.warn_cost_threshold_usd),
            (5.0, 2.0)
        );
    }

    #[test]
    fn values_are_read_and_bad_ones_named() {
        let s = with(&[
            ("JH_CHECKPOINT_ENABLED", "no"),
            ("JH_CHECKPOINT_DIR", "/tmp/cp"),
            ("JH_MAX_CONCURRENCY", "3"),
            ("SMTP_URL", "smtp://127.0.0.1:2525"),
        ])
        .unwrap();
        assert!(!s.checkpoint_enabled);
        assert_eq!(s.checkpoint_dir, PathBuf::from("/tmp/cp"));
        assert_eq!(s.max_concurrency, 3);
        assert_eq!(s.smtp_url.as_deref(), Some("smtp://127.0.0.1:2525"));

        let err = with(&[("JH_MAX_COST_PER_RUN_USD", "-1")]).unwrap_err();
        assert_eq!(err.variable, "JH_MAX_COST_PER_RUN_USD");
        let err = with(&[("JH_AGENT_TIMEOUT_SECONDS", "soon")]).unwrap_err();
        assert!(
            err.to_string().contains("JH_AGENT_TIMEOUT_SECONDS"),
            "{err}"
        );
        let hand_made = Settings {
            score_batch_size: 0,
            ..Settings::default()
        };
        assert_eq!(
            hand_made.validate().unwrap_err().variable,
            "JH_SCORE_BATCH_SIZE"
        );
        let err = with(&[("JH_WARN_COST_THRESHOLD_USD", "9")]).unwrap_err();
        assert!(err.reason.contains("must not exceed"), "{err}");
        assert!(with(&[("JH_CHECKPOINT_ENABLED", "maybe")]).is_err());
    }
}
