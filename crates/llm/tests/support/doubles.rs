//! Helpers of the test-double tests: temporary fixture folders and small requests.

use agent_llm::{ChatRequest, ContentBlock, LlmError, Message, Role, ToolDefinition};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fixture directory under the system temp dir, removed when dropped.
pub struct TempFixtures(PathBuf);

impl TempFixtures {
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!(
            "agent-llm-fixtures-{}-{unique}-{name}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempFixtures(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `<key>.json` holding a text answer `text`.
    pub fn text(&self, key: &str, text: &str) -> &Self {
        let body = json!({
            "id": format!("fx_{key}"),
            "model": "fixture",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 120, "output_tokens": 18}
        });
        self.raw(key, &body.to_string())
    }

    pub fn raw(&self, key: &str, body: &str) -> &Self {
        std::fs::write(self.0.join(format!("{key}.json")), body).unwrap();
        self
    }
}

impl Drop for TempFixtures {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn tool(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        name,
        format!("The {name} tool"),
        json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
    )
}

pub fn prompt(text: &str) -> ChatRequest {
    ChatRequest::from_prompt(text)
}

/// A conversation where the assistant called `tool_name` (id `call_9`) and the user
/// sends back its result.
pub fn after_tool_call(tool_name: &str) -> ChatRequest {
    ChatRequest::new(vec![
        Message::user("go"),
        Message::new(
            Role::Assistant,
            vec![ContentBlock::ToolUse {
                id: "call_9".into(),
                name: tool_name.into(),
                input: json!({}),
            }],
        ),
        Message::new(Role::User, vec![ContentBlock::tool_result("call_9", "42")]),
    ])
}

pub fn server_error() -> LlmError {
    LlmError::Server {
        status: 503,
        message: "unavailable".into(),
        retry_after: None,
    }
}
