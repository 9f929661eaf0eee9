//! The chat's notifications: job-capabilities' channels ([`job_capabilities::notify`]:
//! console, email, Slack, Teams), every one but the console journaled in the user's
//! store: a notice is claimed before it is sent, so a retried or concurrent turn never
//! sends it twice, and released when the send fails, so a retry may.

use std::sync::Arc;

use serde::Serialize;
use sha2::{Digest, Sha256};

pub use job_capabilities::notify::{
    ConsoleNotifier, EmailNotifier, JobMatch, Notice, Notifier, NotifyError, SlackNotifier,
    TeamsNotifier,
};

use crate::models::Job;
use crate::store::{ChatStore, Claim};

/// A job as a notice shows it.
pub fn job_match(job: &Job, score: f32, justification: String) -> JobMatch {
    JobMatch {
        id: job.id.clone(),
        title: job.title.clone(),
        company: job.company.clone(),
        location: job.location.clone(),
        salary: job.salary_text.clone(),
        url: job.url.clone(),
        score,
        justification,
    }
}

/// The journal key of `notice` on `channel`: the same jobs under the same title are the
/// same notice.
fn journal_key(notice: &Notice, channel: &str) -> String {
    let mut ids: Vec<&str> = notice.matches.iter().map(|m| m.id.as_str()).collect();
    ids.sort_unstable();
    let digest = Sha256::digest(format!("{channel}\n{}\n{}", notice.title, ids.join(",")));
    digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
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
            let key = journal_key(notice, &name);
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
