//! Tools: what an agent can do, as typed async functions.

use crate::context::AgentContext;
use crate::gates::GateError;
use agent_llm::{LlmError, ToolDefinition};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

/// Why a tool call failed. The message goes back to the model as an error result, so it
/// can correct itself; a failing tool never aborts the run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The arguments did not match the tool's input type.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// The tool exceeded the round timeout.
    #[error("the tool did not finish within {0:?}")]
    Timeout(Duration),
    /// The model asked for a tool the agent does not have.
    #[error("unknown tool {0:?}")]
    UnknownTool(String),
    /// Waiting for the user failed.
    #[error(transparent)]
    Gate(#[from] GateError),
    /// An LLM call made by the tool failed.
    #[error(transparent)]
    Llm(#[from] LlmError),
}

impl ToolError {
    /// A failure with this message.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed(message.into())
    }
}

/// A tool an agent can call: what the model sees (name, description, input schema) and
/// what runs (`execute`).
#[async_trait]
pub trait AgentTool<S, E>: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;
    /// What it does, for the model.
    fn description(&self) -> &str;
    /// JSON Schema of its input, sent to the model verbatim.
    fn input_schema(&self) -> &Value;
    /// Runs the tool.
    async fn execute(&self, input: &Value, ctx: &AgentContext<S, E>) -> Result<Value, ToolError>;

    /// The definition sent to the model.
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(self.name(), self.description(), self.input_schema().clone())
    }
}

/// A tool made from an async function of a typed input: the schema is derived from `I`,
/// and the arguments are deserialized into `I` before the function runs. Build one with
/// [`tool`].
pub struct TypedTool<I, F> {
    name: String,
    description: String,
    schema: Value,
    function: F,
    input: PhantomData<fn(I)>,
}

/// A tool from an async function `f(input, ctx)`; "the signature is the schema".
///
/// ```
/// use agent_runtime::{tool, AgentContext, AgentTool, ToolError};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: i64, b: i64 }
/// let add = tool("add", "Adds two integers.", |args: Add, _ctx: AgentContext<(), ()>| async move {
///     Ok::<_, ToolError>(args.a + args.b)
/// });
/// assert_eq!(AgentTool::<(), ()>::name(&add), "add");
/// assert_eq!(AgentTool::<(), ()>::input_schema(&add)["required"], serde_json::json!(["a", "b"]));
/// ```
pub fn tool<I, F>(
    name: impl Into<String>,
    description: impl Into<String>,
    function: F,
) -> TypedTool<I, F>
where
    I: JsonSchema,
{
    TypedTool {
        name: name.into(),
        description: description.into(),
        schema: agent_llm::structured::schema_of::<I>(),
        function,
        input: PhantomData,
    }
}

#[async_trait]
impl<S, E, I, O, F, Fut> AgentTool<S, E> for TypedTool<I, F>
where
    S: Send + Sync + 'static,
    E: Send + Sync + 'static,
    I: DeserializeOwned + Send + 'static,
    O: Serialize,
    F: Fn(I, AgentContext<S, E>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<O, ToolError>> + Send,
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
        let typed =
            I::deserialize(input).map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        let output = (self.function)(typed, ctx.clone()).await?;
        serde_json::to_value(output)
            .map_err(|e| ToolError::failed(format!("the tool's result is not JSON: {e}")))
    }
}
