//! MCP servers' tools as runtime tools, against the reference server
//! (`@modelcontextprotocol/server-everything`, its `mcp-server-everything` command, which
//! `cargo xtask test` installs with npm) over stdio and over streamable HTTP.
#![cfg(test)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_llm::ContentBlock;
use agent_llm::testing::{ScriptedModel, responses};
use agent_runtime::mcp::{McpClient, McpTool};
use agent_runtime::{AgentConfig, AgentIdentity, AgentLoop, Session, StopCause, ToolError};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The reference server's command.
const EVERYTHING: &str = "mcp-server-everything";

fn stdio_server() -> McpClient {
    McpClient::stdio(EVERYTHING, ["stdio"])
}

/// The reference server over streamable HTTP on `port`, killed on drop.
struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    fn start_on(port: u16) -> Self {
        let child = Command::new(EVERYTHING)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mcp-server-everything runs (cargo xtask test installs it with npm)");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the MCP server did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        HttpServer { child, port }
    }

    fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        HttpServer::start_on(port)
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn find(tools: &[McpTool], name: &str) -> McpTool {
    tools
        .iter()
        .find(|tool| agent_runtime::AgentTool::<(), ()>::name(*tool) == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// The tool results the model was sent in its second request.
fn results_sent(model: &ScriptedModel) -> Vec<(String, String, bool)> {
    let second = &model.requests()[1];
    let last = second.messages.last().unwrap();
    last.content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some((tool_use_id.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

/// An agent given the server's tools calls two of them; the model reads their results.
async fn an_agent_uses_the_tools_of(client: &McpClient) {
    let tools = client.tools::<(), ()>().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
    assert!(
        names.contains(&"echo") && names.contains(&"get-sum"),
        "{names:?}"
    );
    // The schemas as the server gives them.
    let sum = tools.iter().find(|tool| tool.name() == "get-sum").unwrap();
    assert_eq!(sum.input_schema()["properties"]["a"]["type"], "number");
    assert_eq!(sum.description(), "Returns the sum of two numbers");

    let model = ScriptedModel::new(vec![
        responses::tool_calls([
            ("c1", "echo", json!({"message": "hello"})),
            ("c2", "get-sum", json!({"a": 2, "b": 3})),
            ("c3", "get-sum", json!({"a": "two"})),
        ]),
        responses::text("done"),
    ]);
    let config =
        AgentConfig::new(AgentIdentity::new("helper", "test"), "You help.").with_tools(tools);
    let ctx = Session::new("s", ()).context(AgentIdentity::new("helper", "test"));
    let result = AgentLoop::new(config, model.clone()).run(&ctx, "go").await;
    assert_eq!(result.stop, StopCause::Completed);
    // The model was offered the server's tools under their own names.
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    assert!(offered.contains(&"echo".to_owned()), "{offered:?}");
    let results = results_sent(&model);
    assert_eq!(results[0], ("c1".into(), "Echo: hello".into(), false));
    assert!(!results[1].2 && results[1].1.contains('5'), "{results:?}");
    // Arguments the server refuses go back to the model as an error it can correct.
    assert!(results[2].2, "{results:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_uses_a_stdio_servers_tools() {
    let client = stdio_server();
    an_agent_uses_the_tools_of(&client).await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_uses_a_streamable_http_servers_tools() {
    let server = HttpServer::start();
    let client = McpClient::http(server.url());
    an_agent_uses_the_tools_of(&client).await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn structured_content_is_what_the_model_reads() {
    let client = stdio_server();
    let tools = client.list_tools().await.unwrap();
    let weather = find(&tools, "get-structured-content")
        .call(&json!({"location": "New York"}), &CancellationToken::new())
        .await
        .unwrap();
    assert!(weather.is_object(), "{weather}");
    assert!(weather.get("temperature").is_some(), "{weather}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_past_its_timeout_is_cancelled() {
    let client = stdio_server().with_call_timeout(Duration::from_millis(300));
    let tools = client.list_tools().await.unwrap();
    let slow = find(&tools, "trigger-long-running-operation");
    let started = Instant::now();
    let outcome = slow
        .call(
            &json!({"duration": 20, "steps": 4}),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(outcome, Err(ToolError::Timeout(Duration::from_millis(300))));
    assert!(started.elapsed() < Duration::from_secs(5));
    // The server is still there for the next call.
    let echo = find(&tools, "echo")
        .call(&json!({"message": "still here"}), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(echo, Value::String("Echo: still here".into()));
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_run_cancels_its_call() {
    let client = stdio_server();
    let tools = client.list_tools().await.unwrap();
    let slow = find(&tools, "trigger-long-running-operation");
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let outcome = slow
        .call(&json!({"duration": 20, "steps": 4}), &cancel)
        .await;
    assert!(
        matches!(&outcome, Err(ToolError::Failed(message)) if message.starts_with("cancelled")),
        "{outcome:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stdio_server_that_dies_fails_its_call_and_the_next_call_starts_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // The server's process writes its pid before it becomes the server.
    let client = McpClient::stdio(
        "sh",
        [
            "-c".to_owned(),
            format!("echo $$ >> {} && exec {EVERYTHING} stdio", pids.display()),
        ],
    );
    let tools = client.list_tools().await.unwrap();
    let (echo, slow) = (
        find(&tools, "echo"),
        find(&tools, "trigger-long-running-operation"),
    );
    let never = CancellationToken::new();
    let started = |n: usize| std::fs::read_to_string(&pids).unwrap().lines().count() == n;
    assert!(started(1));

    // The server dies during a call: that call fails.
    let kill = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let pid = std::fs::read_to_string(&pids).unwrap();
        let killed = Command::new("kill")
            .args(["-9", pid.trim()])
            .status()
            .unwrap();
        assert!(killed.success());
    };
    let long = json!({"duration": 20, "steps": 4});
    let (lost, ()) = tokio::join!(slow.call(&long, &never), kill);
    assert!(
        matches!(&lost, Err(ToolError::Failed(message)) if message.contains("could not be reached")),
        "{lost:?}"
    );
    // The next call starts it again.
    let again = echo.call(&json!({"message": "two"}), &never).await;
    assert_eq!(again, Ok(Value::String("Echo: two".into())));
    assert!(started(2), "a second server was started");

    // Dead between calls: the next call starts it again at once.
    let pid = std::fs::read_to_string(&pids).unwrap();
    let last = pid.lines().last().unwrap();
    assert!(
        Command::new("kill")
            .args(["-9", last])
            .status()
            .unwrap()
            .success()
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let third = echo.call(&json!({"message": "three"}), &never).await;
    assert_eq!(third, Ok(Value::String("Echo: three".into())));
    assert!(started(3));
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http_server_that_restarts_is_reached_again() {
    let mut server = HttpServer::start();
    let client = McpClient::http(server.url());
    let tools = client.list_tools().await.unwrap();
    let echo = find(&tools, "echo");
    let never = CancellationToken::new();
    assert!(echo.call(&json!({"message": "one"}), &never).await.is_ok());

    let port = server.port;
    server.stop();
    let lost = echo.call(&json!({"message": "two"}), &never).await;
    assert!(
        matches!(&lost, Err(ToolError::Failed(message)) if message.contains("could not be reached")),
        "{lost:?}"
    );
    let _restarted = HttpServer::start_on(port);
    let again = echo.call(&json!({"message": "three"}), &never).await;
    assert_eq!(again, Ok(Value::String("Echo: three".into())));
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_cannot_start_is_a_clear_error() {
    let error = McpClient::stdio("/nonexistent/mcp-server", Vec::<String>::new())
        .list_tools()
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("cannot start the MCP server"), "{message}");
    assert!(message.contains("/nonexistent/mcp-server"), "{message}");
}
