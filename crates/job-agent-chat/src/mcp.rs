//! The chat's job tools offered over MCP (feature `mcp`): what people want to call from
//! their own assistants.

use std::sync::Arc;

use agent_runtime::{CostLimits, CostMeter, MeterLabels, Session};
use agent_server::mcp::{McpCapability, agent_tools};

use crate::agent::JobAgentChat;
use crate::tools::{app_prep_tools, job_search_tools};

/// The tools offered: search, list, read, save and rank jobs, prepare an application.
pub const MCP_TOOLS: [&str; 6] = [
    "search_jobs",
    "list_jobs",
    "get_job_details",
    "save_job",
    "rank_saved_jobs",
    "prepare_application",
];

impl JobAgentChat {
    /// The chat's job tools as MCP capabilities ([`MCP_TOOLS`]): each call works on the
    /// caller's own jobs and profile (its user is the credential's), on the chat's model
    /// and tiers, under a turn's token limit.
    pub fn mcp_capabilities(&self) -> Vec<Arc<dyn McpCapability>> {
        let services = self.services();
        let mut tools = job_search_tools(services);
        tools.extend(app_prep_tools(services));
        let mut offered = Vec::new();
        for name in MCP_TOOLS {
            if let Some(tool) = tools.iter().find(|tool| tool.name() == name) {
                offered.push(Arc::clone(tool));
            }
        }
        let (model, router) = (self.model(), self.router().clone());
        let max_tokens = self.config().max_tokens_per_turn;
        agent_tools(offered, move |owner: &str| {
            let meter = CostMeter::new(CostLimits {
                max_tokens: Some(max_tokens),
                ..CostLimits::default()
            })
            .with_labels(MeterLabels::product("job_agent_chat").with_router(&router));
            Session::new(uuid::Uuid::new_v4().to_string(), ())
                .with_user(owner)
                .with_model(Arc::clone(&model))
                .with_router(router.clone())
                .with_meter(meter)
        })
    }
}
