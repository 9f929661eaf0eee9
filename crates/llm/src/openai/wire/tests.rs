use super::*;
use serde_json::json;

const PLAIN: BodyOptions = BodyOptions {
    max_tokens_field: MaxTokensField::MaxCompletionTokens,
    stream: None,
    forced_tool_choice: true,
};

#[test]
fn system_prompt_and_text_messages() {
    let request = ChatRequest::new(vec![
        Message::user("Hi"),
        Message::assistant("Hello!"),
        Message::user("Bye"),
    ])
    .with_system("Be brief.")
    .with_max_tokens(50)
    .with_temperature(0.2);
    let body = chat_body(&request, "gpt-4.1-mini", PLAIN);
    assert_eq!(
        body,
        json!({
            "model": "gpt-4.1-mini",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": "Bye"},
            ],
            "max_completion_tokens": 50,
            "temperature": 0.2,
        })
    );
    let legacy = BodyOptions {
        max_tokens_field: MaxTokensField::MaxTokens,
        ..PLAIN
    };
    let body = chat_body(&request, "m", legacy);
    assert_eq!(body["max_tokens"], 50);
    assert!(body.get("max_completion_tokens").is_none());
}

#[test]
fn tool_results_come_before_text_and_errors_are_marked() {
    let user = Message::new(
        Role::User,
        vec![
            ContentBlock::text("Here you go"),
            ContentBlock::tool_result("call_1", "42"),
            ContentBlock::tool_error("call_2", "no such city"),
        ],
    );
    assert_eq!(
        messages(None, &[user]),
        vec![
            json!({"role": "tool", "tool_call_id": "call_1", "content": "42"}),
            json!({"role": "tool", "tool_call_id": "call_2", "content": "Error: no such city"}),
            json!({"role": "user", "content": "Here you go"}),
        ]
    );
}

#[test]
fn assistant_tool_calls_keep_raw_arguments_and_skip_thinking() {
    let assistant = Message::new(
        Role::Assistant,
        vec![
            ContentBlock::Thinking {
                thinking: "hmm".into(),
                signature: None,
            },
            ContentBlock::ToolUse {
                id: "a".into(),
                name: "f".into(),
                input: json!({"x": 1}),
            },
            ContentBlock::ToolUse {
                id: "b".into(),
                name: "g".into(),
                input: json!("{not json"),
            },
            ContentBlock::Opaque {
                raw: json!({"type": "server_tool"}),
            },
        ],
    );
    assert_eq!(
        messages(None, &[assistant]),
        vec![json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{not json"}},
            ],
        })]
    );
}

#[test]
fn empty_messages_are_dropped() {
    let only_thinking = Message::new(
        Role::Assistant,
        vec![ContentBlock::Thinking {
            thinking: "x".into(),
            signature: None,
        }],
    );
    let empty_user = Message::new(Role::User, vec![ContentBlock::text("")]);
    assert!(messages(Some(""), &[only_thinking, empty_user]).is_empty());
}

#[test]
fn tools_choices_stop_and_formats() {
    let tool = ToolDefinition::new("get_time", "Current time", json!({"type": "object"}));
    let base = ChatRequest::from_prompt("t").with_tool(tool);
    let choice = |c: ToolChoice| chat_body(&base.clone().with_tool_choice(c), "m", PLAIN);
    assert_eq!(choice(ToolChoice::Auto)["tool_choice"], "auto");
    assert_eq!(choice(ToolChoice::Any)["tool_choice"], "required");
    assert_eq!(choice(ToolChoice::None)["tool_choice"], "none");
    assert_eq!(
        choice(ToolChoice::Tool {
            name: "get_time".into()
        })["tool_choice"],
        json!({"type": "function", "function": {"name": "get_time"}})
    );
    assert_eq!(
        chat_body(&base, "m", PLAIN)["tools"],
        json!([{"type": "function", "function": {
            "name": "get_time", "description": "Current time", "parameters": {"type": "object"}
        }}])
    );
    // No tools: no tool_choice either.
    let no_tools = ChatRequest::from_prompt("t").with_tool_choice(ToolChoice::None);
    let body = chat_body(&no_tools, "m", PLAIN);
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());

    let mut stop = ChatRequest::from_prompt("t");
    stop.stop = vec!["END".into()];
    assert_eq!(chat_body(&stop, "m", PLAIN)["stop"], json!(["END"]));

    let format = |f: ResponseFormat| {
        chat_body(
            &ChatRequest::from_prompt("t").with_response_format(f),
            "m",
            PLAIN,
        )
    };
    assert!(
        format(ResponseFormat::Text)
            .get("response_format")
            .is_none()
    );
    assert_eq!(
        format(ResponseFormat::JsonObject)["response_format"],
        json!({"type": "json_object"})
    );
    let schema = json!({"type": "object", "properties": {}});
    assert_eq!(
        format(ResponseFormat::JsonSchema {
            name: "A".into(),
            schema: schema.clone(),
            strict: true
        })["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "A", "schema": schema, "strict": true}})
    );
}

#[test]
fn streaming_flag_and_usage_option() {
    let request = ChatRequest::from_prompt("t");
    let streamed = BodyOptions {
        stream: Some(true),
        ..PLAIN
    };
    let body = chat_body(&request, "m", streamed);
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    let without_usage = chat_body(
        &request,
        "m",
        BodyOptions {
            stream: Some(false),
            ..PLAIN
        },
    );
    assert_eq!(without_usage["stream"], true);
    assert!(without_usage.get("stream_options").is_none());
    assert!(chat_body(&request, "m", PLAIN).get("stream").is_none());
}

#[test]
fn response_text_tools_usage_and_stop() {
    let body = json!({
        "id": "c1", "model": "gpt-x",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Let me check.", "refusal": null,
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}},
                {"id": "call_b", "type": "function", "function": {"name": "g", "arguments": "{oops"}},
            ]}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107,
                  "prompt_tokens_details": {"cached_tokens": 64}},
    });
    let response = parse_chat_response(body).unwrap();
    assert_eq!(response.id, "c1");
    assert_eq!(response.text(), "Let me check.");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.tool_calls(),
        vec![
            ("call_a", "f", &json!({"x": 1})),
            ("call_b", "g", &json!("{oops"))
        ]
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 36,
            output_tokens: 7,
            cache_read_input_tokens: 64,
            cache_creation_input_tokens: 0
        }
    );
}

#[test]
fn finish_reasons_refusals_and_missing_choices() {
    let with = |finish: Value, message: Value| {
        parse_chat_response(
            json!({"choices": [{"index": 0, "finish_reason": finish, "message": message}]}),
        )
    };
    let text = json!({"content": "x"});
    assert_eq!(
        with(json!("stop"), text.clone()).unwrap().stop_reason,
        StopReason::EndTurn
    );
    assert_eq!(
        with(json!("length"), text.clone()).unwrap().stop_reason,
        StopReason::MaxTokens
    );
    assert_eq!(
        with(json!("content_filter"), text.clone())
            .unwrap()
            .stop_reason,
        StopReason::ContentFilter
    );
    assert_eq!(
        with(json!("function_call"), text.clone())
            .unwrap()
            .stop_reason,
        StopReason::ToolUse
    );
    assert_eq!(
        with(json!("weird"), text.clone()).unwrap().stop_reason,
        StopReason::Other("weird".into())
    );
    let refusal = with(json!("stop"), json!({"content": null, "refusal": "No."})).unwrap();
    assert_eq!(refusal.stop_reason, StopReason::Refusal);
    assert_eq!(refusal.text(), "No.");
    // A compatible server that says "stop" next to tool calls, without ids.
    let calls = json!({"content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]});
    let response = with(json!("stop"), calls).unwrap();
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.tool_calls(),
        vec![("call_0", "f", &json!({"a": 1}))]
    );
    assert!(matches!(
        parse_chat_response(json!({"id": "x", "choices": []})),
        Err(LlmError::InvalidResponse(_))
    ));
    assert!(matches!(
        parse_chat_response(json!({"choices": 3})),
        Err(LlmError::InvalidResponse(_))
    ));
    let error = json!({"error": {"message": "boom", "type": "server_error"}});
    assert!(matches!(
        parse_chat_response(error),
        Err(LlmError::Server { .. })
    ));
}

#[test]
fn deepseek_cache_hits_count_as_cache_reads() {
    let usage: WireUsage = serde_json::from_value(json!({
        "prompt_tokens": 50, "completion_tokens": 5, "prompt_cache_hit_tokens": 40, "prompt_cache_miss_tokens": 10
    }))
    .unwrap();
    assert_eq!(usage.to_usage().input_tokens, 10);
    assert_eq!(usage.to_usage().cache_read_input_tokens, 40);
}

#[test]
fn embeddings_request_and_out_of_order_response() {
    let request = EmbeddingRequest {
        model: None,
        inputs: vec!["a".into(), "b".into()],
        dimensions: Some(3),
    };
    assert_eq!(
        embedding_body(&request, "text-embedding-3-small"),
        json!({"model": "text-embedding-3-small", "input": ["a", "b"], "encoding_format": "float", "dimensions": 3})
    );
    let body = json!({
        "object": "list", "model": "text-embedding-3-small",
        "data": [
            {"object": "embedding", "index": 1, "embedding": [0.5, 0.25]},
            {"object": "embedding", "index": 0, "embedding": [1.0, -1.0]},
        ],
        "usage": {"prompt_tokens": 2, "total_tokens": 2},
    });
    let response = parse_embeddings(body, 2, "x").unwrap();
    assert_eq!(response.vectors, vec![vec![1.0, -1.0], vec![0.5, 0.25]]);
    assert_eq!(response.usage.input_tokens, 2);
    let short = json!({"data": [{"index": 0, "embedding": [1.0]}]});
    assert!(matches!(
        parse_embeddings(short, 2, "x"),
        Err(LlmError::InvalidResponse(_))
    ));
}

#[test]
fn base64_embeddings_decode_as_little_endian_floats() {
    // 1.0f32 = 00 00 80 3F, -2.0f32 = 00 00 00 C0.
    assert_eq!(decode_base64_f32("AACAPwAAAMA=").unwrap(), vec![1.0, -2.0]);
    assert!(decode_base64_f32("AAA*").is_err());
    assert!(decode_base64_f32("AAAA").is_err());
}

#[test]
fn auto_only_servers_get_auto_or_no_tools() {
    let auto_only = BodyOptions {
        forced_tool_choice: false,
        ..PLAIN
    };
    let tool = ToolDefinition::new("t", "T", json!({"type": "object", "properties": {}}));
    let forced = ChatRequest::from_prompt("q")
        .with_tool(tool.clone())
        .with_tool_choice(ToolChoice::Tool { name: "t".into() });
    let body = chat_body(&forced, "glm-4.7", auto_only);
    assert_eq!(body["tool_choice"], json!("auto"));
    assert_eq!(body["tools"][0]["function"]["name"], "t");
    let none = ChatRequest::from_prompt("q")
        .with_tool(tool)
        .with_tool_choice(ToolChoice::None);
    let body = chat_body(&none, "glm-4.7", auto_only);
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    assert_eq!(
        chat_body(&none, "gpt-4.1", PLAIN)["tool_choice"],
        json!("none")
    );
}

#[test]
fn reasoning_content_is_kept_as_thinking() {
    let body = json!({
        "id": "c1", "model": "glm-4.7",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    });
    let response = parse_chat_response(body).unwrap();
    assert_eq!(
        response.content[0],
        ContentBlock::Thinking {
            thinking: "2+2=4".into(),
            signature: None
        }
    );
    assert_eq!(response.text(), "4");
}
