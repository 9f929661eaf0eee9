//! Reading the Messages API event stream.

use super::wire::{block_from_wire, stop_reason_from_wire, string_field, usage_from_wire};
use crate::error::LlmError;
use crate::http::{Vendor, error_from_event};
use crate::stream::StreamEvent;
use crate::types::{ContentBlock, Usage};
use serde_json::Value;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq)]
enum BlockKind {
    Text,
    ToolUse,
    Thinking,
    Other,
}

/// Turns SSE events (`event:` name and `data:` payload) into [`StreamEvent`]s.
#[derive(Debug, Default)]
pub(crate) struct AnthropicStreamDecoder {
    blocks: HashMap<usize, BlockKind>,
    usage: Usage,
}

impl AnthropicStreamDecoder {
    /// Decodes one event. `ping` and unknown events yield nothing; `error` yields the error.
    pub(crate) fn decode(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        if event == "ping" {
            return Ok(Vec::new());
        }
        if event == "error" {
            return Err(error_from_event(Vendor::Anthropic, data));
        }
        let payload: Value = serde_json::from_str(data)
            .map_err(|e| LlmError::InvalidResponse(format!("unreadable {event} event: {e}")))?;
        // Some proxies omit the `event:` line; the payload carries the type too.
        let kind = payload.get("type").and_then(Value::as_str).unwrap_or(event);
        let index = payload.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        let mut events = Vec::new();
        match kind {
            "message_start" => {
                let message = payload.get("message").cloned().unwrap_or_default();
                events.push(StreamEvent::MessageStart {
                    id: string_field(&message, "id"),
                    model: string_field(&message, "model"),
                });
                if let Some(usage) = message.get("usage") {
                    self.usage = usage_from_wire(usage);
                    events.push(StreamEvent::Usage(self.usage));
                }
            }
            "content_block_start" => {
                let block = payload.get("content_block").cloned().unwrap_or_default();
                match block_from_wire(&block)? {
                    ContentBlock::Text { text } => {
                        self.blocks.insert(index, BlockKind::Text);
                        events.push(StreamEvent::TextDelta { index, text });
                    }
                    ContentBlock::ToolUse { id, name, .. } => {
                        self.blocks.insert(index, BlockKind::ToolUse);
                        events.push(StreamEvent::ToolUseStart { index, id, name });
                    }
                    ContentBlock::Thinking {
                        thinking,
                        signature,
                    } => {
                        self.blocks.insert(index, BlockKind::Thinking);
                        events.push(StreamEvent::ThinkingDelta {
                            index,
                            thinking,
                            signature,
                        });
                    }
                    _ => {
                        self.blocks.insert(index, BlockKind::Other);
                        events.push(StreamEvent::OpaqueBlock { index, raw: block });
                    }
                }
            }
            "content_block_delta" => {
                let delta = payload.get("delta").cloned().unwrap_or_default();
                let delta_type = delta
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let block = self.blocks.get(&index).copied();
                match (delta_type, block) {
                    ("text_delta", Some(BlockKind::Text) | None) => {
                        events.push(StreamEvent::TextDelta {
                            index,
                            text: string_field(&delta, "text"),
                        })
                    }
                    ("input_json_delta", Some(BlockKind::ToolUse)) => {
                        events.push(StreamEvent::ToolUseDelta {
                            index,
                            partial_json: string_field(&delta, "partial_json"),
                        })
                    }
                    ("thinking_delta", Some(BlockKind::Thinking)) => {
                        events.push(StreamEvent::ThinkingDelta {
                            index,
                            thinking: string_field(&delta, "thinking"),
                            signature: None,
                        })
                    }
                    ("signature_delta", Some(BlockKind::Thinking)) => {
                        events.push(StreamEvent::ThinkingDelta {
                            index,
                            thinking: String::new(),
                            signature: Some(string_field(&delta, "signature")),
                        })
                    }
                    _ => tracing::debug!(
                        index,
                        delta_type,
                        "ignoring a delta this client does not model"
                    ),
                }
            }
            "message_delta" => {
                if let Some(usage) = payload.get("usage") {
                    self.merge_usage(usage);
                    events.push(StreamEvent::Usage(self.usage));
                }
                if let Some(reason) = payload
                    .pointer("/delta/stop_reason")
                    .and_then(Value::as_str)
                {
                    events.push(StreamEvent::Stop(stop_reason_from_wire(reason)));
                }
            }
            "content_block_stop" | "message_stop" => {}
            other => tracing::debug!(event = other, "ignoring an unknown stream event"),
        }
        Ok(events)
    }

    /// `message_delta` usage is cumulative; fields it carries replace earlier ones.
    fn merge_usage(&mut self, usage: &Value) {
        let update = |field: &mut u64, name: &str| {
            if let Some(count) = usage.get(name).and_then(Value::as_u64) {
                *field = count;
            }
        };
        update(&mut self.usage.input_tokens, "input_tokens");
        update(&mut self.usage.output_tokens, "output_tokens");
        update(
            &mut self.usage.cache_read_input_tokens,
            "cache_read_input_tokens",
        );
        update(
            &mut self.usage.cache_creation_input_tokens,
            "cache_creation_input_tokens",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::StreamAccumulator;
    use crate::types::StopReason;

    fn decode_all(lines: &[(&str, &str)]) -> Result<crate::ChatResponse, LlmError> {
        let mut decoder = AnthropicStreamDecoder::default();
        let mut acc = StreamAccumulator::default();
        for (event, data) in lines {
            for e in decoder.decode(event, data)? {
                acc.push(e);
            }
        }
        acc.finish()
    }

    #[test]
    fn usage_from_message_delta_updates_start_usage() {
        let response = decode_all(&[
            ("message_start", r#"{"type":"message_start","message":{"id":"m1","model":"claude","usage":{"input_tokens":43,"output_tokens":1,"cache_read_input_tokens":7}}}"#),
            ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#),
            ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"pong"}}"#),
            ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":61,"output_tokens":2}}"#),
        ])
        .unwrap();
        assert_eq!(response.text(), "pong");
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 61,
                output_tokens: 2,
                cache_read_input_tokens: 7,
                cache_creation_input_tokens: 0
            }
        );
    }

    #[test]
    fn error_event_is_an_error() {
        let result = decode_all(&[(
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )]);
        assert!(matches!(result, Err(LlmError::Overloaded { .. })));
    }

    #[test]
    fn thinking_and_signature_are_kept() {
        let response = decode_all(&[
            ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#),
            ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#),
            ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}"#),
            ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#),
        ])
        .unwrap();
        assert_eq!(
            response.content,
            vec![ContentBlock::Thinking {
                thinking: "hmm".into(),
                signature: Some("sig".into())
            }]
        );
    }
}
