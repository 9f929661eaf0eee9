//! A recorded model for `--dry-run` and tests, reading `fixtures/resume/`:
//!
//! - `agents/<agent>.json`: `{"_meta": {input_tokens, output_tokens}, "phases": {"<phase>":
//!   [round, ...]}}`, a round being a list of `{name, input}` tool calls or `{"text": ..}`
//!   (the final answer). The agent is known by its system prompt ("You are the
//!   Strategist ..."), the phase by the opening message's `Phase:` line, the round by the
//!   assistant turns in the transcript.
//! - `llm/<Schema>.json`: `{"_meta": .., "data": answer}` or `{"_meta": .., "by_section":
//!   {"<section>": answer}}` (found by the prompt's `Section:` line), optionally with
//!   `"when": [{"contains": "text", "data": answer}]` (the first whose text is in the
//!   prompt wins): the tools' structured-output calls, by schema name. Evidence ids an
//!   answer's `bullets` cite that are not in the prompt's evidence library (`A1` when the
//!   questionnaire was turned off) are left out, and bullets left with none are dropped.
//!
//! One reaction is not recorded but derived, so any section-review answer works: when
//! `present_to_user` returns `"status": "revise"`, the model calls `revise_section` with
//! the user's feedback and then `present_to_user` again, in turns that do not count as
//! recorded rounds.

use agent_llm::testing::responses;
use agent_llm::{
    ChatModel, ChatRequest, ChatResponse, ContentBlock, LlmError, Message, ModelRouter, ModelTier,
    ProviderKind, Role, StructuredOutputMode, ToolChoice, Usage,
};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The fixtures could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("dry-run fixtures: {0}")]
pub struct DryRunError(pub String);

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct Meta {
    input_tokens: u64,
    output_tokens: u64,
}

impl Meta {
    fn usage(self) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            ..Usage::default()
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
struct RecordedCall {
    name: String,
    #[serde(default)]
    input: Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Round {
    Calls(Vec<RecordedCall>),
    Final { text: String },
}

#[derive(Debug, Clone, Deserialize)]
struct AgentScript {
    #[serde(rename = "_meta")]
    meta: Meta,
    phases: BTreeMap<String, Vec<Round>>,
}

#[derive(Debug, Clone, Deserialize)]
struct Recorded {
    #[serde(rename = "_meta")]
    meta: Meta,
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    by_section: Option<BTreeMap<String, Value>>,
    #[serde(default)]
    when: Vec<Conditional>,
}

#[derive(Debug, Clone, Deserialize)]
struct Conditional {
    contains: String,
    data: Value,
}

/// The recorded model. See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct DryRunModel {
    dir: PathBuf,
    agents: BTreeMap<String, AgentScript>,
    answers: BTreeMap<String, Recorded>,
}

fn load_dir<T: serde::de::DeserializeOwned>(
    dir: &Path,
) -> Result<BTreeMap<String, T>, DryRunError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| DryRunError(format!("cannot read {}: {e}", dir.display())))?;
    let mut out = BTreeMap::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| DryRunError(format!("cannot read {}: {e}", path.display())))?;
        let value = serde_json::from_str(&text)
            .map_err(|e| DryRunError(format!("{} is not valid: {e}", path.display())))?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.insert(name, value);
    }
    Ok(out)
}

fn invalid(message: String) -> LlmError {
    LlmError::InvalidResponse(format!("dry run: {message}"))
}

/// The value of the first `{key}: ` line of `text`.
fn line_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|line| line.trim().strip_prefix(key)?.strip_prefix(':'))
        .map(str::trim)
}

impl DryRunModel {
    /// Loads `dir/agents/*.json` and `dir/llm/*.json`.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, DryRunError> {
        let dir = dir.as_ref();
        Ok(DryRunModel {
            dir: dir.to_owned(),
            agents: load_dir(&dir.join("agents"))?,
            answers: load_dir(&dir.join("llm"))?,
        })
    }

    /// The router a dry run uses: `dry-run-<tier>` model ids (they have no price).
    pub fn router() -> ModelRouter {
        ModelTier::ALL.into_iter().fold(
            ModelRouter::for_provider(ProviderKind::Local),
            |router, tier| router.with_model(tier, format!("dry-run-{tier}")),
        )
    }

    fn structured(&self, schema: &str, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let recorded = self.answers.get(schema).ok_or_else(|| {
            invalid(format!(
                "no recorded answer llm/{schema}.json in {}",
                self.dir.display()
            ))
        })?;
        let prompt = request
            .messages
            .first()
            .map(Message::text)
            .unwrap_or_default();
        let conditional = recorded.when.iter().find(|w| prompt.contains(&w.contains));
        let mut input = match (conditional, &recorded.data, &recorded.by_section) {
            (Some(when), _, _) => when.data.clone(),
            (None, Some(data), _) => data.clone(),
            (None, None, Some(by_section)) => {
                let section = line_value(&prompt, "Section")
                    .ok_or_else(|| invalid(format!("{schema} needs a Section: line")))?;
                by_section
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case(section))
                    .map(|(_, answer)| answer.clone())
                    .ok_or_else(|| invalid(format!("{schema}.json has no answer for {section}")))?
            }
            (None, None, None) => return Err(invalid(format!("{schema}.json has no data"))),
        };
        keep_known_evidence(&mut input, &prompt);
        let mut response = responses::tool_call("toolu_dry_run", schema, input);
        response.usage = recorded.meta.usage();
        Ok(response)
    }

    fn agent_turn(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let system = request.system.clone().unwrap_or_default().to_lowercase();
        let (agent, script) = self
            .agents
            .iter()
            .find(|(name, _)| system.starts_with(&format!("you are the {name}")))
            .ok_or_else(|| invalid("no recorded agent for this system prompt".to_owned()))?;
        let opening = request
            .messages
            .first()
            .map(Message::text)
            .unwrap_or_default();
        let phase = line_value(&opening, "Phase").unwrap_or("default");
        let rounds = script
            .phases
            .get(phase)
            .ok_or_else(|| invalid(format!("agents/{agent}.json has no phase {phase}")))?;
        let turns = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        let mut response = match reaction(&request.messages) {
            Some((name, input)) => responses::tool_call(format!("react_{turns}_0"), name, input),
            None => {
                let recorded = request
                    .messages
                    .iter()
                    .filter(|m| m.role == Role::Assistant && !is_reaction(m))
                    .count();
                match rounds.get(recorded) {
                    Some(Round::Calls(calls)) => {
                        responses::tool_calls(calls.iter().enumerate().map(|(i, c)| {
                            (format!("rec_{turns}_{i}"), c.name.clone(), c.input.clone())
                        }))
                    }
                    Some(Round::Final { text }) => responses::text(text.clone()),
                    None => responses::text("Done."),
                }
            }
        };
        response.usage = script.meta.usage();
        Ok(response)
    }
}

/// Drops evidence ids the prompt's evidence library (`R1: ...` lines) does not list, and
/// bullets left with none.
fn keep_known_evidence(answer: &mut Value, prompt: &str) {
    let known: Vec<&str> = prompt
        .lines()
        .filter_map(|line| line.split_once(": ").map(|(id, _)| id.trim()))
        .filter(|id| {
            id.len() > 1
                && id.starts_with(['R', 'A'])
                && id[1..].chars().all(|c| c.is_ascii_digit())
        })
        .collect();
    let Some(bullets) = answer.get_mut("bullets").and_then(Value::as_array_mut) else {
        return;
    };
    if known.is_empty() {
        return;
    }
    for bullet in bullets.iter_mut() {
        if let Some(ids) = bullet.get_mut("evidence").and_then(Value::as_array_mut) {
            ids.retain(|id| id.as_str().is_some_and(|id| known.contains(&id)));
        }
    }
    bullets.retain(|b| b["evidence"].as_array().is_some_and(|ids| !ids.is_empty()));
}

fn is_reaction(message: &Message) -> bool {
    message
        .content
        .iter()
        .any(|block| matches!(block, ContentBlock::ToolUse { id, .. } if id.starts_with("react_")))
}

/// The derived reaction to the last tool results, if any: revise after a `revise`
/// review, present again after such a revision.
fn reaction(messages: &[Message]) -> Option<(String, Value)> {
    let (results, calls) = match messages {
        [.., call, result] if call.role == Role::Assistant && result.role == Role::User => {
            (result, call)
        }
        _ => return None,
    };
    for block in &calls.content {
        let ContentBlock::ToolUse { id, name, input } = block else {
            continue;
        };
        let output = results.content.iter().find_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error: false,
            } if tool_use_id == id => serde_json::from_str::<Value>(content).ok(),
            _ => None,
        });
        match (name.as_str(), output) {
            ("present_to_user", Some(out)) if out["status"] == "revise" => {
                return Some((
                    "revise_section".to_owned(),
                    json!({"section": out["section"], "feedback": out["feedback"]}),
                ));
            }
            ("revise_section", Some(_)) if id.starts_with("react_") => {
                return Some((
                    "present_to_user".to_owned(),
                    json!({"section": input["section"]}),
                ));
            }
            _ => {}
        }
    }
    None
}

#[async_trait]
impl ChatModel for DryRunModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut response = match &request.tool_choice {
            Some(ToolChoice::Tool { name }) => self.structured(name, request)?,
            _ => self.agent_turn(request)?,
        };
        response.model = request
            .model
            .clone()
            .unwrap_or_else(|| "dry-run".to_owned());
        response.id = "dry-run".to_owned();
        Ok(response)
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        StructuredOutputMode::ForcedTool
    }

    fn default_model(&self) -> Option<String> {
        Some("dry-run".to_owned())
    }
}
