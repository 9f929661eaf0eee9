//! The MCP front at `/mcp`, driven by the runtime's own MCP client: a hosted product is
//! a tool whose call runs a session and answers with its result; a runtime tool runs for
//! the caller its credential names; the auth layer guards `/mcp` as every route.
#![cfg(test)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_runtime::mcp::McpClient;
use agent_runtime::sessions::InMemorySessionStore;
use agent_runtime::{AgentContext, AgentTool, Session, ToolError, tool};
use agent_server::SessionStore as _;
use agent_server::auth::Auth;
use agent_server::mcp::{McpFront, agent_tools};
use agent_server::{AgentServer, Product, SessionHandle};
use common::{Echo, TestServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A product without gates: emits two events and shouts the text back.
struct Shout;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ShoutStart {
    /// What to shout.
    text: String,
    /// How long to think first, in milliseconds.
    #[serde(default)]
    think_ms: u64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ShoutEvent {
    Heard { stage: String },
    Shouted,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Shouted {
    shout: String,
}

#[async_trait::async_trait]
impl Product for Shout {
    type Start = ShoutStart;
    type Event = ShoutEvent;
    type Output = Shouted;
    type Error = std::io::Error;

    fn name(&self) -> &str {
        "shout"
    }

    async fn run(
        &self,
        session: SessionHandle<ShoutEvent>,
        start: ShoutStart,
    ) -> Result<Shouted, std::io::Error> {
        session.emit(&ShoutEvent::Heard {
            stage: "listening".into(),
        });
        let cancelled = session.cancellation();
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(start.think_ms)) => {}
            () = cancelled.cancelled() => {
                return Err(std::io::Error::other("cancelled"));
            }
        }
        session.emit(&ShoutEvent::Shouted);
        Ok(Shouted {
            shout: start.text.to_uppercase(),
        })
    }
}

fn whoami() -> Vec<Arc<dyn agent_server::mcp::McpCapability>> {
    let tool: Arc<dyn AgentTool<(), String>> = Arc::new(tool(
        "whoami",
        "Says whom the call is for.",
        |_: serde_json::Map<String, Value>, ctx: AgentContext<(), String>| async move {
            ctx.emit("looking".to_owned());
            Ok::<_, ToolError>(ctx.user_id().to_owned())
        },
    ));
    agent_tools(vec![tool], |owner: &str| {
        Session::new("mcp-call", ()).with_user(owner)
    })
}

async fn serve(auth: Auth) -> (TestServer, Arc<InMemorySessionStore>) {
    let store = Arc::new(InMemorySessionStore::new());
    let front = McpFront::new("test-front", "0.1.0")
        .with_product("shout", "shout", "Shouts the text back.")
        .with_product("echo", "echo", "Waits at gates: not offered.")
        .with_capabilities(whoami());
    let server = AgentServer::new(Arc::clone(&store) as Arc<dyn agent_server::SessionStore>)
        .with_product(Arc::new(Shout))
        .with_product(Arc::new(Echo::new("echo")))
        .with_auth(auth)
        .with_mcp(front);
    (TestServer::spawn(server).await, store)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_product_is_a_tool_that_answers_with_its_sessions_result() {
    let (server, _) = serve(Auth::open()).await;
    let client = McpClient::http(server.url("/mcp"));
    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(AgentTool::<(), ()>::name).collect();
    // The product with gates is not offered.
    assert_eq!(names, ["shout", "whoami"]);
    let shout = &tools[0];
    let schema = AgentTool::<(), ()>::input_schema(shout);
    assert_eq!(schema["properties"]["text"]["type"], "string", "{schema}");
    assert_eq!(schema["required"], json!(["text"]), "{schema}");

    let never = CancellationToken::new();
    let answer = shout.call(&json!({"text": "hello"}), &never).await.unwrap();
    assert_eq!(answer, json!({"shout": "HELLO"}));

    // A start request that does not fit is the call's error, which the caller reads.
    let refused = shout.call(&json!({"words": "hello"}), &never).await;
    assert!(
        matches!(&refused, Err(ToolError::Failed(message)) if message.contains("text")),
        "{refused:?}"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_cancels_its_session() {
    let (server, store) = serve(Auth::open()).await;
    let client = McpClient::http(server.url("/mcp"));
    let tools = client.list_tools().await.unwrap();
    let cancel = CancellationToken::new();
    let slow = json!({"text": "slow", "think_ms": 60_000});
    let call = tools[0].call(&slow, &cancel);
    let watch = async {
        // The call's session runs, then the call is cancelled.
        let running = loop {
            let running = store.unfinished("shout").await.unwrap();
            if !running.is_empty() {
                break running;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        cancel.cancel();
        running
    };
    let (outcome, running) = tokio::join!(call, watch);
    assert!(outcome.is_err(), "{outcome:?}");
    let id = &running[0].id;
    let started = std::time::Instant::now();
    loop {
        let record = store.get(id).await.unwrap().unwrap();
        if record.status.is_finished() {
            assert_eq!(record.status.as_str(), "cancelled");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still {record:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_are_for_the_caller_the_credential_names() {
    let auth = Auth::open().with_api_key("sk-ada", "acme", Some("ada"));
    let (server, _) = serve(auth).await;

    let stranger = McpClient::http(server.url("/mcp"));
    let refused = stranger.list_tools().await.unwrap_err();
    assert!(refused.to_string().contains("Auth required"), "{refused}");

    let ada = McpClient::http(server.url("/mcp")).with_bearer("sk-ada");
    let tools = ada.list_tools().await.unwrap();
    let whoami = tools
        .iter()
        .find(|tool| AgentTool::<(), ()>::name(*tool) == "whoami")
        .unwrap();
    let answer = whoami
        .call(&json!({}), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(answer, Value::String("acme/ada".into()));
    ada.close().await;
}
