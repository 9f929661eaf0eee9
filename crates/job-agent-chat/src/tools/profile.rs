//! The profile tools: set it from what the user says (a pasted resume included), read it
//! from a resume file in the terminal chat's folder, set where matches go, show it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_runtime::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{ChatTool, Ctx, Services, profile_of, store_failed};
use crate::models::UserProfile;
use crate::resume::take_resume;

/// What the user said about themselves; fields left out keep their stored values.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ProfileInput {
    /// Their name.
    #[serde(default)]
    pub name: Option<String>,
    /// Their email address.
    #[serde(default)]
    pub email: Option<String>,
    /// A summary of their experience, in their words.
    #[serde(default)]
    pub summary: Option<String>,
    /// Their skills.
    #[serde(default)]
    pub skills: Option<Vec<String>>,
    /// The job titles they want.
    #[serde(default)]
    pub titles: Option<Vec<String>>,
    /// Where they want to work.
    #[serde(default)]
    pub preferred_locations: Option<Vec<String>>,
    /// Whether remote jobs suit them.
    #[serde(default)]
    pub remote_ok: Option<bool>,
    /// Their least acceptable yearly pay.
    #[serde(default)]
    pub min_salary: Option<u64>,
    /// The pay's currency (ISO 4217, e.g. USD, EUR).
    #[serde(default)]
    pub salary_currency: Option<String>,
    /// Years of experience.
    #[serde(default)]
    pub years_experience: Option<u32>,
    /// The full text of a resume the user pasted into the conversation, as pasted: it is
    /// read into the profile (name, email, skills, title, years) and kept as evidence.
    #[serde(default)]
    pub resume_text: Option<String>,
}

impl ProfileInput {
    fn apply(self, profile: &mut UserProfile) {
        let text = |v: Option<String>| v.map(|s| s.trim().to_owned());
        if let Some(name) = text(self.name) {
            profile.name = name;
        }
        if let Some(email) = text(self.email) {
            profile.email = email;
        }
        if let Some(summary) = text(self.summary) {
            profile.summary = summary;
        }
        if let Some(skills) = self.skills {
            profile.skills = skills;
        }
        if let Some(titles) = self.titles {
            profile.titles = titles;
        }
        if let Some(places) = self.preferred_locations {
            profile.preferred_locations = places;
        }
        if let Some(remote) = self.remote_ok {
            profile.remote_ok = remote;
        }
        if self.min_salary.is_some() {
            profile.min_salary = self.min_salary;
        }
        if let Some(currency) = text(self.salary_currency) {
            profile.salary_currency = Some(currency.to_uppercase());
        }
        if self.years_experience.is_some() {
            profile.years_experience = self.years_experience;
        }
        // What the user said above stays; the resume fills in the rest.
        if let Some(resume) = self.resume_text.filter(|t| !t.trim().is_empty()) {
            take_resume(profile, resume.trim(), "pasted text");
        }
    }
}

fn shown(profile: &UserProfile) -> serde_json::Value {
    json!({
        "name": profile.name, "email": profile.email, "summary": profile.summary,
        "skills": profile.skills, "titles": profile.titles,
        "preferred_locations": profile.preferred_locations, "remote_ok": profile.remote_ok,
        "min_salary": profile.min_salary, "salary_currency": profile.salary_currency,
        "years_experience": profile.years_experience,
        "resume": if profile.resume_text.is_empty() { "none".to_owned() } else { format!("from {}", profile.resume_source) },
        // Webhooks hold secrets: only whether they are set.
        "slack": if profile.slack_webhook.is_empty() { "not set" } else { "set" },
        "teams": if profile.teams_webhook.is_empty() { "not set" } else { "set" },
    })
}

/// Saves the user's profile, answering what was saved.
async fn saved(
    services: &Services,
    user: &str,
    profile: &UserProfile,
) -> Result<serde_json::Value, ToolError> {
    services
        .store
        .save_profile(user, profile)
        .await
        .map_err(store_failed)?;
    Ok(json!({"saved": shown(profile)}))
}

pub(super) fn set_user_profile(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "set_user_profile",
        "Set the user's profile from what they said: skills, titles sought, places, remote, pay floor, experience, or a resume they pasted (resume_text). Fields left out are kept.",
        move |input: ProfileInput, ctx: Ctx| {
            let services = services.clone();
            async move {
                let user = ctx.user_id().to_owned();
                let mut profile = profile_of(&services, &user).await?;
                input.apply(&mut profile);
                saved(&services, &user, &profile).await
            }
        },
    ))
}

/// A resume file to read.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UploadInput {
    /// The file's path (PDF, DOCX or TXT).
    pub path: String,
}

/// The file `path` names, inside `root`.
fn resolve(path: &str, root: &Path) -> Result<PathBuf, ToolError> {
    let path = Path::new(path.trim());
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    let real = joined
        .canonicalize()
        .map_err(|e| ToolError::failed(format!("cannot open {}: {e}", joined.display())))?;
    let root = root
        .canonicalize()
        .map_err(|e| ToolError::failed(format!("the upload folder is unusable: {e}")))?;
    if real.starts_with(&root) {
        Ok(real)
    } else {
        Err(ToolError::failed(format!(
            "resumes are read from the upload folder only ({})",
            root.display()
        )))
    }
}

/// The terminal chat's tool reading a resume file from `root` (a chat served to others
/// takes resumes as attached files or pasted text, never a path on the server).
pub(super) fn upload_resume(services: Arc<Services>, root: PathBuf) -> ChatTool {
    Arc::new(tool(
        "upload_resume",
        "Read the user's resume file (PDF, DOCX or TXT, in the chat's resume folder) into their profile: name, email, skills, title, years, and the text as evidence.",
        move |input: UploadInput, ctx: Ctx| {
            let services = services.clone();
            let root = root.clone();
            async move {
                let path = resolve(&input.path, &root)?;
                let text = tokio::task::spawn_blocking(move || {
                    job_capabilities::documents::read_resume_text(&path)
                })
                .await
                .map_err(|e| ToolError::failed(format!("reading the resume stopped: {e}")))?
                .map_err(|e| ToolError::failed(e.to_string()))?;
                let user = ctx.user_id().to_owned();
                let mut profile = profile_of(&services, &user).await?;
                let name = Path::new(&input.path)
                    .file_name()
                    .map_or_else(|| input.path.clone(), |n| n.to_string_lossy().into_owned());
                take_resume(&mut profile, &text, &name);
                services
                    .store
                    .save_profile(&user, &profile)
                    .await
                    .map_err(store_failed)?;
                ctx.emit(format!(
                    "read a resume of {} characters",
                    text.chars().count()
                ));
                Ok::<_, ToolError>(
                    json!({"profile": shown(&profile), "characters": text.chars().count()}),
                )
            }
        },
    ))
}

/// Where the user's matches go; fields left out are kept, an empty string removes one.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChannelsInput {
    /// Their email address.
    #[serde(default)]
    pub email: Option<String>,
    /// Their Slack incoming-webhook URL (`https://hooks.slack.com/services/...`).
    #[serde(default)]
    pub slack_webhook_url: Option<String>,
    /// Their Microsoft Teams incoming-webhook URL.
    #[serde(default)]
    pub teams_webhook_url: Option<String>,
}

pub(super) fn set_notification_channels(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "set_notification_channels",
        "Set where the user's job matches go: their email address, their Slack or Teams incoming-webhook URL. An empty value removes one.",
        move |input: ChannelsInput, ctx: Ctx| {
            let services = services.clone();
            async move {
                let user = ctx.user_id().to_owned();
                let mut profile = profile_of(&services, &user).await?;
                if let Some(email) = input.email.map(|e| e.trim().to_owned()) {
                    if !email.is_empty() && !email.contains('@') {
                        return Err(ToolError::failed(format!(
                            "{email:?} is not an email address"
                        )));
                    }
                    profile.email = email;
                }
                for (url, slot) in [
                    (input.slack_webhook_url, &mut profile.slack_webhook),
                    (input.teams_webhook_url, &mut profile.teams_webhook),
                ] {
                    let Some(url) = url.map(|u| u.trim().to_owned()) else {
                        continue;
                    };
                    if !url.is_empty() {
                        services
                            .notifications
                            .check_webhook(&url)
                            .map_err(|e| ToolError::failed(e.to_string()))?;
                    }
                    *slot = url;
                }
                saved(&services, &user, &profile).await
            }
        },
    ))
}

/// No input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Nothing {}

pub(super) fn show_profile(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "show_profile",
        "Show the user's profile as stored.",
        move |_: Nothing, ctx: Ctx| {
            let services = services.clone();
            async move {
                match services
                    .store
                    .profile(ctx.user_id())
                    .await
                    .map_err(store_failed)?
                {
                    Some(profile) => Ok::<_, ToolError>(json!({"profile": shown(&profile)})),
                    None => Ok(json!({"profile": null, "note": "no profile yet"})),
                }
            }
        },
    ))
}
