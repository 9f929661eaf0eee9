//! How a request is told apart (route, turn, user text, the last tool results), which
//! recorded answer fits it, and the response built from that answer.

use super::format::{Batch, Entry};
use crate::error::LlmError;
use crate::testing::conversation::called_tool;
use crate::testing::log::estimate_tokens;
use crate::types::{
    ChatRequest, ChatResponse, ContentBlock, ResponseFormat, Role, StopReason, ToolChoice, Usage,
};
use serde_json::Value;

/// The route of a request with no forced tool, no schema name and no agent name.
pub(super) const DEFAULT_ROUTE: &str = "default";

/// The id prefix of the tool calls a reaction (an answer with `after`) makes; the
/// assistant turns holding them are not counted as turns.
pub(super) const REACTION_PREFIX: &str = "rec_react_";

/// The route of a request; see the module docs.
pub(super) fn route_of(request: &ChatRequest) -> String {
    if let Some(ToolChoice::Tool { name }) = &request.tool_choice {
        return name.clone();
    }
    if let Some(ResponseFormat::JsonSchema { name, .. }) = &request.response_format {
        return name.clone();
    }
    request
        .system
        .as_deref()
        .and_then(agent_name)
        .unwrap_or_else(|| DEFAULT_ROUTE.to_owned())
}

/// `Planner` for a system prompt that starts `You are the Planner ...`.
fn agent_name(system: &str) -> Option<String> {
    let rest = system.trim_start().strip_prefix("You are the ")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The request's turn in its conversation: 1 + its assistant messages, reactions left out.
pub(super) fn turn_of(request: &ChatRequest) -> u32 {
    let turns = request
        .messages
        .iter()
        .filter(|message| message.role == Role::Assistant && !is_reaction(&message.content))
        .count();
    u32::try_from(turns).map_or(u32::MAX, |turns| turns.saturating_add(1))
}

fn is_reaction(content: &[ContentBlock]) -> bool {
    content.iter().any(|block| match block {
        ContentBlock::ToolUse { id, .. } => id.starts_with(REACTION_PREFIX),
        _ => false,
    })
}

/// What the recorded answers are matched against.
pub(super) struct Facts<'a> {
    pub(super) route: String,
    pub(super) turn: u32,
    /// The request's place among the requests on its route, from 1.
    pub(super) n: u32,
    /// The text of each user message.
    user_texts: Vec<String>,
    /// `(tool name, result)` of the successful tool results in the last message.
    results: Vec<(&'a str, &'a str)>,
    request: &'a ChatRequest,
}

impl<'a> Facts<'a> {
    pub(super) fn new(request: &'a ChatRequest, route: String, n: u32) -> Self {
        let user_texts = request
            .messages
            .iter()
            .filter(|message| message.role == Role::User)
            .map(|message| message.text())
            .collect();
        Facts {
            route,
            turn: turn_of(request),
            n,
            user_texts,
            results: last_results(request),
            request,
        }
    }

    fn has(&self, marker: &str) -> bool {
        self.user_texts.iter().any(|text| text.contains(marker))
    }

    /// The position of `marker` in the user messages read one after the other.
    fn position(&self, marker: &str) -> Option<usize> {
        let mut offset = 0;
        for text in &self.user_texts {
            if let Some(at) = text.find(marker) {
                return Some(offset + at);
            }
            offset += text.len() + 1;
        }
        None
    }

    fn count(&self, marker: &str) -> usize {
        self.user_texts
            .iter()
            .map(|text| text.matches(marker).count())
            .sum()
    }

    /// Whether `entry` answers this request, and with which tool result for a reaction.
    pub(super) fn matches(&self, entry: &Entry) -> Option<Option<&'a str>> {
        let fits = entry.route == self.route
            && entry.n.is_none_or(|n| n == self.n)
            && entry.turn.is_none_or(|turn| turn == self.turn)
            && entry.when.0.iter().all(|marker| self.has(marker));
        if !fits {
            return None;
        }
        let Some(after) = &entry.after else {
            return Some(None);
        };
        self.results
            .iter()
            .find(|(tool, result)| {
                *tool == after.tool
                    && after
                        .contains
                        .as_deref()
                        .is_none_or(|marker| result.contains(marker))
            })
            .map(|(_, result)| Some(*result))
    }

    /// The response `entry` gives; `result` is the tool result a reaction reacts to.
    pub(super) fn respond(
        &self,
        entry: &Entry,
        result: Option<&str>,
        origin: &str,
    ) -> Result<ChatResponse, LlmError> {
        let failed = |problem: String| {
            LlmError::InvalidResponse(format!(
                "RecordedModel ({origin}): the recorded answer for route {:?} (request {} on the route, turn {}) {problem}",
                self.route, self.n, self.turn
            ))
        };
        let output = match (&entry.output, &entry.batch) {
            (Some(output), _) => Some(output.clone()),
            (None, Some(batch)) => Some(self.assemble(batch).map_err(failed)?),
            (None, None) => None,
        };
        let seen = self
            .request
            .messages
            .iter()
            .filter(|message| message.role == Role::Assistant)
            .count();
        let prefix = if entry.after.is_some() {
            format!("{REACTION_PREFIX}{}", seen + 1)
        } else {
            format!("rec_{}", seen + 1)
        };
        let mut content = Vec::new();
        if let Some(output) = output {
            match &self.request.tool_choice {
                Some(ToolChoice::Tool { name }) => content.push(ContentBlock::ToolUse {
                    id: format!("{prefix}_0"),
                    name: name.clone(),
                    input: output,
                }),
                _ => content.push(ContentBlock::text(output.to_string())),
            }
        } else {
            let parsed = result.and_then(|result| serde_json::from_str::<Value>(result).ok());
            if let Some(text) = &entry.text {
                let text = if entry.after.is_some() {
                    fill_text(text, parsed.as_ref())
                } else {
                    text.clone()
                };
                content.push(ContentBlock::text(text));
            }
            for (index, call) in entry.tool_calls.iter().enumerate() {
                let mut input = call.input.clone();
                if entry.after.is_some() {
                    fill_templates(&mut input, parsed.as_ref()).map_err(failed)?;
                }
                content.push(ContentBlock::ToolUse {
                    id: format!("{prefix}_{index}"),
                    name: call.name.clone(),
                    input,
                });
            }
        }
        let stop_reason = if content
            .iter()
            .any(|block| matches!(block, ContentBlock::ToolUse { .. }))
        {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        };
        let usage = entry
            .usage
            .unwrap_or_else(|| estimated_usage(self.request, &content));
        Ok(ChatResponse {
            id: format!("rec_{}_{}", self.route, self.n),
            model: String::new(),
            content,
            stop_reason,
            usage,
        })
    }

    /// `{into: [the values of the items the request lists, in the order it lists them]}`.
    fn assemble(&self, batch: &Batch) -> Result<Value, String> {
        let mut found: Vec<(usize, &Value)> = batch
            .items
            .iter()
            .filter_map(|item| {
                let positions: Option<Vec<usize>> = item
                    .when
                    .0
                    .iter()
                    .map(|marker| self.position(marker))
                    .collect();
                Some((positions?.into_iter().min()?, &item.value))
            })
            .collect();
        found.sort_by_key(|(position, _)| *position);
        if let Some(per) = &batch.per {
            let listed = self.count(per);
            if listed != found.len() {
                return Err(format!(
                    "has {} of the {listed} items the request lists (each starting {per:?})",
                    found.len()
                ));
            }
        }
        if found.is_empty() {
            return Err("has no item for this request".to_owned());
        }
        let values = found.into_iter().map(|(_, value)| value.clone()).collect();
        let mut output = serde_json::Map::new();
        output.insert(batch.into.clone(), Value::Array(values));
        Ok(Value::Object(output))
    }
}

/// The successful tool results of the last message with the names of their calls, found
/// in the assistant messages before it.
fn last_results(request: &ChatRequest) -> Vec<(&str, &str)> {
    let Some((last, earlier)) = request.messages.split_last() else {
        return Vec::new();
    };
    if last.role != Role::User {
        return Vec::new();
    }
    last.content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error: false,
            } => Some((tool_use_id.as_str(), content.as_str())),
            _ => None,
        })
        .filter_map(|(wanted, content)| Some((called_tool(earlier, wanted)?, content)))
        .collect()
}

/// Replaces every string `{{result.FIELD}}` (`FIELD` may be a dotted path) in `input`
/// with that field of the tool result.
fn fill_templates(input: &mut Value, result: Option<&Value>) -> Result<(), String> {
    match input {
        Value::String(text) => {
            let Some(path) = text
                .strip_prefix("{{result.")
                .and_then(|rest| rest.strip_suffix("}}"))
            else {
                return Ok(());
            };
            let value = path
                .split('.')
                .try_fold(
                    result.ok_or("reacts to a tool result that is not JSON")?,
                    |at, key| at.get(key),
                )
                .ok_or_else(|| format!("needs {text} but the tool result has no such field"))?;
            *input = value.clone();
            Ok(())
        }
        Value::Array(values) => values
            .iter_mut()
            .try_for_each(|value| fill_templates(value, result)),
        Value::Object(fields) => fields
            .values_mut()
            .try_for_each(|value| fill_templates(value, result)),
        _ => Ok(()),
    }
}

/// Replaces each `{{result.FIELD}}` in a reaction's `text` with that field of the tool
/// result as words: a string as it is, a list joined by `, `, a missing field, null or
/// an empty list as `none`, anything else as JSON.
fn fill_text(text: &str, result: Option<&Value>) -> String {
    let mut filled = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{result.") {
        let Some(end) = rest[start..].find("}}") else {
            break;
        };
        filled.push_str(&rest[..start]);
        let path = &rest[start + "{{result.".len()..start + end];
        let value = path
            .split('.')
            .try_fold(result.unwrap_or(&Value::Null), |at, key| at.get(key));
        filled.push_str(&match value {
            None | Some(Value::Null) => "none".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(items)) if items.is_empty() => "none".to_owned(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", "),
            Some(other) => other.to_string(),
        });
        rest = &rest[start + end + 2..];
    }
    filled.push_str(rest);
    filled
}

/// About four characters a token, of the request as sent and of the answer.
fn estimated_usage(request: &ChatRequest, content: &[ContentBlock]) -> Usage {
    let asked = serde_json::to_string(request).map_or(0, |text| text.len());
    let answered = serde_json::to_string(content).map_or(0, |text| text.len());
    Usage {
        input_tokens: estimate_tokens(asked),
        output_tokens: estimate_tokens(answered),
        ..Usage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_reaction_s_text_names_fields_of_the_tool_result_in_words() {
        let result = json!({"profile": {"name": "Ada", "skills": ["Rust", "Go"], "years": 8, "email": null}});
        assert_eq!(
            fill_text(
                "{{result.profile.name}}: {{result.profile.skills}}; {{result.profile.years}} years; {{result.profile.email}}; {{result.nothing.here}}",
                Some(&result)
            ),
            "Ada: Rust, Go; 8 years; none; none"
        );
        assert_eq!(
            fill_text(
                "skills: {{result.profile.skills}}",
                Some(&json!({"profile": null}))
            ),
            "skills: none"
        );
        assert_eq!(
            fill_text("no template {{result.x", None),
            "no template {{result.x"
        );
    }
}
