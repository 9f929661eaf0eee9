//! One step's surroundings for the step tests.

use std::path::PathBuf;
use std::sync::Arc;

use agent_llm::ChatModel;
use agent_llm::testing::ScriptedModel;
use agent_runtime::CollectingSink;
use agent_runtime::graph::RunContext;
use job_hunter::llm::PipelineLlm;
use job_hunter::steps::StepEnv;
use job_hunter::{Deps, HuntEvent, HuntState, Settings};

/// Settings in a temporary directory, dry-run services with the scripted model and no
/// mailer (the summary goes to an `.eml`), a fresh cost meter, a standalone run context,
/// collected events.
pub struct Rig {
    _dir: tempfile::TempDir,
    pub settings: Settings,
    pub deps: Deps,
    pub llm: PipelineLlm,
    pub run: RunContext,
    pub events: CollectingSink<HuntEvent>,
}

impl Rig {
    pub fn new(model: &ScriptedModel) -> Self {
        Rig::with(model, |_| {})
    }

    pub fn with(model: &ScriptedModel, tweak: impl FnOnce(&mut Settings)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = super::settings(dir.path());
        tweak(&mut settings);
        let events = CollectingSink::default();
        let model: Arc<dyn ChatModel> = Arc::new(model.clone());
        let mut deps = Deps::dry_run(&super::fixtures(), &settings, None)
            .unwrap()
            .with_model(model.clone())
            .with_events(Arc::new(events.clone()));
        deps.mailer = None;
        let llm = PipelineLlm::new(
            model,
            agent_llm::PricingTable::default(),
            &settings,
            deps.events.clone(),
        );
        Rig {
            _dir: dir,
            settings,
            deps,
            llm,
            run: RunContext::standalone("run-id"),
            events,
        }
    }

    pub fn env(&self) -> StepEnv<'_> {
        StepEnv {
            deps: &self.deps,
            llm: &self.llm,
            settings: &self.settings,
            run: &self.run,
        }
    }

    /// A fresh state for the recorded resume and preferences.
    pub fn state(&self) -> HuntState {
        HuntState::new(super::config("steps", &self.settings))
    }

    pub fn output_dir(&self) -> PathBuf {
        self.settings.output_dir.clone()
    }
}
