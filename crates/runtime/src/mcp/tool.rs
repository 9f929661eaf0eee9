//! One tool of an MCP server, as a runtime tool.

use std::borrow::Cow;

use async_trait::async_trait;
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientRequest, ContentBlock,
    ErrorCode, Request, ResourceContents, ServerResult, Tool,
};
use rmcp::service::PeerRequestOptions;
use serde_json::Value;

use super::McpClient;
use crate::context::AgentContext;
use crate::tool::{AgentTool, ToolError};

/// A tool of an MCP server: its name (behind the client's prefix), description and input
/// schema as the server gave them; a call goes to the server.
#[derive(Debug, Clone)]
pub struct McpTool {
    client: McpClient,
    /// The name the model calls it by (the client's prefix, then the server's name).
    name: String,
    /// The name the server knows it by.
    remote: String,
    description: String,
    schema: Value,
}

impl McpTool {
    pub(super) fn new(client: McpClient, prefix: &str, tool: Tool) -> Self {
        let remote = tool.name.to_string();
        McpTool {
            client,
            name: format!("{prefix}{remote}"),
            description: tool
                .description
                .as_deref()
                .map(str::to_owned)
                .or_else(|| tool.title.clone())
                .unwrap_or_default(),
            schema: Value::Object(tool.input_schema.as_ref().clone()),
            remote,
        }
    }

    /// Calls the tool with `arguments` (a JSON object), cancelled when `cancel` fires or
    /// the client's call timeout passes.
    ///
    /// # Errors
    ///
    /// The server's error result or refusal, a timeout, a cancellation, or a server that
    /// could not be reached (the next call connects again).
    pub async fn call(
        &self,
        arguments: &Value,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Value, ToolError> {
        let arguments = match arguments {
            Value::Object(object) => object.clone(),
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "the arguments of {} must be a JSON object, not {other}",
                    self.name
                )));
            }
        };
        let server = self.client.transport().to_string();
        let unreachable = |error: &dyn std::fmt::Display| {
            ToolError::failed(format!(
                "the MCP server {server} could not be reached ({error}); the next call tries again"
            ))
        };
        let (peer, generation) = self
            .client
            .peer()
            .await
            .map_err(|error| unreachable(&error))?;
        let timeout = self.client.call_timeout();
        let request = ClientRequest::CallToolRequest(Request::new(
            CallToolRequestParams::new(Cow::Owned(self.remote.clone())).with_arguments(arguments),
        ));
        let handle = match peer
            .send_cancellable_request(request, PeerRequestOptions::with_timeout(timeout))
            .await
        {
            Ok(handle) => handle,
            Err(error) => {
                self.client.lost(generation).await;
                return Err(unreachable(&error));
            }
        };
        let id = handle.id.clone();
        let answer = tokio::select! {
            answer = handle.await_response() => answer,
            () = cancel.cancelled() => {
                let notice = CancelledNotificationParam::new(Some(id), Some("the run was cancelled".to_owned()));
                if let Err(error) = peer.notify_cancelled(notice).await {
                    tracing::debug!(%error, tool = %self.name, "the MCP server was not told of the cancellation");
                }
                return Err(ToolError::failed("cancelled: the run was cancelled"));
            }
        };
        match answer {
            Ok(ServerResult::CallToolResult(result)) => result_of(result),
            Ok(other) => Err(ToolError::failed(format!(
                "the MCP server {server} answered the call with something else: {other:?}"
            ))),
            Err(ServiceError::Timeout { timeout }) => Err(ToolError::Timeout(timeout)),
            Err(ServiceError::McpError(error)) if error.code == ErrorCode::INVALID_PARAMS => {
                Err(ToolError::InvalidArguments(error.message.into_owned()))
            }
            Err(ServiceError::McpError(error)) => Err(ToolError::failed(format!(
                "the MCP server refused the call: {}",
                error.message
            ))),
            Err(ServiceError::Cancelled { reason }) => Err(ToolError::failed(format!(
                "cancelled: {}",
                reason.unwrap_or_else(|| "by the server".to_owned())
            ))),
            Err(error) => {
                self.client.lost(generation).await;
                Err(unreachable(&error))
            }
        }
    }
}

#[async_trait]
impl<S, E> AgentTool<S, E> for McpTool
where
    S: Send + Sync + 'static,
    E: Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    async fn execute(&self, input: &Value, ctx: &AgentContext<S, E>) -> Result<Value, ToolError> {
        self.call(input, ctx.cancellation()).await
    }
}

/// What the model reads of a call's result: the structured content when there is one,
/// else the content as text; an error result is a tool error.
fn result_of(result: CallToolResult) -> Result<Value, ToolError> {
    let text = result
        .content
        .iter()
        .map(content_text)
        .collect::<Vec<_>>()
        .join("\n");
    if result.is_error == Some(true) {
        return Err(ToolError::failed(if text.is_empty() {
            "the tool failed and said nothing more".to_owned()
        } else {
            text
        }));
    }
    Ok(match result.structured_content {
        Some(structured) => structured,
        None => Value::String(text),
    })
}

/// One content block as the model reads it: text as it is, anything else described.
fn content_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!(
            "[an image, {}, {} bytes of base64]",
            image.mime_type,
            image.data.len()
        ),
        ContentBlock::Audio(audio) => format!(
            "[audio, {}, {} bytes of base64]",
            audio.mime_type,
            audio.data.len()
        ),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents { uri, blob, .. } => {
                format!("[resource {uri}: {} bytes of base64]", blob.len())
            }
            _ => "[a resource of a kind this client does not read]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link {}: {}]", link.uri, link.name),
        _ => "[content of a kind this client does not read]".to_owned(),
    }
}
