//! The agents' tools: typed inputs (the schema is the Rust type), each doing its work
//! against the user's store. A tool reads the user from its context: there is no shared
//! "current profile".

mod jobs;
mod prep;
mod profile;

use std::path::PathBuf;
use std::sync::Arc;

use agent_runtime::{AgentContext, AgentTool, ToolError};

use crate::models::Job;
use crate::notify::Notifications;
use crate::providers::JobProvider;
use crate::ranking::Ranking;
use crate::store::ChatStore;

/// A tool's context: the session's user, no shared state, notes as events.
pub type Ctx = AgentContext<(), String>;

/// A tool of the chat's agents.
pub type ChatTool = Arc<dyn AgentTool<(), String>>;

/// What the tools work with, shared by every conversation (every call names its user).
#[derive(Clone)]
pub struct Services {
    /// The users' records.
    pub store: ChatStore,
    /// Where searches go.
    pub provider: Arc<dyn JobProvider>,
    /// Ranking on the users' indexes.
    pub ranking: Ranking,
    /// Notification channels.
    pub notifications: Notifications,
    /// The terminal chat's resume folder: `upload_resume` reads files there only. `None`
    /// (a chat served to others) offers no path tool: resumes come as attached files or
    /// pasted text.
    pub upload_root: Option<PathBuf>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("provider", &self.provider.name())
            .field("notifications", &self.notifications)
            .field("upload_root", &self.upload_root)
            .finish_non_exhaustive()
    }
}

/// The job-search agent's tools (thirteen, and `upload_resume` with a resume folder).
pub fn job_search_tools(services: &Arc<Services>) -> Vec<ChatTool> {
    let mut tools = vec![
        jobs::search_jobs(services.clone()),
        jobs::list_jobs(services.clone()),
        jobs::get_job_details(services.clone()),
        jobs::save_job(services.clone()),
        jobs::update_job_status(services.clone()),
        jobs::archive_job(services.clone()),
        jobs::delete_job(services.clone()),
        jobs::rank_saved_jobs(services.clone()),
        jobs::provide_feedback(services.clone()),
        jobs::notify_matches(services.clone()),
        profile::set_user_profile(services.clone()),
        profile::set_notification_channels(services.clone()),
        profile::show_profile(services.clone()),
    ];
    if let Some(root) = &services.upload_root {
        tools.push(profile::upload_resume(services.clone(), root.clone()));
    }
    tools
}

/// The application-prep agent's tools: its three, and listing jobs to find the one meant.
pub fn app_prep_tools(services: &Arc<Services>) -> Vec<ChatTool> {
    vec![
        prep::prepare_application(services.clone()),
        prep::analyze_job_fit(services.clone()),
        prep::list_application_packages(services.clone()),
        jobs::list_jobs(services.clone()),
    ]
}

/// The user's profile as stored, or an empty one.
pub(crate) async fn profile_of(
    services: &Services,
    user: &str,
) -> Result<crate::models::UserProfile, ToolError> {
    Ok(services
        .store
        .profile(user)
        .await
        .map_err(store_failed)?
        .unwrap_or_default())
}

/// A store failure as a tool error.
pub(crate) fn store_failed(error: agent_runtime::sessions::StoreError) -> ToolError {
    ToolError::failed(format!("the store failed: {error}"))
}

/// The user's job `reference` names: its id, else the one job whose title and company
/// contain it (a model often names a job instead of quoting its id).
pub(crate) async fn find_job(
    services: &Services,
    user: &str,
    reference: &str,
) -> Result<Job, ToolError> {
    let reference = reference.trim();
    if let Some(job) = services
        .store
        .job(user, reference)
        .await
        .map_err(store_failed)?
    {
        return Ok(job);
    }
    let wanted = reference.to_lowercase();
    let jobs = services.store.jobs(user).await.map_err(store_failed)?;
    let named: Vec<&Job> = jobs
        .iter()
        .filter(|j| {
            !wanted.is_empty()
                && format!("{} {}", j.title, j.company)
                    .to_lowercase()
                    .contains(&wanted)
        })
        .collect();
    match named.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(ToolError::failed(format!(
            "no job {reference:?}: list_jobs shows the ids of the user's jobs"
        ))),
        many => Err(ToolError::failed(format!(
            "{reference:?} names {} jobs ({}): give the id",
            many.len(),
            many.iter()
                .map(|j| format!("{} = {}", j.id, j.headline()))
                .collect::<Vec<_>>()
                .join("; ")
        ))),
    }
}
