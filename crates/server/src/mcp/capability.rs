//! What the MCP front offers besides the hosted products: capabilities, each a tool
//! whose call knows its caller, reports progress and hears its cancellation.

use std::sync::Arc;

use agent_runtime::{AgentTool, EventSink, Session, ToolError};
use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// One call of a capability: whom it is for, where its progress goes, when it stops.
#[derive(Debug, Clone)]
pub struct McpCall {
    /// The user the call is for, as the chat front names it: `user`, or `tenant/user`
    /// beyond the default tenant. Taken from the credential, never from the arguments.
    pub owner: String,
    /// Where the call's progress goes (MCP progress notifications, when the client asked
    /// for them).
    pub progress: McpProgress,
    /// Fires when the client cancels the call.
    pub cancel: CancellationToken,
}

/// Reports a call's progress to its MCP client.
#[derive(Debug, Clone)]
pub struct McpProgress {
    notes: mpsc::UnboundedSender<String>,
}

impl McpProgress {
    pub(crate) fn new() -> (Self, mpsc::UnboundedReceiver<String>) {
        let (notes, received) = mpsc::unbounded_channel();
        (McpProgress { notes }, received)
    }

    /// Tells the client what the call is doing now. Never blocks; a note sent after the
    /// call ended is dropped.
    pub fn note(&self, message: impl Into<String>) {
        let _ = self.notes.send(message.into());
    }
}

/// A tool the MCP front offers: its name, description and input schema as clients see
/// them, and its call.
#[async_trait]
pub trait McpCapability: Send + Sync {
    /// The name clients call it by.
    fn name(&self) -> &str;
    /// What it does.
    fn description(&self) -> &str;
    /// The JSON Schema of its arguments (an object schema).
    fn input_schema(&self) -> &Value;
    /// Runs one call. An error is the call's error result, which the client reads.
    async fn call(&self, arguments: Value, call: McpCall) -> Result<Value, ToolError>;
}

/// Runtime tools offered over MCP: each call runs the tool in a session that
/// `session` makes for the caller (its user, model, meter, ...), the session's events
/// reported as progress and its cancellation the client's.
///
/// ```
/// use agent_runtime::{AgentTool, Session, tool, ToolError, AgentContext};
/// use agent_server::mcp::agent_tools;
/// use std::sync::Arc;
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Who { name: String }
/// let hello: Arc<dyn AgentTool<(), String>> = Arc::new(tool(
///     "hello",
///     "Greets someone.",
///     |who: Who, _ctx: AgentContext<(), String>| async move { Ok::<_, ToolError>(format!("Hello, {}", who.name)) },
/// ));
/// let capabilities = agent_tools(vec![hello], |owner: &str| Session::new(uuid_like(), ()).with_user(owner));
/// # fn uuid_like() -> String { "s".into() }
/// assert_eq!(capabilities[0].name(), "hello");
/// ```
pub fn agent_tools<S, E>(
    tools: Vec<Arc<dyn AgentTool<S, E>>>,
    session: impl Fn(&str) -> Session<S, E> + Send + Sync + 'static,
) -> Vec<Arc<dyn McpCapability>>
where
    S: Send + Sync + 'static,
    E: Serialize + Send + Sync + 'static,
{
    let session: Arc<SessionFor<S, E>> = Arc::new(session);
    tools
        .into_iter()
        .map(|tool| {
            Arc::new(AgentToolCapability {
                tool,
                session: Arc::clone(&session),
            }) as Arc<dyn McpCapability>
        })
        .collect()
}

type SessionFor<S, E> = dyn Fn(&str) -> Session<S, E> + Send + Sync;

struct AgentToolCapability<S, E> {
    tool: Arc<dyn AgentTool<S, E>>,
    session: Arc<SessionFor<S, E>>,
}

#[async_trait]
impl<S, E> McpCapability for AgentToolCapability<S, E>
where
    S: Send + Sync + 'static,
    E: Serialize + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        self.tool.name()
    }

    fn description(&self) -> &str {
        self.tool.description()
    }

    fn input_schema(&self) -> &Value {
        self.tool.input_schema()
    }

    async fn call(&self, arguments: Value, call: McpCall) -> Result<Value, ToolError> {
        let session = (self.session)(&call.owner)
            .with_events(Arc::new(ProgressNotes(call.progress.clone())))
            .with_cancellation(call.cancel.clone());
        let ctx = session.context(agent_runtime::AgentIdentity::new(self.tool.name(), "mcp"));
        self.tool.execute(&arguments, &ctx).await
    }
}

/// A session's events as progress notes: a string as it is, anything else as JSON.
struct ProgressNotes(McpProgress);

impl<E: Serialize> EventSink<E> for ProgressNotes {
    fn emit(&self, event: E) {
        match serde_json::to_value(&event) {
            Ok(Value::String(text)) => self.0.note(text),
            Ok(other) => self.0.note(other.to_string()),
            Err(error) => {
                tracing::debug!(%error, "an event that does not serialize: no progress note")
            }
        }
    }
}
