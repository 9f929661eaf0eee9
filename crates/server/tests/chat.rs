//! The OpenAI-compatible front, over real HTTP on loopback: auth, whole answers, the
//! streaming format chunk by chunk, errors before and during a stream, conversations
//! continued from the last message alone, and a client that goes away.
#![cfg(test)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_runtime::documents::InMemoryDocumentStore;
use agent_runtime::sessions::InMemorySessionStore;
use agent_server::AgentServer;
use agent_server::auth::{Auth, Rate};
use agent_server::chat::{
    ChatAgent, ChatAgentError, ChatFront, ChatProgress, ChatReply, ChatRole, ChatTurn, ChatUsage,
    FinishReason,
};
use agent_server::testing::{SseReader, TestServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Answers by model: `echo` says how many messages it saw and the last one, after two
/// progress notes; `fails` fails; `slow` waits until cancelled.
#[derive(Default)]
struct Scripted {
    turns: Mutex<Vec<ChatTurn>>,
    cancelled: CancellationToken,
}

#[async_trait::async_trait]
impl ChatAgent for Scripted {
    fn models(&self) -> Vec<String> {
        vec!["echo".into(), "fails".into(), "slow".into()]
    }

    async fn reply(
        &self,
        turn: ChatTurn,
        progress: ChatProgress,
    ) -> Result<ChatReply, ChatAgentError> {
        self.turns.lock().unwrap().push(turn.clone());
        match turn.model.as_str() {
            "fails" => {
                progress.note("> working");
                Err(ChatAgentError::Unavailable(
                    "the model server is down".into(),
                ))
            }
            "slow" => {
                // Work the turn started elsewhere sees the turn's cancellation.
                let (turn_token, seen) = (turn.cancellation.clone(), self.cancelled.clone());
                tokio::spawn(async move {
                    turn_token.cancelled().await;
                    seen.cancel();
                });
                progress.note("> waiting");
                std::future::pending().await
            }
            _ => {
                progress.note("> routing: job search");
                progress.note("> search_jobs …");
                let last = turn.messages.last().unwrap();
                assert_eq!(last.role, ChatRole::User);
                Ok(ChatReply {
                    text: format!("{} messages; last: {}", turn.messages.len(), last.content),
                    usage: ChatUsage {
                        prompt_tokens: 12,
                        completion_tokens: 5,
                    },
                    finish: FinishReason::Stop,
                })
            }
        }
    }
}

async fn serve(keys: &[&str]) -> (TestServer, Arc<Scripted>) {
    let agent = Arc::new(Scripted::default());
    let front = ChatFront::new(agent.clone(), Arc::new(InMemoryDocumentStore::default()))
        .with_api_keys(keys.iter().copied())
        .with_keep_alive(Duration::from_millis(100));
    let server = AgentServer::new(Arc::new(InMemorySessionStore::new())).with_chat(front);
    (TestServer::spawn(server).await, agent)
}

async fn post(server: &TestServer, body: Value, key: Option<&str>) -> reqwest::Response {
    let mut request = server
        .client
        .post(server.url("/v1/chat/completions"))
        .json(&body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    request.send().await.unwrap()
}

fn hello(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hello"}]})
}

#[tokio::test]
async fn keys_are_required_once_set_and_errors_have_the_official_shape() {
    let (server, _) = serve(&["sk-one", "sk-two"]).await;

    let missing = post(&server, hello("echo"), None).await;
    assert_eq!(missing.status(), 401);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("API key")
    );
    assert_eq!(
        body["error"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["code", "message", "param", "type"]
    );

    let wrong = post(&server, hello("echo"), Some("sk-three")).await;
    assert_eq!(wrong.status(), 401);
    assert_eq!(
        wrong.json::<Value>().await.unwrap()["error"]["code"],
        "invalid_api_key"
    );

    let models = server
        .client
        .get(server.url("/v1/models"))
        .bearer_auth("sk-two")
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), 200);
    let models: Value = models.json().await.unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "echo");
    assert_eq!(models["data"][0]["object"], "model");

    let unknown = post(&server, hello("gpt-9"), Some("sk-one")).await;
    assert_eq!(unknown.status(), 404);
    let body: Value = unknown.json().await.unwrap();
    assert_eq!(body["error"]["code"], "model_not_found");

    let bad = post(
        &server,
        json!({"model": "echo", "messages": [{"role": "user", "content": 3}]}),
        Some("sk-one"),
    )
    .await;
    assert_eq!(bad.status(), 400);
    assert_eq!(
        bad.json::<Value>().await.unwrap()["error"]["param"],
        "messages[0].content"
    );

    let garbled = server
        .client
        .post(server.url("/v1/chat/completions"))
        .bearer_auth("sk-one")
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(garbled.status(), 400);
    assert_eq!(
        garbled.json::<Value>().await.unwrap()["error"]["type"],
        "invalid_request_error"
    );
}

#[tokio::test]
async fn a_whole_answer_has_the_completion_shape_without_progress() {
    let (server, _) = serve(&[]).await;
    let response = post(&server, hello("echo"), None).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(body["object"], "chat.completion");
    assert!(body["created"].as_i64().unwrap() > 1_700_000_000);
    assert_eq!(body["model"], "echo");
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "1 messages; last: hello");
    assert_eq!(choice["finish_reason"], "stop");
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17})
    );

    let failed = post(&server, hello("fails"), None).await;
    assert_eq!(failed.status(), 503);
    // The turn may have done work: clients that retry server errors must not.
    assert_eq!(failed.headers()["x-should-retry"], "false");
    let body: Value = failed.json().await.unwrap();
    assert_eq!(body["error"]["type"], "server_error");
    assert_eq!(body["error"]["message"], "the model server is down");
}

async fn stream(server: &TestServer, mut body: Value) -> Vec<String> {
    body["stream"] = json!(true);
    let response = post(server, body, None).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    SseReader::new(response).data_messages().await
}

fn chunks(messages: &[String]) -> Vec<Value> {
    assert_eq!(
        messages.last().unwrap(),
        "[DONE]",
        "a stream ends with [DONE]"
    );
    messages[..messages.len() - 1]
        .iter()
        .map(|m| serde_json::from_str(m).unwrap())
        .collect()
}

#[tokio::test]
async fn a_stream_follows_the_official_format_chunk_by_chunk() {
    let (server, _) = serve(&[]).await;
    let mut body = hello("echo");
    body["stream_options"] = json!({"include_usage": true});
    let chunks = chunks(&stream(&server, body).await);

    let (id, created) = (chunks[0]["id"].clone(), chunks[0]["created"].clone());
    assert!(id.as_str().unwrap().starts_with("chatcmpl-"));
    for chunk in &chunks {
        assert_eq!(chunk["id"], id, "one id for the whole stream");
        assert_eq!(
            chunk["created"], created,
            "one created for the whole stream"
        );
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "echo");
    }
    let (usage_chunk, choice_chunks) = chunks.split_last().unwrap();
    assert_eq!(choice_chunks[0]["choices"][0]["delta"]["role"], "assistant");
    for chunk in choice_chunks {
        assert_eq!(
            chunk["usage"],
            Value::Null,
            "usage is null until the last chunk"
        );
        assert_eq!(chunk["choices"].as_array().unwrap().len(), 1);
    }
    let text: String = choice_chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(
        text,
        "> routing: job search\n> search_jobs …\n\n1 messages; last: hello"
    );
    let (last, before) = choice_chunks.split_last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(last["choices"][0]["delta"], json!({}));
    for chunk in before {
        assert_eq!(chunk["choices"][0]["finish_reason"], Value::Null);
    }
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(
        usage_chunk["usage"],
        json!({"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17})
    );
}

#[tokio::test]
async fn without_include_usage_no_chunk_carries_usage() {
    let (server, _) = serve(&[]).await;
    let chunks = chunks(&stream(&server, hello("echo")).await);
    for chunk in &chunks {
        assert!(chunk.get("usage").is_none(), "{chunk}");
        assert_eq!(chunk["choices"].as_array().unwrap().len(), 1);
    }
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
}

#[tokio::test]
async fn a_failure_during_a_stream_is_an_error_event_then_done() {
    let (server, _) = serve(&[]).await;
    let messages = stream(&server, hello("fails")).await;
    let chunks = chunks(&messages);
    let error = chunks.last().unwrap();
    assert_eq!(error["error"]["message"], "the model server is down");
    assert_eq!(error["error"]["type"], "server_error");
    assert_eq!(
        chunks[1]["choices"][0]["delta"]["content"], "> working\n",
        "progress came before the failure"
    );
}

#[tokio::test]
async fn a_conversation_continues_from_its_last_message_alone() {
    let (server, agent) = serve(&[]).await;
    let send = |text: &str, conversation: &str| {
        server
            .client
            .post(server.url("/v1/chat/completions"))
            .header("X-Conversation-Id", conversation)
            .json(&json!({"model": "echo", "messages": [{"role": "user", "content": text}], "user": "ada"}))
            .send()
    };
    send("find jobs", "c1").await.unwrap();
    let second: Value = send("save the first", "c1")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        second["choices"][0]["message"]["content"],
        "3 messages; last: save the first"
    );
    // Streamed turns are kept too, without their progress.
    let mut body = json!({"model": "echo", "messages": [{"role": "user", "content": "rank them"}], "user": "ada"});
    body["stream"] = json!(true);
    let response = server
        .client
        .post(server.url("/v1/chat/completions"))
        .header("X-Conversation-Id", "c1")
        .json(&body)
        .send()
        .await
        .unwrap();
    SseReader::new(response).data_messages().await;
    let other: Value = send("hi", "c2").await.unwrap().json().await.unwrap();
    assert_eq!(
        other["choices"][0]["message"]["content"],
        "1 messages; last: hi"
    );

    let turns = agent.turns.lock().unwrap();
    let third = &turns[2];
    assert_eq!(third.user, "ada");
    assert_eq!(third.conversation.as_deref(), Some("c1"));
    assert_eq!(third.messages.len(), 5);
    assert_eq!(
        third.messages[3].content,
        "3 messages; last: save the first"
    );
}

#[tokio::test]
async fn without_a_conversation_id_a_request_is_the_whole_conversation() {
    let (server, agent) = serve(&[]).await;
    let say = |text: &str| json!({"model": "echo", "messages": [{"role": "user", "content": text}], "user": "ada"});
    post(&server, say("find jobs"), None).await;
    let fresh: Value = post(&server, say("hello again"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        fresh["choices"][0]["message"]["content"],
        "1 messages; last: hello again"
    );
    assert_eq!(agent.turns.lock().unwrap()[1].conversation, None);
}

#[tokio::test]
async fn a_key_bound_to_a_user_speaks_for_that_user_only() {
    let (server, agent) = serve(&["sk-proxy", "sk-ada:ada"]).await;
    let as_user = |user: Option<&str>| {
        let mut body = hello("echo");
        if let Some(user) = user {
            body["user"] = json!(user);
        }
        body
    };
    assert_eq!(
        post(&server, as_user(None), Some("sk-ada")).await.status(),
        200
    );
    assert_eq!(
        post(&server, as_user(Some("ada")), Some("sk-ada"))
            .await
            .status(),
        200
    );
    let refused = post(&server, as_user(Some("bob")), Some("sk-ada")).await;
    assert_eq!(refused.status(), 403);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["param"], "user");
    assert_eq!(body["error"]["code"], "user_not_allowed");
    // An unbound key names whom it likes (a trusted front end).
    assert_eq!(
        post(&server, as_user(Some("bob")), Some("sk-proxy"))
            .await
            .status(),
        200
    );
    let users: Vec<String> = agent
        .turns
        .lock()
        .unwrap()
        .iter()
        .map(|turn| turn.user.clone())
        .collect();
    assert_eq!(users, ["ada", "ada", "bob"]);
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_its_turn() {
    let (server, agent) = serve(&[]).await;
    let mut body = hello("slow");
    body["stream"] = json!(true);
    let response = post(&server, body, None).await;
    let mut reader = SseReader::new(response);
    reader.next_block().await.unwrap();
    drop(reader);
    tokio::time::timeout(Duration::from_secs(10), agent.cancelled.cancelled())
        .await
        .expect("the turn was not cancelled");
}

#[test]
fn without_keys_the_front_listens_on_loopback_only() {
    let front = ChatFront::new(
        Arc::new(Scripted::default()),
        Arc::new(InMemoryDocumentStore::default()),
    );
    let anywhere = "0.0.0.0:8090".parse().unwrap();
    assert_eq!(front.bind_address(anywhere).to_string(), "127.0.0.1:8090");
    let keyed = front.with_api_keys(["k"]);
    assert_eq!(keyed.bind_address(anywhere), anywhere);
}

#[tokio::test]
async fn the_servers_auth_layer_holds_the_chat_front_too() {
    let agent = Arc::new(Scripted::default());
    let front = ChatFront::new(agent.clone(), Arc::new(InMemoryDocumentStore::default()));
    let auth = Auth::open()
        .with_api_keys("sk-acme-ada:acme:ada, sk-globex:globex")
        .unwrap()
        .with_rate_per_credential(Rate::per_minute(2));
    let server = AgentServer::new(Arc::new(InMemorySessionStore::new()))
        .with_chat(front)
        .with_auth(auth);
    let server = TestServer::spawn(server).await;

    let missing = post(&server, hello("echo"), None).await;
    assert_eq!(missing.status(), 401);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let mut as_bob = hello("echo");
    as_bob["user"] = json!("bob");
    assert_eq!(
        post(&server, as_bob.clone(), Some("sk-acme-ada"))
            .await
            .status(),
        403
    );
    assert_eq!(
        post(&server, hello("echo"), Some("sk-acme-ada"))
            .await
            .status(),
        200
    );
    assert_eq!(post(&server, as_bob, Some("sk-globex")).await.status(), 200);

    // What a product keeps, it keeps by owner: the tenant names it.
    let owners: Vec<(String, String)> = agent
        .turns
        .lock()
        .unwrap()
        .iter()
        .map(|turn| (turn.tenant.clone(), turn.owner()))
        .collect();
    assert_eq!(
        owners,
        [
            ("acme".to_owned(), "acme/ada".to_owned()),
            ("globex".to_owned(), "globex/bob".to_owned())
        ]
    );

    // The key's rate of two a minute was used by its two requests above.
    let limited = post(&server, hello("echo"), Some("sk-acme-ada")).await;
    assert_eq!(limited.status(), 429);
    assert!(limited.headers().contains_key("retry-after"));
    let body: Value = limited.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
}
