//! The MCP front served: rmcp's streamable HTTP service at `/mcp`, one [`Handler`] per
//! MCP session, over the server's products and the front's capabilities.

mod handler;

use std::sync::Arc;

use axum::Router;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::mcp::McpFront;
use crate::server::AgentServer;

use handler::Handler;

/// `/mcp` for `server`: its products among `front`'s tools, the host check of
/// MCP's DNS-rebinding protection on while the server is open (loopback only), off
/// once callers must authenticate.
pub(crate) fn router(front: &McpFront, server: &AgentServer) -> Router<AgentServer> {
    let shutdown = front.shutdown.child_token();
    let front = Arc::new(without_unservable(front, server));
    let factory_server = server.clone();
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(shutdown);
    if !server.inner.auth.is_open() {
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(Handler::new(factory_server.clone(), Arc::clone(&front))),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new().nest_service("/mcp", service)
}

/// `front` without the product tools `server` cannot serve (unknown products,
/// products whose runs wait at gates), each said in the log.
fn without_unservable(front: &McpFront, server: &AgentServer) -> McpFront {
    let mut front = front.clone();
    front.products.retain(|tool| match server.product(&tool.product) {
        None => {
            tracing::warn!(product = %tool.product, "the MCP front offers no tool for a product the server does not host");
            false
        }
        Some(hosted) if hosted.has_gates() => {
            tracing::warn!(product = %tool.product, "the MCP front offers no tool for a product whose runs wait at gates");
            false
        }
        Some(_) => true,
    });
    front
}
