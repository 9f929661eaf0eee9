//! Streaming: provider-neutral events and their reassembly into a [`ChatResponse`].

use crate::error::LlmError;
use crate::types::{ChatResponse, ContentBlock, StopReason, Usage};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;
use std::collections::BTreeMap;

/// One event of a streamed answer.
///
/// `index` is the position of the content block the event belongs to, so text and tool
/// calls interleave in the order the model produced them.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// The answer started.
    MessageStart {
        /// Response id.
        id: String,
        /// The model that answers.
        model: String,
    },
    /// More text for the text block at `index`.
    TextDelta {
        /// Block position.
        index: usize,
        /// The new text.
        text: String,
    },
    /// More thinking text (Anthropic extended thinking).
    ThinkingDelta {
        /// Block position.
        index: usize,
        /// The new thinking text.
        thinking: String,
        /// The block's signature, when it arrives.
        signature: Option<String>,
    },
    /// A tool call begins.
    ToolUseStart {
        /// Block position.
        index: usize,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolUseDelta {
        /// Block position.
        index: usize,
        /// The fragment; the fragments of one call concatenate to its arguments.
        partial_json: String,
    },
    /// A provider-specific block arrived whole.
    OpaqueBlock {
        /// Block position.
        index: usize,
        /// The block verbatim.
        raw: Value,
    },
    /// Token counts so far: each event replaces the previous one.
    Usage(Usage),
    /// The model stopped.
    Stop(StopReason),
}

/// A stream of events, as returned by [`crate::ChatModel::chat_stream`].
pub type ChatStream = BoxStream<'static, Result<StreamEvent, LlmError>>;

#[derive(Debug)]
enum PartialBlock {
    Text(String),
    Thinking {
        thinking: String,
        signature: Option<String>,
    },
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Opaque(Value),
}

/// Rebuilds a [`ChatResponse`] from stream events.
///
/// ```
/// use agent_llm::{StreamAccumulator, StreamEvent, StopReason};
/// let mut acc = StreamAccumulator::default();
/// acc.push(StreamEvent::TextDelta { index: 0, text: "Hel".into() });
/// acc.push(StreamEvent::TextDelta { index: 0, text: "lo".into() });
/// acc.push(StreamEvent::Stop(StopReason::EndTurn));
/// let response = acc.finish().unwrap();
/// assert_eq!(response.text(), "Hello");
/// ```
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    id: String,
    model: String,
    blocks: BTreeMap<usize, PartialBlock>,
    usage: Usage,
    stop: Option<StopReason>,
}

impl StreamAccumulator {
    /// Adds one event.
    pub fn push(&mut self, event: StreamEvent) {
        match event {
            StreamEvent::MessageStart { id, model } => {
                self.id = id;
                self.model = model;
            }
            StreamEvent::TextDelta { index, text } => {
                match self
                    .blocks
                    .entry(index)
                    .or_insert_with(|| PartialBlock::Text(String::new()))
                {
                    PartialBlock::Text(buffer) => buffer.push_str(&text),
                    other => tracing::warn!(index, ?other, "text delta for a non-text block"),
                }
            }
            StreamEvent::ThinkingDelta {
                index,
                thinking,
                signature,
            } => {
                let entry = self
                    .blocks
                    .entry(index)
                    .or_insert_with(|| PartialBlock::Thinking {
                        thinking: String::new(),
                        signature: None,
                    });
                if let PartialBlock::Thinking {
                    thinking: buffer,
                    signature: sig,
                } = entry
                {
                    buffer.push_str(&thinking);
                    if signature.is_some() {
                        *sig = signature;
                    }
                }
            }
            StreamEvent::ToolUseStart { index, id, name } => {
                self.blocks.insert(
                    index,
                    PartialBlock::ToolUse {
                        id,
                        name,
                        json: String::new(),
                    },
                );
            }
            StreamEvent::ToolUseDelta {
                index,
                partial_json,
            } => match self.blocks.get_mut(&index) {
                Some(PartialBlock::ToolUse { json, .. }) => json.push_str(&partial_json),
                _ => tracing::warn!(index, "tool argument delta before its tool call started"),
            },
            StreamEvent::OpaqueBlock { index, raw } => {
                self.blocks.insert(index, PartialBlock::Opaque(raw));
            }
            StreamEvent::Usage(usage) => self.usage = usage,
            StreamEvent::Stop(reason) => self.stop = Some(reason),
        }
    }

    /// The response so far. Fails with [`LlmError::Transport`] if the stream never said
    /// why it stopped: it was cut off, as a broken connection is. Tool arguments that are
    /// not valid JSON are kept verbatim as a JSON string.
    pub fn finish(self) -> Result<ChatResponse, LlmError> {
        let stop_reason = self.stop.ok_or_else(|| {
            LlmError::Transport("the stream ended before the model said why it stopped".into())
        })?;
        let content = self
            .blocks
            .into_values()
            .map(|block| match block {
                PartialBlock::Text(text) => ContentBlock::Text { text },
                PartialBlock::Thinking {
                    thinking,
                    signature,
                } => ContentBlock::Thinking {
                    thinking,
                    signature,
                },
                PartialBlock::ToolUse { id, name, json } => ContentBlock::ToolUse {
                    id,
                    name,
                    input: parse_tool_arguments(&json),
                },
                PartialBlock::Opaque(raw) => ContentBlock::Opaque { raw },
            })
            .collect();
        Ok(ChatResponse {
            id: self.id,
            model: self.model,
            content,
            stop_reason,
            usage: self.usage,
        })
    }
}

/// Parses tool-call arguments; empty means `{}`, invalid JSON is kept as a JSON string.
pub(crate) fn parse_tool_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// Reads a whole stream and returns the response it describes.
pub async fn collect_stream(mut stream: ChatStream) -> Result<ChatResponse, LlmError> {
    let mut acc = StreamAccumulator::default();
    while let Some(event) = stream.next().await {
        acc.push(event?);
    }
    acc.finish()
}

/// The events a stream of this response would carry (used by the default
/// [`crate::ChatModel::chat_stream`]).
pub fn response_to_events(response: ChatResponse) -> Vec<StreamEvent> {
    let mut events = vec![StreamEvent::MessageStart {
        id: response.id.clone(),
        model: response.model.clone(),
    }];
    for (index, block) in response.content.into_iter().enumerate() {
        match block {
            ContentBlock::Text { text } => events.push(StreamEvent::TextDelta { index, text }),
            ContentBlock::Thinking {
                thinking,
                signature,
            } => events.push(StreamEvent::ThinkingDelta {
                index,
                thinking,
                signature,
            }),
            ContentBlock::ToolUse { id, name, input } => {
                events.push(StreamEvent::ToolUseStart { index, id, name });
                let partial_json = match input {
                    Value::String(raw) => raw,
                    other => other.to_string(),
                };
                events.push(StreamEvent::ToolUseDelta {
                    index,
                    partial_json,
                });
            }
            ContentBlock::ToolResult { .. } => {
                tracing::warn!("a model response contained a tool result block; skipped in stream")
            }
            ContentBlock::Opaque { raw } => events.push(StreamEvent::OpaqueBlock { index, raw }),
        }
    }
    events.push(StreamEvent::Usage(response.usage));
    events.push(StreamEvent::Stop(response.stop_reason));
    events
}
