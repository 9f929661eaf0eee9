//! An agent loop's prompts are cacheable by construction: each round repeats the one
//! before it from its start, Anthropic requests mark that prefix with `cache_control`,
//! and the session's meter counts the repeated share.
#![cfg(test)]

use agent_llm::{AnthropicConfig, AnthropicModel, RetryPolicy};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, CostLimits, CostMeter, Session, StopCause,
    ToolError, tool,
};
use serde_json::{Value, json};
use std::time::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

type Ctx = AgentContext<(), ()>;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    /// The company to look up.
    company: String,
}

/// A Messages API answer (the documented shape) calling `lookup`.
fn tool_use(id: &str, company: &str, input_tokens: u64) -> Value {
    json!({
        "id": format!("msg_{id}"), "type": "message", "role": "assistant",
        "model": "claude-haiku-4-5", "stop_reason": "tool_use", "stop_sequence": null,
        "content": [{"type": "tool_use", "id": id, "name": "lookup", "input": {"company": company}}],
        "usage": {"input_tokens": input_tokens, "output_tokens": 20}
    })
}

fn answer(text: &str, input_tokens: u64) -> Value {
    json!({
        "id": "msg_end", "type": "message", "role": "assistant",
        "model": "claude-haiku-4-5", "stop_reason": "end_turn", "stop_sequence": null,
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": input_tokens, "output_tokens": 30}
    })
}

/// The server answers the rounds in turn.
async fn server(answers: Vec<Value>) -> MockServer {
    let server = MockServer::start().await;
    for (round, body) in answers.into_iter().enumerate() {
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .up_to_n_times(1)
            .with_priority(u8::try_from(round + 1).unwrap())
            .mount(&server)
            .await;
    }
    server
}

fn agent(server: &MockServer) -> AgentLoop<(), (), AnthropicModel> {
    let config = AgentConfig::new(
        AgentIdentity::new("scout", "jobs"),
        "You research employers. Look each one up before you describe it.",
    )
    .with_tool(tool(
        "lookup",
        "What is known about a company.",
        |args: Lookup, _ctx: Ctx| async move {
            Ok::<_, ToolError>(format!(
                "{} builds logistics software in Berlin.",
                args.company
            ))
        },
    ))
    .with_retry(RetryPolicy::default().with_base_delay(Duration::from_millis(1)));
    let model = AnthropicModel::new(
        AnthropicConfig::new("sk-ant-test")
            .with_base_url(server.uri())
            .with_default_model("claude-haiku-4-5"),
    )
    .unwrap();
    AgentLoop::new(config, model)
}

/// The blocks of a sent body that carry `cache_control`, as `(where, text)`.
fn marks(body: &Value) -> Vec<String> {
    let mut marked = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        if tool.get("cache_control").is_some() {
            marked.push(format!("tool {}", tool["name"]));
        }
    }
    for block in body["system"].as_array().into_iter().flatten() {
        if block.get("cache_control").is_some() {
            marked.push("system".to_owned());
        }
    }
    for (index, message) in body["messages"].as_array().unwrap().iter().enumerate() {
        for block in message["content"].as_array().unwrap() {
            if block.get("cache_control").is_some() {
                marked.push(format!("message {index} {}", block["type"]));
            }
        }
    }
    marked
}

/// The body without its `cache_control` marks, to compare what the model reads.
fn unmarked(mut body: Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("cache_control");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut body);
    body
}

#[tokio::test]
async fn each_round_repeats_the_last_marks_it_and_the_meter_counts_the_repeat() {
    let server = server(vec![
        tool_use("toolu_1", "Fernhill", 1_000),
        tool_use("toolu_2", "Parcelwise", 1_100),
        answer("Both build logistics software in Berlin.", 1_200),
    ])
    .await;
    let meter = CostMeter::new(CostLimits::default());
    let session = Session::new("s", ()).with_meter(meter.clone());
    let result = agent(&server)
        .run(
            &session.context(AgentIdentity::new("scout", "jobs")),
            "Describe Fernhill and Parcelwise.",
        )
        .await;
    assert_eq!(result.stop, StopCause::Completed, "{result:?}");

    let bodies: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.body_json().unwrap())
        .collect();
    assert_eq!(bodies.len(), 3);
    // Tools, system and the conversation so far, every round: three marks of the four
    // the API allows, the last on the newest message.
    for (round, body) in bodies.iter().enumerate() {
        let marked = marks(body);
        assert_eq!(marked.len(), 3, "round {}: {marked:?}", round + 1);
        let last = body["messages"].as_array().unwrap().len() - 1;
        assert!(
            marked[2].starts_with(&format!("message {last} ")),
            "{marked:?}"
        );
    }
    // What the model reads of a round is the start of the next, unchanged.
    for pair in bodies.windows(2) {
        let (before, after) = (unmarked(pair[0].clone()), unmarked(pair[1].clone()));
        assert_eq!(before["tools"], after["tools"]);
        assert_eq!(before["system"], after["system"]);
        let sent = before["messages"].as_array().unwrap();
        assert_eq!(
            sent[..],
            after["messages"].as_array().unwrap()[..sent.len()]
        );
    }
    insta::assert_json_snapshot!("loop_third_round_anthropic_request", bodies[2]);

    // Round 1 has nothing before it; rounds 2 and 3 repeat all but what they add.
    let reuse = meter.snapshot().prefix_reuse;
    assert_eq!(reuse.input_tokens, 3_300);
    assert!(
        reuse.repeated_tokens > 1_100 && reuse.repeated_tokens < 2_300,
        "{reuse:?}"
    );
    // The session's checkpoint marks carry it, so a resumed run keeps counting.
    assert_eq!(session.marks().prefix_reuse, reuse);
}
