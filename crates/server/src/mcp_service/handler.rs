//! One MCP session's handler: lists the front's tools and runs their calls for the
//! authenticated caller.

use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::auth::{Caller, DEFAULT_TENANT, Scope};
use crate::mcp::{McpCall, McpFront, McpProgress, ProductTool};
use crate::server::AgentServer;
use crate::stream::SessionEvents;
use crate::writer::is_terminal;

/// The handler of one MCP session.
pub(crate) struct Handler {
    server: AgentServer,
    front: Arc<McpFront>,
}

impl Handler {
    pub(crate) fn new(server: AgentServer, front: Arc<McpFront>) -> Self {
        Handler { server, front }
    }

    fn tools(&self) -> Vec<Tool> {
        let products = self.front.products.iter().filter_map(|tool| {
            let hosted = self.server.product(&tool.product)?;
            Some(Tool::new(
                tool.name.clone(),
                tool.description.clone(),
                Arc::new(object_schema(hosted.start_schema())),
            ))
        });
        let capabilities = self.front.capabilities.iter().map(|capability| {
            Tool::new(
                capability.name().to_owned(),
                capability.description().to_owned(),
                Arc::new(object_schema(capability.input_schema().clone())),
            )
        });
        products.chain(capabilities).collect()
    }

    /// Runs a hosted product's session for `caller` and answers with its result.
    async fn run_product(
        &self,
        tool: &ProductTool,
        caller: &Caller,
        arguments: JsonObject,
        progress: &McpProgress,
        cancel: &CancellationToken,
    ) -> CallToolResult {
        let server = &self.server;
        let started = match server
            .start_session(caller, &tool.product, Value::Object(arguments))
            .await
        {
            Ok(started) => started,
            Err(refused) => return error_result(refused.message()),
        };
        let id = started.id;
        let record = match server.inner.store.get(&id).await {
            Ok(Some(record)) => record,
            Ok(None) => return error_result(&format!("session {id} vanished from the store")),
            Err(error) => return error_result(&format!("the store failed: {error}")),
        };
        let mut events = match SessionEvents::open(server, &record, 0).await {
            Ok(events) => events,
            Err(refused) => return error_result(refused.message()),
        };
        progress.note(format!("session {id} started"));
        loop {
            let next = tokio::select! {
                next = events.next() => next,
                () = cancel.cancelled() => {
                    if let Err(error) = server.cancel_anywhere(&id, "cancelled by its MCP client").await {
                        tracing::warn!(session = %id, error = error.message(), "the session of a cancelled MCP call was not cancelled");
                    }
                    return error_result("cancelled");
                }
            };
            let Some((_, event)) = next else {
                // Not ended, but no longer followed here: the session goes on, and can be
                // read where every client reads it.
                return error_result(&format!(
                    "session {id} is still running; follow it at /api/{}/{id}/stream with the token {}",
                    tool.product, started.token
                ));
            };
            let kind = event.get("type").and_then(Value::as_str).unwrap_or("event");
            if !is_terminal(&event) {
                progress.note(describe(kind, &event));
                continue;
            }
            return match kind {
                "session_complete" => {
                    let result = event.get("result").cloned().unwrap_or(Value::Null);
                    let text = serde_json::to_string_pretty(&result).unwrap_or_default();
                    let mut answer = CallToolResult::success(vec![ContentBlock::text(text)]);
                    answer.structured_content = Some(result);
                    answer
                }
                _ => {
                    let why = ["error", "reason"]
                        .iter()
                        .find_map(|field| event.get(*field).and_then(Value::as_str))
                        .unwrap_or("no reason given");
                    error_result(&format!("the session ended {kind}: {why}"))
                }
            };
        }
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                self.front.name.clone(),
                self.front.version.clone(),
            ));
        match &self.front.instructions {
            Some(instructions) => info.with_instructions(instructions.clone()),
            None => info,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = context
            .extensions
            .get::<Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned()
            .ok_or_else(|| ErrorData::invalid_request("the call came without a caller", None))?;
        let name = request.name.as_ref();
        let arguments = request.arguments.unwrap_or_default();
        let (progress, notes) = McpProgress::new();
        let reporter = report(
            notes,
            context.peer.clone(),
            context.meta.get_progress_token(),
        );
        let cancel = context.ct.clone();
        let owner = owner(&caller, &context);
        // The notes are sent while the call runs, and all of them before its answer: the
        // call drops its progress handle when it ends.
        let answer = async move {
            if let Some(tool) = self.front.products.iter().find(|t| t.name == name) {
                return Ok(self
                    .run_product(tool, &caller, arguments, &progress, &cancel)
                    .await);
            }
            let Some(capability) = self.front.capabilities.iter().find(|c| c.name() == name) else {
                return Err(ErrorData::invalid_params(
                    format!("no tool named {name:?}"),
                    None,
                ));
            };
            let call = McpCall {
                owner,
                progress,
                cancel,
            };
            Ok(
                match capability.call(Value::Object(arguments), call).await {
                    Ok(value) => value_result(value),
                    Err(error) => error_result(&error.to_string()),
                },
            )
        };
        let (answer, ()) = tokio::join!(answer, reporter);
        answer.map(Into::into)
    }
}

/// Sends the notes as progress notifications (when the client asked for them) until the
/// call ends.
async fn report(
    mut notes: mpsc::UnboundedReceiver<String>,
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
) {
    let mut sent = 0.0;
    while let Some(note) = notes.recv().await {
        let Some(token) = token.clone() else { continue };
        sent += 1.0;
        let notice = ProgressNotificationParam::new(token, sent).with_message(note);
        if let Err(error) = peer.notify_progress(notice).await {
            tracing::debug!(%error, "a progress notification was not sent");
        }
    }
}

/// Whom a capability's call is for: the credential's tenant and user, or the user the
/// request names (`x-user-id`) when the credential speaks for any.
fn owner(caller: &Caller, context: &RequestContext<RoleServer>) -> String {
    let named = context
        .extensions
        .get::<Parts>()
        .and_then(|parts| parts.headers.get("x-user-id"))
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|value| !value.is_empty());
    let user = match caller.principal.user() {
        Scope::Only(own) => own.clone(),
        Scope::Any => named.unwrap_or("anonymous").to_owned(),
    };
    match caller.principal.tenant().only() {
        Some(tenant) if tenant != DEFAULT_TENANT => format!("{tenant}/{user}"),
        _ => user,
    }
}

/// A progress note for a session event: its type, and its stage or message if it says one.
fn describe(kind: &str, event: &Value) -> String {
    let detail = ["stage", "message", "step", "node"]
        .iter()
        .find_map(|field| event.get(*field).and_then(Value::as_str));
    match detail {
        Some(detail) => format!("{kind}: {detail}"),
        None => kind.to_owned(),
    }
}

/// A schema as MCP wants a tool's input schema: a JSON object.
fn object_schema(schema: Value) -> JsonObject {
    match schema {
        Value::Object(object) => object,
        _ => JsonObject::from_iter([("type".to_owned(), Value::String("object".into()))]),
    }
}

/// A successful call's answer: text, or JSON as structured content and as text.
fn value_result(value: Value) -> CallToolResult {
    match value {
        Value::String(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        other => {
            let text = serde_json::to_string_pretty(&other).unwrap_or_default();
            let mut answer = CallToolResult::success(vec![ContentBlock::text(text)]);
            answer.structured_content = Some(other);
            answer
        }
    }
}

fn error_result(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_owned())])
}
