use super::*;
use crate::stream::StreamAccumulator;
use crate::types::{ContentBlock, Usage};
use serde_json::json;

fn chunk(choices: Value) -> String {
    json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-x", "choices": choices})
        .to_string()
}

fn delta(delta: Value, finish: Value) -> String {
    chunk(json!([{"index": 0, "delta": delta, "finish_reason": finish}]))
}

fn run(payloads: &[String]) -> Vec<StreamEvent> {
    let mut decoder = ChunkDecoder::default();
    let mut events = Vec::new();
    for payload in payloads {
        events.extend(decoder.push(payload).unwrap());
    }
    events.extend(decoder.finish());
    events
}

fn collect(events: Vec<StreamEvent>) -> crate::types::ChatResponse {
    let mut acc = StreamAccumulator::default();
    events.into_iter().for_each(|e| acc.push(e));
    acc.finish().unwrap()
}

#[test]
fn text_then_stop_then_usage_chunk() {
    let usage_chunk = json!({"id": "c1", "model": "gpt-x", "choices": [],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}})
    .to_string();
    let events = run(&[
        delta(json!({"role": "assistant", "content": ""}), Value::Null),
        delta(json!({"content": "Hel"}), Value::Null),
        delta(json!({"content": "lo"}), Value::Null),
        delta(json!({}), json!("stop")),
        usage_chunk,
        "[DONE]".into(),
    ]);
    let usage = Usage {
        input_tokens: 9,
        output_tokens: 2,
        ..Usage::default()
    };
    assert_eq!(
        events,
        vec![
            StreamEvent::MessageStart {
                id: "c1".into(),
                model: "gpt-x".into()
            },
            StreamEvent::TextDelta {
                index: 1,
                text: "Hel".into()
            },
            StreamEvent::TextDelta {
                index: 1,
                text: "lo".into()
            },
            StreamEvent::Usage(usage),
            StreamEvent::Stop(StopReason::EndTurn),
        ]
    );
}

#[test]
fn parallel_tool_calls_get_their_own_blocks() {
    let call = |index: usize, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut function = json!({"arguments": args});
        if let Some(name) = name {
            function["name"] = json!(name);
        }
        let mut tc = json!({"index": index, "function": function});
        if let Some(id) = id {
            tc["id"] = json!(id);
            tc["type"] = json!("function");
        }
        delta(json!({"tool_calls": [tc]}), Value::Null)
    };
    let events = run(&[
        delta(json!({"role": "assistant", "content": null}), Value::Null),
        call(0, Some("call_a"), Some("weather"), ""),
        call(0, None, None, "{\"city\":"),
        call(0, None, None, "\"Paris\"}"),
        call(1, Some("call_b"), Some("stock"), ""),
        call(1, None, None, "{\"t\":\"X\"}"),
        delta(json!({}), json!("tool_calls")),
        "[DONE]".into(),
    ]);
    assert_eq!(
        events[1],
        StreamEvent::ToolUseStart {
            index: 2,
            id: "call_a".into(),
            name: "weather".into()
        }
    );
    assert_eq!(
        events[2],
        StreamEvent::ToolUseDelta {
            index: 2,
            partial_json: "{\"city\":".into()
        }
    );
    assert_eq!(
        events[4],
        StreamEvent::ToolUseStart {
            index: 3,
            id: "call_b".into(),
            name: "stock".into()
        }
    );
    let response = collect(events);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.tool_calls(),
        vec![
            ("call_a", "weather", &json!({"city": "Paris"})),
            ("call_b", "stock", &json!({"t": "X"}))
        ]
    );
}

#[test]
fn arguments_before_the_name_are_held_back() {
    let events = run(&[
        delta(
            json!({"tool_calls": [{"index": 0, "id": "call_x", "function": {"arguments": "{\"a\""}}]}),
            Value::Null,
        ),
        delta(
            json!({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": ":1}"}}]}),
            Value::Null,
        ),
        delta(json!({}), json!("stop")),
    ]);
    assert_eq!(
        events[1..4],
        [
            StreamEvent::ToolUseStart {
                index: 2,
                id: "call_x".into(),
                name: "f".into()
            },
            StreamEvent::ToolUseDelta {
                index: 2,
                partial_json: "{\"a\"".into()
            },
            StreamEvent::ToolUseDelta {
                index: 2,
                partial_json: ":1}".into()
            },
        ]
    );
    // "stop" with tool calls is reported as a tool-use stop.
    assert_eq!(events.last(), Some(&StreamEvent::Stop(StopReason::ToolUse)));
}

#[test]
fn calls_without_index_or_id_are_told_apart() {
    let whole = |id: &str, name: &str| {
        delta(
            json!({"tool_calls": [{"id": id, "function": {"name": name, "arguments": "{}"}}]}),
            Value::Null,
        )
    };
    let events = run(&[
        whole("a", "f"),
        whole("b", "g"),
        delta(json!({}), json!("tool_calls")),
    ]);
    let response = collect(events);
    let names: Vec<_> = response
        .tool_calls()
        .into_iter()
        .map(|(id, name, _)| (id, name))
        .collect();
    assert_eq!(names, vec![("a", "f"), ("b", "g")]);
    let no_id = run(&[
        delta(
            json!({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]}),
            Value::Null,
        ),
        delta(json!({}), json!("tool_calls")),
    ]);
    assert_eq!(
        no_id[1],
        StreamEvent::ToolUseStart {
            index: 2,
            id: "call_0".into(),
            name: "f".into()
        }
    );
}

#[test]
fn refusal_deltas_are_text_and_stop_as_refusal() {
    let events = run(&[
        delta(
            json!({"role": "assistant", "content": null, "refusal": ""}),
            Value::Null,
        ),
        delta(json!({"refusal": "I can't"}), Value::Null),
        delta(json!({"refusal": " help."}), Value::Null),
        delta(json!({}), json!("stop")),
        "[DONE]".into(),
    ]);
    let response = collect(events);
    assert_eq!(response.text(), "I can't help.");
    assert_eq!(response.stop_reason, StopReason::Refusal);
}

#[test]
fn length_and_content_filter() {
    let stop = |reason: &str| run(&[delta(json!({"content": "x"}), json!(reason))]).pop();
    assert_eq!(
        stop("length"),
        Some(StreamEvent::Stop(StopReason::MaxTokens))
    );
    assert_eq!(
        stop("content_filter"),
        Some(StreamEvent::Stop(StopReason::ContentFilter))
    );
}

#[test]
fn error_chunks_and_garbage_are_errors() {
    let mut decoder = ChunkDecoder::default();
    let error = json!({"error": {"message": "The server had an error", "type": "server_error"}})
        .to_string();
    assert!(matches!(decoder.push(&error), Err(LlmError::Server { .. })));
    let rate = json!({"error": {"message": "slow", "type": "rate_limit_error"}}).to_string();
    assert!(matches!(
        ChunkDecoder::default().push(&rate),
        Err(LlmError::RateLimited { .. })
    ));
    assert!(matches!(
        ChunkDecoder::default().push("{not json"),
        Err(LlmError::InvalidResponse(_))
    ));
}

#[test]
fn cut_off_stream_has_no_stop() {
    let events = run(&[delta(json!({"content": "partial"}), Value::Null)]);
    let mut acc = StreamAccumulator::default();
    events.into_iter().for_each(|e| acc.push(e));
    // Cut off as a broken connection is: an outage, retried and waited out.
    let error = acc.finish().unwrap_err();
    assert!(matches!(error, LlmError::Transport(_)), "{error:?}");
    assert!(error.is_outage());
}

#[test]
fn payloads_after_done_and_other_choices_are_ignored() {
    let mut decoder = ChunkDecoder::default();
    decoder
        .push(&delta(json!({"content": "a"}), json!("stop")))
        .unwrap();
    assert_eq!(
        decoder.push("[DONE]").unwrap(),
        vec![StreamEvent::Stop(StopReason::EndTurn)]
    );
    assert!(decoder.is_done());
    assert!(
        decoder
            .push(&delta(json!({"content": "late"}), Value::Null))
            .unwrap()
            .is_empty()
    );
    assert!(decoder.finish().is_empty());
    let second_choice =
        chunk(json!([{"index": 1, "delta": {"content": "other"}, "finish_reason": null}]));
    let events = ChunkDecoder::default().push(&second_choice).unwrap();
    assert_eq!(events.len(), 1, "only MessageStart: {events:?}");
}

#[tokio::test]
async fn event_stream_ends_after_first_error() {
    let sse = futures::stream::iter(vec![
        Ok(Event {
            data: delta(json!({"content": "a"}), Value::Null),
            ..Event::default()
        }),
        Ok(Event {
            data: "{broken".into(),
            ..Event::default()
        }),
        Ok(Event {
            data: delta(json!({"content": "b"}), Value::Null),
            ..Event::default()
        }),
    ]);
    let items: Vec<_> = event_stream(sse).collect().await;
    assert_eq!(items.len(), 3);
    assert!(items[2].is_err());
    let whole = futures::stream::iter(vec![Ok(Event {
        data: delta(json!({"content": "hi"}), json!("stop")),
        ..Event::default()
    })]);
    let response = crate::stream::collect_stream(event_stream(whole))
        .await
        .unwrap();
    assert_eq!(response.content, vec![ContentBlock::text("hi")]);
}

#[test]
fn reasoning_content_becomes_a_thinking_block_before_the_text() {
    let mut decoder = ChunkDecoder::default();
    let mut acc = crate::StreamAccumulator::default();
    for data in [
        r#"{"id":"c1","model":"deepseek-reasoner","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Two plus "}}]}"#,
        r#"{"id":"c1","model":"deepseek-reasoner","choices":[{"index":0,"delta":{"reasoning_content":"two."}}]}"#,
        r#"{"id":"c1","model":"deepseek-reasoner","choices":[{"index":0,"delta":{"content":"4"},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ] {
        for event in decoder.push(data).unwrap() {
            acc.push(event);
        }
    }
    let response = acc.finish().unwrap();
    assert_eq!(
        response.content,
        vec![
            crate::ContentBlock::Thinking {
                thinking: "Two plus two.".into(),
                signature: None
            },
            crate::ContentBlock::text("4"),
        ]
    );
}
