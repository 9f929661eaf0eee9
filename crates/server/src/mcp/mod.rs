//! The MCP front (feature `mcp`): the server's products and capabilities as the tools
//! of a Model Context Protocol server, over streamable HTTP at `/mcp`, behind the same
//! auth layer as every route.
//!
//! A hosted product becomes a tool whose arguments are its start request
//! ([`McpFront::with_product`]): a call starts a session for the caller, as
//! `POST /api/{product}/start` does, reports each of its events as an MCP progress
//! notification, and answers with the session's result (as structured content, and as
//! JSON text) when it completes, or an error result when it fails. Other tools are
//! [`McpCapability`]s ([`McpFront::with_capabilities`]), such as runtime tools run for
//! the caller ([`agent_tools`]). The caller's tenant and user come from its credential.
//!
//! ```no_run
//! use agent_server::AgentServer;
//! use agent_server::mcp::McpFront;
//! use agent_runtime::sessions::InMemorySessionStore;
//! use std::sync::Arc;
//!
//! # async fn serve(server: AgentServer) -> std::io::Result<()> {
//! // `server` hosts a product named "optimize".
//! let front = McpFront::new("jd-optimizer", "1.0.0")
//!     .with_product("optimize", "optimize_resume", "Tailors a resume to a job description.");
//! let server = server.with_mcp(front);
//! let listener = server.listen("127.0.0.1:8080".parse().unwrap()).await?;
//! server.serve(listener).await // POST /mcp answers MCP clients
//! # }
//! ```

mod capability;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use capability::{McpCall, McpCapability, McpProgress, agent_tools};

/// A hosted product offered as a tool.
#[derive(Debug, Clone)]
pub(crate) struct ProductTool {
    /// The product's name on the server.
    pub(crate) product: String,
    /// The tool's name.
    pub(crate) name: String,
    pub(crate) description: String,
}

/// What the MCP front offers, and who it says it is.
#[derive(Clone)]
pub struct McpFront {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) instructions: Option<String>,
    pub(crate) products: Vec<ProductTool>,
    pub(crate) capabilities: Vec<Arc<dyn McpCapability>>,
    /// Ends every MCP session when the server shuts down.
    pub(crate) shutdown: CancellationToken,
}

impl std::fmt::Debug for McpFront {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpFront")
            .field("name", &self.name)
            .field("products", &self.products)
            .field(
                "capabilities",
                &self
                    .capabilities
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl McpFront {
    /// A front that names itself `name` at `version` to its clients, offering nothing yet.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        McpFront {
            name: name.into(),
            version: version.into(),
            instructions: None,
            products: Vec::new(),
            capabilities: Vec::new(),
            shutdown: CancellationToken::new(),
        }
    }

    /// What the server tells its clients about using it.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Offers the hosted product `product` as the tool `tool`: its arguments are the
    /// product's start request, its result the session's. A product whose runs wait at
    /// gates is not offered (an MCP call cannot answer them); the server says so in its
    /// log when it starts.
    pub fn with_product(
        mut self,
        product: impl Into<String>,
        tool: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        self.products.push(ProductTool {
            product: product.into(),
            name: tool.into(),
            description: description.into(),
        });
        self
    }

    /// Offers `capabilities` as tools.
    pub fn with_capabilities(
        mut self,
        capabilities: impl IntoIterator<Item = Arc<dyn McpCapability>>,
    ) -> Self {
        self.capabilities.extend(capabilities);
        self
    }

    /// The names of the tools it offers.
    pub fn tool_names(&self) -> Vec<&str> {
        self.products
            .iter()
            .map(|p| p.name.as_str())
            .chain(self.capabilities.iter().map(|c| c.name()))
            .collect()
    }

    /// Ends every MCP session (the server is shutting down).
    pub(crate) fn stop(&self) {
        self.shutdown.cancel();
    }
}
