//! One step's surroundings for the step tests.

use std::path::PathBuf;
use std::sync::Arc;

use agent_llm::ChatModel;
use agent_llm::testing::ScriptedModel;
use agent_runtime::graph::NodeContext;
use agent_runtime::{CollectingSink, Session};
use job_hunter::llm::PipelineLlm;
use job_hunter::steps::{HuntNode, StepEnv};
use job_hunter::{Deps, HuntEvent, HuntState, Settings};

/// Settings in a temporary directory, dry-run services with the scripted model and no
/// mailer (the summary goes to an `.eml`), a fresh cost meter, a standalone node on a session with the model,
/// collected events.
pub struct Rig {
    _dir: tempfile::TempDir,
    pub settings: Settings,
    pub deps: Deps,
    pub llm: PipelineLlm,
    pub node: HuntNode,
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
            agent_llm::PricingTable::default(),
            &settings,
            deps.events.clone(),
        );
        let session = Session::new("run-id", HuntState::new(super::config("steps", &settings)))
            .with_model(model)
            .with_meter(llm.meter().clone())
            .with_events(deps.events.clone());
        Rig {
            _dir: dir,
            settings,
            deps,
            llm,
            node: NodeContext::standalone(session),
            events,
        }
    }

    pub fn env(&self) -> StepEnv<'_> {
        StepEnv {
            deps: &self.deps,
            llm: &self.llm,
            settings: &self.settings,
            ctx: &self.node,
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
