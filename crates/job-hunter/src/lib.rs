//! The job-hunting pipeline of spec 000, on the agent runtime.
//!
//! Eight steps run as a sequential [`StateGraph`](agent_runtime::graph::StateGraph)
//! with a checkpoint after each: `parse_resume → parse_prefs → find_companies →
//! scrape_jobs → process_jobs → score_jobs → aggregate → notify`. Model steps use typed
//! structured output, fast or quality models, retries and a cost meter with a warning
//! threshold and a hard limit; independent work (companies, jobs, scoring batches) runs
//! concurrently under one bound. External services come in a [`Deps`] struct, live or
//! recorded ([`Deps::dry_run`]). Model answers are checked against the text they come
//! from: preferences values the text never states are dropped, and score
//! evidence must quote the job.
//!
//! Before any model reads a posting, the candidate's exclusions and the search's
//! titles and places cut what was not asked for, and the
//! limits keep the most relevant jobs; every job fetched is counted as kept or cut, per
//! company, in the summary, the email and the companies table.
//!
//! A run ends `success`, `partial` (the cost limit stopped it, or no job was scored;
//! what was gathered is kept and written) or `failed` (a fatal step error or a step timeout), and can be
//! resumed by its run id after a crash: completed steps are not run again and the
//! summary email is journaled, so it is never sent twice.

pub mod deps;
pub mod dry_run;
pub mod llm;
pub mod models;
pub mod steps;

mod events;
mod exclusions;
mod grounding;
mod pipeline;
mod relevance;
mod settings;
mod state;

pub use deps::Deps;
pub use events::HuntEvent;
pub use pipeline::{CriticalPath, HuntError, HuntResult, JobHunter};
pub use settings::{Settings, SettingsError};
pub use state::{HuntState, RunConfig};
