//! The profile tools: set it from what the user says, read it from a resume file, show it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_runtime::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{ChatTool, Ctx, Services, store_failed};
use crate::models::UserProfile;
use crate::resume::profile_from_resume;

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
    }
}

fn shown(profile: &UserProfile) -> serde_json::Value {
    json!({
        "name": profile.name, "email": profile.email, "summary": profile.summary,
        "skills": profile.skills, "titles": profile.titles,
        "preferred_locations": profile.preferred_locations, "remote_ok": profile.remote_ok,
        "min_salary": profile.min_salary, "salary_currency": profile.salary_currency,
        "years_experience": profile.years_experience,
        "resume": if profile.resume_text.is_empty() { "none" } else { "uploaded" },
    })
}

pub(super) fn set_user_profile(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "set_user_profile",
        "Set the user's profile from what they said: skills, titles sought, places, remote, pay floor, experience. Fields left out are kept.",
        move |input: ProfileInput, ctx: Ctx| {
            let services = services.clone();
            async move {
                let user = ctx.user_id().to_owned();
                let mut profile = services
                    .store
                    .profile(&user)
                    .await
                    .map_err(store_failed)?
                    .unwrap_or_default();
                input.apply(&mut profile);
                services
                    .store
                    .save_profile(&user, &profile)
                    .await
                    .map_err(store_failed)?;
                Ok::<_, ToolError>(json!({"saved": shown(&profile)}))
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

/// The file `path` names, inside `root` when uploads are confined to it.
fn resolve(path: &str, root: Option<&Path>) -> Result<PathBuf, ToolError> {
    let path = Path::new(path.trim());
    let Some(root) = root else {
        return Ok(path.to_path_buf());
    };
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

pub(super) fn upload_resume(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "upload_resume",
        "Read the user's resume file (PDF, DOCX or TXT) into their profile: name, email, skills, title, years, and the text as evidence.",
        move |input: UploadInput, ctx: Ctx| {
            let services = services.clone();
            async move {
                let path = resolve(&input.path, services.upload_root.as_deref())?;
                let text = tokio::task::spawn_blocking(move || {
                    job_capabilities::documents::read_resume_text(&path)
                })
                .await
                .map_err(|e| ToolError::failed(format!("reading the resume stopped: {e}")))?
                .map_err(|e| ToolError::failed(e.to_string()))?;
                let read = profile_from_resume(&text);
                let user = ctx.user_id().to_owned();
                let mut profile = services
                    .store
                    .profile(&user)
                    .await
                    .map_err(store_failed)?
                    .unwrap_or_default();
                // What the resume says fills in; what the user said stays.
                let keep = |mine: &mut String, read: String| {
                    if mine.is_empty() {
                        *mine = read;
                    }
                };
                keep(&mut profile.name, read.name);
                keep(&mut profile.email, read.email);
                if profile.skills.is_empty() {
                    profile.skills = read.skills;
                }
                if profile.titles.is_empty() {
                    profile.titles = read.titles;
                }
                profile.years_experience = profile.years_experience.or(read.years_experience);
                profile.resume_text = read.resume_text;
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
