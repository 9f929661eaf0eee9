//! Telling the user about matching jobs, on every channel configured, behind one trait:
//! the console (a tracing event), email (SMTP through job-capabilities' mailer), a Slack
//! incoming webhook (Block Kit) and a Microsoft Teams incoming webhook (an Adaptive Card).
//! Every channel but the console is journaled in the user's store: a notice is claimed
//! before it is sent, so a retried or concurrent turn never sends it twice, and released
//! when the send fails, so a retry may.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use job_capabilities::mail::{Email, Mailer};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::models::Job;
use crate::store::{ChatStore, Claim};

/// One matching job in a notice.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// The job.
    pub job: Job,
    /// Its score, 0 to 1.
    pub score: f32,
    /// Why it matches.
    pub justification: String,
}

/// What to tell.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// The heading ("3 new matches for Rust engineer").
    pub title: String,
    /// The jobs.
    pub matches: Vec<Match>,
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
                m.job.headline(),
                m.score * 100.0,
                m.justification,
                m.job.url
            ));
        }
        text
    }

    /// The journal key of this notice on `channel`: the same jobs under the same title
    /// are the same notice.
    fn key(&self, channel: &str) -> String {
        let mut ids: Vec<&str> = self.matches.iter().map(|m| m.job.id.as_str()).collect();
        ids.sort_unstable();
        let digest = Sha256::digest(format!("{channel}\n{}\n{}", self.title, ids.join(",")));
        digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
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

/// What happened on one channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Delivery {
    /// Sent.
    Delivered {
        /// The channel.
        channel: String,
        /// What was done.
        detail: String,
    },
    /// Sent before (by an earlier or concurrent turn): not sent again.
    AlreadySent {
        /// The channel.
        channel: String,
        /// When it was claimed.
        at: String,
    },
    /// Not attempted.
    Skipped {
        /// The channel.
        channel: String,
        /// Why.
        reason: String,
    },
    /// It failed.
    Failed {
        /// The channel.
        channel: String,
        /// Why.
        error: String,
    },
}

/// The console: a `job_agent_chat::console` tracing event at INFO.
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
        tracing::info!(target: "job_agent_chat::console", "{}", notice.text());
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
    /// Posting to `webhook_url` (`SLACK_WEBHOOK_URL`).
    pub fn new(webhook_url: impl Into<String>) -> Self {
        SlackNotifier {
            hook: Webhook::new(webhook_url.into()),
        }
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
                        m.job.url, m.job.title, m.job.company, m.job.location, m.score * 100.0, m.justification
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
    /// Posting to `webhook_url` (`TEAMS_WEBHOOK_URL`).
    pub fn new(webhook_url: impl Into<String>) -> Self {
        TeamsNotifier {
            hook: Webhook::new(webhook_url.into()),
        }
    }

    /// The message carrying the Adaptive Card for `notice`.
    pub fn payload(notice: &Notice) -> Value {
        let mut body = vec![json!({
            "type": "TextBlock", "text": notice.title, "weight": "Bolder", "size": "Medium", "wrap": true,
        })];
        for m in &notice.matches {
            body.push(json!({
                "type": "TextBlock", "text": format!("[{}]({}) at {}", m.job.title, m.job.url, m.job.company),
                "wrap": true, "separator": true,
            }));
            body.push(json!({
                "type": "FactSet",
                "facts": [
                    {"title": "Where", "value": m.job.location},
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

/// Every configured channel.
#[derive(Clone, Default)]
pub struct Notifications {
    channels: Vec<Arc<dyn Notifier>>,
}

impl std::fmt::Debug for Notifications {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.channels.iter().map(|c| c.channel()).collect();
        f.debug_struct("Notifications")
            .field("channels", &names)
            .finish()
    }
}

impl Notifications {
    /// No channel yet.
    pub fn new() -> Self {
        Notifications::default()
    }

    /// Adds a channel.
    pub fn with(mut self, channel: Arc<dyn Notifier>) -> Self {
        self.channels.push(channel);
        self
    }

    /// The console, plus email when `SMTP_URL` is set (from `NOTIFY_FROM`, default
    /// `job-agent@localhost`), Slack with `SLACK_WEBHOOK_URL` and Teams with
    /// `TEAMS_WEBHOOK_URL`. A bad `SMTP_URL` is logged and email left out.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let mut channels = Notifications::new().with(Arc::new(ConsoleNotifier));
        if let Some(url) = var("SMTP_URL") {
            match job_capabilities::mail::SmtpMailer::from_url(&url) {
                Ok(mailer) => {
                    let from = var("NOTIFY_FROM").unwrap_or_else(|| "job-agent@localhost".into());
                    channels = channels.with(Arc::new(EmailNotifier::new(Arc::new(mailer), from)));
                }
                Err(error) => tracing::warn!(%error, "SMTP_URL is not usable: no email"),
            }
        }
        if let Some(url) = var("SLACK_WEBHOOK_URL") {
            channels = channels.with(Arc::new(SlackNotifier::new(url)));
        }
        if let Some(url) = var("TEAMS_WEBHOOK_URL") {
            channels = channels.with(Arc::new(TeamsNotifier::new(url)));
        }
        channels
    }

    /// Sends `notice` for `user` on every channel; what happened on each.
    pub async fn deliver(&self, store: &ChatStore, user: &str, notice: &Notice) -> Vec<Delivery> {
        let mut report = Vec::with_capacity(self.channels.len());
        for channel in &self.channels {
            let name = channel.channel().to_owned();
            if name == "email" && notice.email_to.is_none() {
                report.push(Delivery::Skipped {
                    channel: name,
                    reason: "the profile has no email address".into(),
                });
                continue;
            }
            let key = notice.key(&name);
            if channel.journaled() {
                match store.claim(user, &key).await {
                    Ok(Claim::Ours(_)) => {}
                    Ok(Claim::Taken(at)) => {
                        report.push(Delivery::AlreadySent { channel: name, at });
                        continue;
                    }
                    Err(error) => {
                        report.push(Delivery::Failed {
                            channel: name,
                            error: format!(
                                "the journal could not be read, so nothing was sent: {error}"
                            ),
                        });
                        continue;
                    }
                }
            }
            let sent = channel.send(notice).await;
            if channel.journaled()
                && let Err(error) = store.settle(user, &key, sent.is_ok()).await
            {
                tracing::warn!(%error, channel = %name, "the notification journal could not be updated");
            }
            report.push(match sent {
                Ok(detail) => Delivery::Delivered {
                    channel: name,
                    detail,
                },
                Err(error) => Delivery::Failed {
                    channel: name,
                    error: error.to_string(),
                },
            });
        }
        report
    }
}
