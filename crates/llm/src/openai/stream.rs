//! Streamed Chat Completions: `chat.completion.chunk` payloads turned into [`StreamEvent`]s.
//!
//! [`ChunkDecoder`] is a small state machine fed one SSE `data:` payload at a time, so it
//! can be tested without HTTP. Block indexes: reasoning text (DeepSeek, GLM) is block 0,
//! the text (and any refusal) is block 1, and the tool call with wire index `i` is block
//! `2 + i`.

use super::wire::{WireUsage, adjust_stop, fallback_call_id, stop_reason};
use crate::error::LlmError;
use crate::http::{Vendor, error_from_event};
use crate::stream::{ChatStream, StreamEvent};
use crate::types::StopReason;
use eventsource_stream::Event;
use futures::{Stream, StreamExt};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};

/// Block index of reasoning text.
const THINKING_BLOCK: usize = 0;
/// Block index of the answer text.
const TEXT_BLOCK: usize = 1;
/// Block index of the tool call with wire index 0.
const FIRST_TOOL_BLOCK: usize = 2;

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallChunk>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallChunk {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionChunk>,
}

#[derive(Debug, Default, Deserialize)]
struct FunctionChunk {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// A tool call being streamed: it is announced once its name is known; argument
/// fragments that arrive before that are held back.
#[derive(Debug, Default)]
struct ToolSlot {
    id: Option<String>,
    started: bool,
    pending: String,
}

/// Turns the `data:` payloads of one streamed chat completion into events.
///
/// `Stop` is held back until `[DONE]` (or [`ChunkDecoder::finish`]) so it comes after the
/// final usage chunk and is always the last event. A stream that never sent a
/// `finish_reason` yields no `Stop`, which [`crate::StreamAccumulator::finish`] reports.
#[derive(Debug, Default)]
pub(crate) struct ChunkDecoder {
    started: bool,
    refused: bool,
    tools: BTreeMap<usize, ToolSlot>,
    stop: Option<StopReason>,
    done: bool,
}

impl ChunkDecoder {
    /// Whether `[DONE]` arrived; later payloads are ignored.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Reads one `data:` payload.
    pub(crate) fn push(&mut self, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        let data = data.trim();
        if self.done || data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            return Ok(self.finish());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            LlmError::InvalidResponse(format!("unreadable chat completion chunk: {e}"))
        })?;
        if chunk.error.as_ref().is_some_and(|e| !e.is_null()) {
            return Err(error_from_event(Vendor::OpenAi, data));
        }
        let mut events = Vec::new();
        if !self.started {
            self.started = true;
            events.push(StreamEvent::MessageStart {
                id: chunk.id.unwrap_or_default(),
                model: chunk.model.unwrap_or_default(),
            });
        }
        for choice in chunk
            .choices
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.index == 0)
        {
            let delta = choice.delta.unwrap_or_default();
            if let Some(thinking) = delta.reasoning_content.filter(|t| !t.is_empty()) {
                events.push(StreamEvent::ThinkingDelta {
                    index: THINKING_BLOCK,
                    thinking,
                    signature: None,
                });
            }
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                events.push(StreamEvent::TextDelta {
                    index: TEXT_BLOCK,
                    text,
                });
            }
            if let Some(text) = delta.refusal.filter(|t| !t.is_empty()) {
                self.refused = true;
                events.push(StreamEvent::TextDelta {
                    index: TEXT_BLOCK,
                    text,
                });
            }
            for call in delta.tool_calls.unwrap_or_default() {
                self.tool_call(call, &mut events);
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.stop = Some(stop_reason(&reason));
            }
        }
        if let Some(usage) = chunk.usage {
            events.push(StreamEvent::Usage(usage.to_usage()));
        }
        Ok(events)
    }

    fn tool_call(&mut self, call: ToolCallChunk, events: &mut Vec<StreamEvent>) {
        let slot_index = match call.index {
            Some(index) => index,
            // Servers that omit `index` send each call whole: a new id is a new call.
            None => {
                let known = call.id.as_ref().and_then(|id| {
                    self.tools
                        .iter()
                        .find(|(_, s)| s.id.as_ref() == Some(id))
                        .map(|(i, _)| *i)
                });
                match (known, call.id.is_some()) {
                    (Some(index), _) => index,
                    (None, true) => self.tools.len(),
                    (None, false) => self.tools.len().saturating_sub(1),
                }
            }
        };
        let block = FIRST_TOOL_BLOCK + slot_index;
        let slot = self.tools.entry(slot_index).or_default();
        if slot.id.is_none() {
            slot.id = call.id.filter(|id| !id.is_empty());
        }
        let function = call.function.unwrap_or_default();
        if !slot.started
            && let Some(name) = function.name.filter(|n| !n.is_empty())
        {
            slot.started = true;
            let id = slot
                .id
                .clone()
                .unwrap_or_else(|| fallback_call_id(slot_index));
            events.push(StreamEvent::ToolUseStart {
                index: block,
                id,
                name,
            });
            if !slot.pending.is_empty() {
                let partial_json = std::mem::take(&mut slot.pending);
                events.push(StreamEvent::ToolUseDelta {
                    index: block,
                    partial_json,
                });
            }
        }
        if let Some(fragment) = function.arguments.filter(|a| !a.is_empty()) {
            if slot.started {
                events.push(StreamEvent::ToolUseDelta {
                    index: block,
                    partial_json: fragment,
                });
            } else {
                slot.pending.push_str(&fragment);
            }
        }
    }

    /// Ends the stream: announces tool calls whose name never came (with an empty name)
    /// and emits the held-back `Stop`. Called on `[DONE]` or when the body ends.
    pub(crate) fn finish(&mut self) -> Vec<StreamEvent> {
        if self.done {
            return Vec::new();
        }
        self.done = true;
        let mut events = Vec::new();
        for (slot_index, slot) in &mut self.tools {
            if slot.started {
                continue;
            }
            tracing::warn!(slot_index, "streamed tool call without a name");
            let index = FIRST_TOOL_BLOCK + slot_index;
            let id = slot
                .id
                .clone()
                .unwrap_or_else(|| fallback_call_id(*slot_index));
            events.push(StreamEvent::ToolUseStart {
                index,
                id,
                name: String::new(),
            });
            let partial_json = std::mem::take(&mut slot.pending);
            events.push(StreamEvent::ToolUseDelta {
                index,
                partial_json,
            });
        }
        if let Some(reason) = self.stop.take() {
            events.push(StreamEvent::Stop(adjust_stop(
                reason,
                self.refused,
                !self.tools.is_empty(),
            )));
        }
        events
    }
}

/// Turns an SSE stream of chat completion chunks into a [`ChatStream`]. The stream ends
/// after `[DONE]`, at the end of the body, or after the first error.
pub(crate) fn event_stream<S>(sse: S) -> ChatStream
where
    S: Stream<Item = Result<Event, LlmError>> + Send + 'static,
{
    struct State {
        sse: futures::stream::BoxStream<'static, Result<Event, LlmError>>,
        decoder: ChunkDecoder,
        queue: VecDeque<Result<StreamEvent, LlmError>>,
        ended: bool,
    }
    let state = State {
        sse: sse.boxed(),
        decoder: ChunkDecoder::default(),
        queue: VecDeque::new(),
        ended: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.queue.pop_front() {
                return Some((item, state));
            }
            if state.ended {
                return None;
            }
            match state.sse.next().await {
                Some(Ok(event)) => match state.decoder.push(&event.data) {
                    Ok(events) => {
                        state.queue.extend(events.into_iter().map(Ok));
                        state.ended = state.decoder.is_done();
                    }
                    Err(error) => {
                        state.queue.push_back(Err(error));
                        state.ended = true;
                    }
                },
                Some(Err(error)) => {
                    state.queue.push_back(Err(error));
                    state.ended = true;
                }
                None => {
                    state
                        .queue
                        .extend(state.decoder.finish().into_iter().map(Ok));
                    state.ended = true;
                }
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests;
