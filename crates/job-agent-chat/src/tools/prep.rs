//! The application-prep agent's tools: prepare an application, analyze job fit, list
//! the packages made.

use std::sync::Arc;

use agent_runtime::{ToolError, tool};
use serde_json::json;

use super::jobs::JobRef;
use super::profile::Nothing;
use super::{ChatTool, Ctx, Services, find_job, store_failed};
use crate::prep::{analyze_fit, prepare_application as write_package};

pub(super) fn prepare_application(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "prepare_application",
        "Prepare an application for a job: resume suggestions (before/after, each tied to a requirement), a cover letter and an intro email, all kept to what the user's profile says. The package is saved.",
        move |input: JobRef, ctx: Ctx| {
            let services = services.clone();
            async move {
                let user = ctx.user_id().to_owned();
                let job = find_job(&services, &user, &input.job_id).await?;
                let profile = services
                    .store
                    .profile(&user)
                    .await
                    .map_err(store_failed)?
                    .unwrap_or_default();
                ctx.emit(format!("writing an application for {}", job.headline()));
                let package = write_package(&ctx, &job, &profile)
                    .await
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                services
                    .store
                    .save_package(&user, &package)
                    .await
                    .map_err(store_failed)?;
                Ok::<_, ToolError>(json!({
                    "package_id": package.id,
                    "job": package.job_headline,
                    "resume_suggestions": package.resume_suggestions,
                    "cover_letter": package.cover_letter,
                    "intro_email": package.intro_email,
                    "removed_unsupported_claims": package.removed,
                }))
            }
        },
    ))
}

pub(super) fn analyze_job_fit(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "analyze_job_fit",
        "Compare a job's requirements with the user's profile: which are met (with the profile's evidence) and which are missing.",
        move |input: JobRef, ctx: Ctx| {
            let services = services.clone();
            async move {
                let user = ctx.user_id().to_owned();
                let job = find_job(&services, &user, &input.job_id).await?;
                let profile = services.store.profile(&user).await.map_err(store_failed)?;
                let Some(profile) = profile.filter(|p| !p.is_empty()) else {
                    return Err(ToolError::failed(
                        "the user has no profile yet: set one or upload a resume first",
                    ));
                };
                if job.requirements.is_empty() {
                    return Err(ToolError::failed(format!(
                        "{} lists no requirements to compare with",
                        job.headline()
                    )));
                }
                let fit = analyze_fit(&job, &profile);
                Ok::<_, ToolError>(json!({"job": job.headline(), "fit": fit}))
            }
        },
    ))
}

pub(super) fn list_application_packages(services: Arc<Services>) -> ChatTool {
    Arc::new(tool(
        "list_application_packages",
        "List the application packages prepared for the user, newest first.",
        move |_: Nothing, ctx: Ctx| {
            let services = services.clone();
            async move {
                let packages = services
                    .store
                    .packages(ctx.user_id())
                    .await
                    .map_err(store_failed)?;
                Ok::<_, ToolError>(json!({
                    "count": packages.len(),
                    "packages": packages.iter().map(|p| json!({
                        "package_id": p.id, "job_id": p.job_id, "job": p.job_headline,
                        "created_at": p.created_at.to_rfc3339(),
                        "suggestions": p.resume_suggestions.len(),
                    })).collect::<Vec<_>>(),
                }))
            }
        },
    ))
}
