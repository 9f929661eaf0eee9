//! Telling a user about matching jobs behind one trait, [`Notifier`]: the console (a
//! tracing event), email (SMTP through [`crate::mail`]), a Slack incoming webhook (Block
//! Kit) and a Microsoft Teams incoming webhook (an Adaptive Card). A product decides
//! which channels it configures and how it keeps a notice from going out twice.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::mail::{Email, Mailer};

/// One matching job in a notice.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobMatch {
    /// The job's id where the product keeps it.
    pub id: String,
    /// The title.
    pub title: String,
    /// The company.
    pub company: String,
    /// Where.
    pub location: String,
    /// The pay as published, empty when not stated.
    pub salary: String,
    /// Where to read or apply.
    pub url: String,
    /// Its score, 0 to 1.
    pub score: f32,
    /// Why it matches.
    pub justification: String,
}

impl JobMatch {
    /// One line: title, company, place and pay.
    pub fn headline(&self) -> String {
        let mut line = format!("{} at {} ({})", self.title, self.company, self.location);
        if !self.salary.is_empty() {
            line.push_str(&format!(", {}", self.salary));
        }
        line
    }
}

/// What to tell.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// The heading ("3 new matches for Rust engineer").
    pub title: String,
    /// The jobs.
    pub matches: Vec<JobMatch>,
    /// Where email goes (the profile's address); `None`: email is skipped.
    pub email_to: Option<String>,
}

impl Notice {
    /// The notice as plain text.
    pub fn text(&self) -> String {
        let mut text = format!("{}\n", self.title);
        for (i, m) in self.matches.iter().enumerate() {
            text.push_str(&format!(
                "\n{}. {} ({:.0}%)\n   {}\n   {}\n",
                i + 1,
                m.headline(),
                m.score * 100.0,
                m.justification,
                m.url
            ));
        }
        text
    }
}

/// Why a channel could not deliver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotifyError(pub String);

/// A channel.
#[async_trait]
pub trait Notifier: Send + Sync {
    /// Its name (`console`, `email`, `slack`, `teams`).
    fn channel(&self) -> &'static str;

    /// Whether a send is journaled (every channel that leaves the process).
    fn journaled(&self) -> bool {
        true
    }

    /// Delivers `notice`; what was done, in a few words.
    async fn send(&self, notice: &Notice) -> Result<String, NotifyError>;
}

/// The console: a `job_capabilities::notify::console` tracing event at INFO.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConsoleNotifier;

#[async_trait]
impl Notifier for ConsoleNotifier {
    fn channel(&self) -> &'static str {
        "console"
    }

    fn journaled(&self) -> bool {
        false
    }

    async fn send(&self, notice: &Notice) -> Result<String, NotifyError> {
        tracing::info!(target: "job_capabilities::notify::console", "{}", notice.text());
        Ok(format!("{} jobs written to the log", notice.matches.len()))
    }
}

/// Email through a [`Mailer`] (SMTP in a deployment).
pub struct EmailNotifier {
    mailer: Arc<dyn Mailer>,
    from: String,
}

impl EmailNotifier {
    /// Mail from `from` through `mailer`.
    pub fn new(mailer: Arc<dyn Mailer>, from: impl Into<String>) -> Self {
        EmailNotifier {
            mailer,
            from: from.into(),
        }
    }
}

#[async_trait]
impl Notifier for EmailNotifier {
    fn channel(&self) -> &'static str {
        "email"
    }

    async fn send(&self, notice: &Notice) -> Result<String, NotifyError> {
        let Some(to) = notice.email_to.clone() else {
            return Err(NotifyError("the profile has no email address".into()));
        };
        let email = Email {
            from: self.from.clone(),
            to: vec![to.clone()],
            subject: notice.title.clone(),
            text_body: notice.text(),
            ..Email::default()
        };
        let sent = self
            .mailer
            .send(&email)
            .await
            .map_err(|e| NotifyError(e.to_string()))?;
        Ok(format!("sent to {to} via {}", sent.transport))
    }
}

/// Posts JSON to an incoming webhook.
#[derive(Clone)]
struct Webhook {
    http: reqwest::Client,
    url: String,
}

impl Webhook {
    /// A webhook a user handed in: the address must be http(s) to a public host
    /// (loopback too when `allow_loopback`, for tests), and the client connects to
    /// public addresses only, whatever the name resolves to or redirects to.
    fn guarded(url: &str, allow_loopback: bool) -> Result<Self, NotifyError> {
        // The address holds the webhook's secret: the refusal never repeats it.
        let checked = crate::fetch::check_public_url(url, allow_loopback).map_err(|refusal| {
            NotifyError(match refusal {
                crate::fetch::Refusal::Address { address, .. } => format!(
                    "the webhook address is refused: it leads to the non-public address {address}"
                ),
                _ => "the webhook address is refused: it must be an http(s) address".to_owned(),
            })
        })?;
        let http = crate::fetch::guarded_client(Duration::from_secs(15), allow_loopback)
            .map_err(|e| NotifyError(e.to_string()))?;
        Ok(Webhook {
            http,
            url: checked.to_string(),
        })
    }

    fn new(url: String) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(15))
            .build()
            .unwrap_or_default();
        Webhook { http, url }
    }

    async fn post(&self, body: &Value) -> Result<(), NotifyError> {
        let response = self
            .http
            .post(&self.url)
            .json(body)
            .send()
            .await
            // The address holds the webhook's secret: never repeat it.
            .map_err(|e| {
                NotifyError(format!(
                    "the webhook could not be reached: {}",
                    e.without_url()
                ))
            })?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            let text = response.text().await.unwrap_or_default();
            Err(NotifyError(format!(
                "the webhook answered {status}: {}",
                text.chars().take(200).collect::<String>()
            )))
        }
    }
}

/// A Slack incoming webhook, with a Block Kit message.
pub struct SlackNotifier {
    hook: Webhook,
}

impl SlackNotifier {
    /// Posting to `webhook_url` (`SLACK_WEBHOOK_URL`, the deployment's own).
    pub fn new(webhook_url: impl Into<String>) -> Self {
        SlackNotifier {
            hook: Webhook::new(webhook_url.into()),
        }
    }

    /// Posting to a webhook a user handed in, behind the private-address guard: refused
    /// unless http(s) to a public host (loopback too when `allow_loopback`), and never
    /// connecting to a non-public address it resolves or redirects to.
    ///
    /// ```
    /// use job_capabilities::notify::SlackNotifier;
    /// assert!(SlackNotifier::for_user("https://hooks.slack.com/services/T0/B0/x", false).is_ok());
    /// assert!(SlackNotifier::for_user("http://10.0.0.7/hook", false).is_err());
    /// ```
    pub fn for_user(webhook_url: &str, allow_loopback: bool) -> Result<Self, NotifyError> {
        Ok(SlackNotifier {
            hook: Webhook::guarded(webhook_url, allow_loopback)?,
        })
    }

    /// The Block Kit message for `notice`.
    pub fn payload(notice: &Notice) -> Value {
        let mut blocks = vec![json!({
            "type": "header",
            "text": {"type": "plain_text", "text": notice.title, "emoji": true},
        })];
        for m in &notice.matches {
            blocks.push(json!({
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": format!(
                        "*<{}|{}>* at {}\n{} · score {:.0}%\n_{}_",
                        m.url, m.title, m.company, m.location, m.score * 100.0, m.justification
                    ),
                },
            }));
            blocks.push(json!({"type": "divider"}));
        }
        json!({"text": notice.text(), "blocks": blocks})
    }
}

#[async_trait]
impl Notifier for SlackNotifier {
    fn channel(&self) -> &'static str {
        "slack"
    }

    async fn send(&self, notice: &Notice) -> Result<String, NotifyError> {
        self.hook.post(&SlackNotifier::payload(notice)).await?;
        Ok(format!("{} jobs posted to Slack", notice.matches.len()))
    }
}

/// A Microsoft Teams incoming webhook, with an Adaptive Card.
pub struct TeamsNotifier {
    hook: Webhook,
}

impl TeamsNotifier {
    /// Posting to `webhook_url` (`TEAMS_WEBHOOK_URL`, the deployment's own).
    pub fn new(webhook_url: impl Into<String>) -> Self {
        TeamsNotifier {
            hook: Webhook::new(webhook_url.into()),
        }
    }

    /// Posting to a webhook a user handed in, behind the private-address guard (see
    /// [`SlackNotifier::for_user`]).
    pub fn for_user(webhook_url: &str, allow_loopback: bool) -> Result<Self, NotifyError> {
        Ok(TeamsNotifier {
            hook: Webhook::guarded(webhook_url, allow_loopback)?,
        })
    }

    /// The message carrying the Adaptive Card for `notice`.
    pub fn payload(notice: &Notice) -> Value {
        let mut body = vec![json!({
            "type": "TextBlock", "text": notice.title, "weight": "Bolder", "size": "Medium", "wrap": true,
        })];
        for m in &notice.matches {
            body.push(json!({
                "type": "TextBlock", "text": format!("[{}]({}) at {}", m.title, m.url, m.company),
                "wrap": true, "separator": true,
            }));
            body.push(json!({
                "type": "FactSet",
                "facts": [
                    {"title": "Where", "value": m.location},
                    {"title": "Score", "value": format!("{:.0}%", m.score * 100.0)},
                    {"title": "Why", "value": m.justification},
                ],
            }));
        }
        json!({
            "type": "message",
            "attachments": [{
                "contentType": "application/vnd.microsoft.card.adaptive",
                "contentUrl": null,
                "content": {
                    "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                    "type": "AdaptiveCard",
                    "version": "1.4",
                    "body": body,
                },
            }],
        })
    }
}

#[async_trait]
impl Notifier for TeamsNotifier {
    fn channel(&self) -> &'static str {
        "teams"
    }

    async fn send(&self, notice: &Notice) -> Result<String, NotifyError> {
        self.hook.post(&TeamsNotifier::payload(notice)).await?;
        Ok(format!("{} jobs posted to Teams", notice.matches.len()))
    }
}
