//! The chat's notifications: job-capabilities' channels ([`job_capabilities::notify`]:
//! console, email, Slack, Teams), every one but the console journaled in the user's
//! store: a notice is claimed before it is sent, so a retried or concurrent turn never
//! sends it twice, and released when the send fails, so a retry may.
//!
//! Destinations belong to the user: email goes to the address of their profile, Slack
//! and Teams to the webhooks they set ([`UserWebhooks`], checked against the
//! private-address guard). The deployment's `SLACK_WEBHOOK_URL` and `TEAMS_WEBHOOK_URL`
//! are defaults for a single-user deployment only ([`Notifications::from_env`]): a
//! multi-user server never sends one user's matches to a channel someone else set up.

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
    hex::encode(&digest[..12])
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

/// The Slack and Teams incoming webhooks a user set for themselves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserWebhooks {
    /// Their Slack webhook.
    pub slack: Option<String>,
    /// Their Teams webhook.
    pub teams: Option<String>,
}

impl UserWebhooks {
    /// The webhooks of `profile` (empty ones are none).
    pub fn of(profile: &crate::models::UserProfile) -> Self {
        let set = |url: &str| (!url.trim().is_empty()).then(|| url.trim().to_owned());
        UserWebhooks {
            slack: set(&profile.slack_webhook),
            teams: set(&profile.teams_webhook),
        }
    }
}

/// A user's own channel that could not be set up: its name, and why.
type Refused = (&'static str, NotifyError);

/// Every configured channel.
#[derive(Clone, Default)]
pub struct Notifications {
    channels: Vec<Arc<dyn Notifier>>,
    loopback_webhooks: bool,
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

    /// Adds a channel of the deployment, used for every user.
    pub fn with(mut self, channel: Arc<dyn Notifier>) -> Self {
        self.channels.push(channel);
        self
    }

    /// Lets users' webhooks be on loopback (a local receiver, for tests and local
    /// demos); other non-public addresses stay refused.
    pub fn with_loopback_webhooks(mut self) -> Self {
        self.loopback_webhooks = true;
        self
    }

    /// Checks a webhook address a user hands in: `Err` says why it is refused (not
    /// http(s), or a non-public address), never repeating the address.
    pub fn check_webhook(&self, url: &str) -> Result<(), NotifyError> {
        SlackNotifier::for_user(url, self.loopback_webhooks).map(|_| ())
    }

    /// The console, plus email when `SMTP_URL` is set (from `NOTIFY_FROM`, default
    /// `job-agent@localhost`) to each user's own address. In a `single_user` deployment,
    /// Slack with `SLACK_WEBHOOK_URL` and Teams with `TEAMS_WEBHOOK_URL` as the one
    /// user's defaults; otherwise those variables are left unused, with a warning, and
    /// each user sets their own webhooks. A bad `SMTP_URL` is logged and email left out.
    pub fn from_env(single_user: bool) -> Self {
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
        for (variable, name) in [
            ("SLACK_WEBHOOK_URL", "slack"),
            ("TEAMS_WEBHOOK_URL", "teams"),
        ] {
            let Some(url) = var(variable) else { continue };
            if !single_user {
                tracing::warn!(
                    variable,
                    "a multi-user server sends nobody's matches to the deployment's own webhook: users set theirs (set_notification_channels)"
                );
                continue;
            }
            let channel: Arc<dyn Notifier> = match name {
                "slack" => Arc::new(SlackNotifier::new(url)),
                _ => Arc::new(TeamsNotifier::new(url)),
            };
            channels = channels.with(channel);
        }
        channels
    }

    /// Sends `notice` for `user` on every channel of the deployment and on `own`
    /// webhooks (which replace a single-user default of the same kind); what happened on
    /// each.
    pub async fn deliver(
        &self,
        store: &ChatStore,
        user: &str,
        notice: &Notice,
        own: &UserWebhooks,
    ) -> Vec<Delivery> {
        let mut channels: Vec<Result<Arc<dyn Notifier>, Refused>> = self
            .channels
            .iter()
            .filter(|c| {
                !(c.channel() == "slack" && own.slack.is_some()
                    || c.channel() == "teams" && own.teams.is_some())
            })
            .cloned()
            .map(Ok)
            .collect();
        if let Some(url) = &own.slack {
            channels.push(
                SlackNotifier::for_user(url, self.loopback_webhooks)
                    .map(|c| Arc::new(c) as Arc<dyn Notifier>)
                    .map_err(|e| ("slack", e)),
            );
        }
        if let Some(url) = &own.teams {
            channels.push(
                TeamsNotifier::for_user(url, self.loopback_webhooks)
                    .map(|c| Arc::new(c) as Arc<dyn Notifier>)
                    .map_err(|e| ("teams", e)),
            );
        }
        let mut report = Vec::with_capacity(channels.len());
        for channel in channels {
            let channel = match channel {
                Ok(channel) => channel,
                Err((name, error)) => {
                    report.push(Delivery::Failed {
                        channel: name.to_owned(),
                        error: error.to_string(),
                    });
                    continue;
                }
            };
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
