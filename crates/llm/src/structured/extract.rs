//! `extract::<T>()`: a typed answer from any chat model, re-asking on invalid output.

use super::json_text::find_json;
use super::schema::{schema_name_of, schema_of, strict_schema, without_descriptions};
use crate::error::LlmError;
use crate::model::{ChatModel, StructuredOutputMode};
use crate::types::{
    ChatRequest, ChatResponse, ContentBlock, Message, ResponseFormat, Role, StopReason, ToolChoice,
    ToolDefinition, Usage,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// How [`extract_with`] asks.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractOptions {
    /// Calls in all, the first included; every failed parse re-asks until this is reached.
    pub max_attempts: u32,
    /// Tool or schema name; defaults to the schema title (the type name).
    pub name: Option<String>,
    /// Tool description shown to the model in forced-tool mode.
    pub description: Option<String>,
    /// Whether the schema carries the answer type's field descriptions (its doc
    /// comments). Leave them out ([`without_descriptions`]) when the system prompt
    /// already says what each field holds: every schema token is paid on every call.
    pub field_descriptions: bool,
}

impl Default for ExtractOptions {
    /// Three attempts, names from the type, field descriptions sent.
    fn default() -> Self {
        ExtractOptions {
            max_attempts: 3,
            name: None,
            description: None,
            field_descriptions: true,
        }
    }
}

/// A typed answer with what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted<T> {
    /// The value.
    pub value: T,
    /// Usage of every call made, in order.
    pub usage: Vec<Usage>,
    /// Number of calls made.
    pub attempts: u32,
    /// The model id that produced the value.
    pub model: String,
}

impl<T> Extracted<T> {
    /// Usage of all attempts together.
    pub fn total_usage(&self) -> Usage {
        self.usage.iter().copied().sum()
    }
}

/// Extraction failed; the usage of the calls that were made is kept.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("structured output failed after {attempts} attempt(s): {error}")]
pub struct ExtractError {
    /// The last error: the provider's, or [`LlmError::InvalidResponse`] with the validation error.
    #[source]
    pub error: LlmError,
    /// Calls made.
    pub attempts: u32,
    /// Usage of every call made.
    pub usage: Vec<Usage>,
}

/// Asks `model` for a `T` with the default [`ExtractOptions`].
///
/// The schema comes from schemars. A model whose [`ChatModel::structured_output_mode`] is
/// [`StructuredOutputMode::ForcedTool`] (Anthropic) gets the schema as the one tool it must
/// call; [`StructuredOutputMode::JsonSchema`] (OpenAI) gets a strict `json_schema` response
/// format. JSON wrapped in prose or code fences is accepted. When the answer does not
/// deserialize, the model is shown the validation error and asked again.
///
/// ```
/// use agent_llm::{extract, ChatRequest, testing::ScriptedModel};
/// #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
/// struct Answer { answer: String, confidence: f64 }
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = ScriptedModel::from_texts([
///     "Sorry, here: {\"answer\": \"4\"}",                          // missing field: re-asked
///     "```json\n{\"answer\": \"4\", \"confidence\": 0.9}\n```",
/// ]);
/// let out = extract::<Answer, _>(&model, ChatRequest::from_prompt("2+2?")).await.unwrap();
/// assert_eq!(out.value.answer, "4");
/// assert_eq!(out.attempts, 2);
/// # });
/// ```
pub async fn extract<T, M>(model: &M, request: ChatRequest) -> Result<Extracted<T>, ExtractError>
where
    T: JsonSchema + DeserializeOwned,
    M: ChatModel + ?Sized,
{
    extract_with(model, request, ExtractOptions::default()).await
}

/// [`extract`] with explicit options.
pub async fn extract_with<T, M>(
    model: &M,
    mut request: ChatRequest,
    options: ExtractOptions,
) -> Result<Extracted<T>, ExtractError>
where
    T: JsonSchema + DeserializeOwned,
    M: ChatModel + ?Sized,
{
    let schema = if options.field_descriptions {
        schema_of::<T>()
    } else {
        without_descriptions(schema_of::<T>())
    };
    let name = options.name.clone().unwrap_or_else(schema_name_of::<T>);
    let mode = model.structured_output_mode();
    match mode {
        StructuredOutputMode::ForcedTool => {
            let description = options
                .description
                .clone()
                .unwrap_or_else(|| "Your answer, in this tool's arguments.".into());
            request.add_tool(ToolDefinition::new(&name, description, schema));
            request.tool_choice = Some(ToolChoice::Tool { name: name.clone() });
        }
        StructuredOutputMode::JsonSchema => {
            request.response_format = Some(ResponseFormat::JsonSchema {
                name: name.clone(),
                schema: strict_schema(schema),
                strict: true,
            });
        }
        StructuredOutputMode::JsonObject => {
            let instruction = format!(
                "Reply with only a JSON object that matches this JSON Schema, and nothing else:\n{schema}"
            );
            request.system = Some(match request.system.take() {
                Some(system) if !system.is_empty() => format!("{system}\n\n{instruction}"),
                _ => instruction,
            });
            request.response_format = Some(ResponseFormat::JsonObject);
        }
    }
    let max_attempts = options.max_attempts.max(1);
    // An answer cut off at the limit is asked for again with more room, up to four times
    // the first limit and half the context window.
    let room_ceiling = request.max_tokens.map(|first| {
        let ceiling = first.saturating_mul(4);
        model
            .context_window()
            .map_or(ceiling, |window| ceiling.min(window / 2).max(first))
    });
    let mut usage = Vec::new();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let response = match model.chat(&request).await {
            Ok(response) => response,
            Err(error) => {
                return Err(ExtractError {
                    error,
                    attempts: attempt,
                    usage,
                });
            }
        };
        usage.push(response.usage);
        let problem = match parse_answer::<T>(&response, &name) {
            Ok(value) => {
                tracing::debug!(attempt, schema = %name, "structured output accepted");
                return Ok(Extracted {
                    value,
                    usage,
                    attempts: attempt,
                    model: response.model,
                });
            }
            Err(problem) => problem,
        };
        tracing::warn!(attempt, schema = %name, problem = %problem, "structured output rejected");
        let cut_off = response.stop_reason == StopReason::MaxTokens;
        if attempt < max_attempts
            && cut_off
            && let (Some(limit), Some(ceiling)) = (request.max_tokens, room_ceiling)
            && limit < ceiling
        {
            let raised = limit.saturating_mul(2).min(ceiling);
            tracing::warn!(attempt, schema = %name, from = limit, to = raised, "the answer was cut off at max_tokens; asking again with more room");
            request.max_tokens = Some(raised);
            continue;
        }
        if attempt == max_attempts {
            let error = LlmError::InvalidResponse(problem.to_string());
            return Err(ExtractError {
                error,
                attempts: attempt,
                usage,
            });
        }
        request.messages.push(response.to_message());
        request
            .messages
            .push(correction(&response, &name, &problem));
    }
}

/// Why an answer could not be read as the requested type. Its text is shown to the model
/// when re-asking and, after the last attempt, becomes [`LlmError::InvalidResponse`].
#[derive(Debug, thiserror::Error)]
enum AnswerProblem {
    /// The model refused; its text.
    #[error("the model refused: {0}")]
    Refused(String),
    /// The forced tool's arguments came as a string holding no JSON.
    #[error("the tool arguments are not JSON: {0}")]
    ToolArgumentsNotJson(String),
    /// No tool call and no JSON in the text (abbreviated).
    #[error("no JSON found in the answer{}: {text}", if *.cut_off { " (the answer was cut off at max_tokens)" } else { "" })]
    NoJson {
        /// The answer's text, abbreviated.
        text: String,
        /// Whether the answer stopped at `max_tokens`.
        cut_off: bool,
    },
    /// The JSON does not match the type; the path to the failing field unless it is the root.
    #[error("{}", mismatch(.0))]
    Mismatch(serde_path_to_error::Error<serde_json::Error>),
}

/// A deserialization error with the path to the failing field (`at `path`: ...`), the
/// path left out at the root.
fn mismatch(error: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = error.path().to_string();
    if path == "." {
        error.inner().to_string()
    } else {
        format!("at `{path}`: {}", error.inner())
    }
}

/// Reads `T` from the forced tool call or from JSON in the text.
fn parse_answer<T: DeserializeOwned>(
    response: &ChatResponse,
    name: &str,
) -> Result<T, AnswerProblem> {
    if response.stop_reason == StopReason::Refusal {
        return Err(AnswerProblem::Refused(response.text()));
    }
    let from_tool = response
        .tool_calls()
        .into_iter()
        .find(|(_, tool, _)| *tool == name);
    let value = match from_tool {
        Some((_, _, Value::String(raw))) => {
            find_json(raw).ok_or_else(|| AnswerProblem::ToolArgumentsNotJson(raw.clone()))?
        }
        Some((_, _, input)) => input.clone(),
        None => {
            let text = response.text();
            find_json(&text).ok_or_else(|| AnswerProblem::NoJson {
                text: abbreviate(&text),
                cut_off: response.stop_reason == StopReason::MaxTokens,
            })?
        }
    };
    serde_path_to_error::deserialize(&value).map_err(AnswerProblem::Mismatch)
}

/// The user turn that shows the model its mistake. Every tool call of the rejected answer
/// gets a result, as the providers require.
fn correction(response: &ChatResponse, name: &str, problem: &AnswerProblem) -> Message {
    let calls = response.tool_calls();
    if calls.is_empty() {
        return Message::user(format!(
            "Your answer could not be used: {problem}. Reply again with only a JSON document \
             that matches the requested schema."
        ));
    }
    let blocks = calls
        .into_iter()
        .map(|(id, tool, _)| {
            let text = if tool == name {
                format!("Validation error: {problem}. Call {name} again with corrected arguments.")
            } else {
                format!("{tool} is not available here. Call {name} with your answer.")
            };
            ContentBlock::tool_error(id, text)
        })
        .collect();
    Message::new(Role::User, blocks)
}

fn abbreviate(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}
