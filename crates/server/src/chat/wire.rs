//! The Chat Completions wire format: the request read with the parameter at fault named,
//! and the bodies of whole answers, stream chunks, models and errors, shaped as OpenAI's.

use axum::Json;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::files::read_file;
use super::{ChatAgentError, ChatMessage, ChatReply, ChatRole, ChatUsage, FinishReason};

/// A request, read.
#[derive(Debug, Clone)]
pub(crate) struct CompletionRequest {
    pub(crate) model: String,
    pub(crate) messages: Vec<ChatMessage>,
    pub(crate) stream: bool,
    pub(crate) include_usage: bool,
    pub(crate) user: Option<String>,
}

/// An error answered before any stream: `{"error": {message, type, param, code}}`.
#[derive(Debug, Clone)]
pub(crate) struct WireError {
    status: StatusCode,
    message: String,
    kind: &'static str,
    param: Option<String>,
    code: Option<&'static str>,
    /// When to try again, in whole seconds (`retry-after`).
    retry_after: Option<u64>,
}

impl WireError {
    pub(crate) fn invalid(message: impl Into<String>, param: &str) -> Self {
        WireError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param: Some(param.to_owned()),
            code: None,
            retry_after: None,
        }
    }

    pub(crate) fn body_unreadable(message: impl Into<String>) -> Self {
        WireError {
            param: None,
            ..WireError::invalid(message, "")
        }
    }

    pub(crate) fn missing_key() -> Self {
        WireError {
            status: StatusCode::UNAUTHORIZED,
            message: "You didn't provide an API key. Send it as 'Authorization: Bearer <key>'."
                .into(),
            kind: "invalid_request_error",
            param: None,
            code: None,
            retry_after: None,
        }
    }

    pub(crate) fn wrong_key() -> Self {
        WireError {
            status: StatusCode::UNAUTHORIZED,
            message: "Incorrect API key provided.".into(),
            kind: "invalid_request_error",
            param: None,
            code: Some("invalid_api_key"),
            retry_after: None,
        }
    }

    /// 429: over the credential's or the tenant's rate.
    pub(crate) fn rate_limited(wait: std::time::Duration) -> Self {
        WireError {
            status: StatusCode::TOO_MANY_REQUESTS,
            message: "Rate limit reached for requests. Please try again later.".into(),
            kind: "requests",
            param: None,
            code: Some("rate_limit_exceeded"),
            retry_after: Some(wait.as_secs() + u64::from(wait.subsec_nanos() > 0)),
        }
    }

    pub(crate) fn user_not_allowed(named: &str) -> Self {
        WireError {
            status: StatusCode::FORBIDDEN,
            message: format!(
                "This API key speaks for another user than {named:?}: leave 'user' out, or name its own."
            ),
            kind: "invalid_request_error",
            param: Some("user".into()),
            code: Some("user_not_allowed"),
            retry_after: None,
        }
    }

    pub(crate) fn unknown_model(model: &str) -> Self {
        WireError {
            status: StatusCode::NOT_FOUND,
            message: format!("The model `{model}` does not exist or you do not have access to it."),
            kind: "invalid_request_error",
            param: Some("model".into()),
            code: Some("model_not_found"),
            retry_after: None,
        }
    }

    pub(crate) fn store(error: &agent_runtime::sessions::StoreError) -> Self {
        WireError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: format!("the conversation store failed: {error}"),
            kind: "server_error",
            param: None,
            code: Some("service_unavailable"),
            retry_after: None,
        }
    }

    pub(crate) fn agent(error: &ChatAgentError) -> Self {
        let (status, kind, code) = match error {
            ChatAgentError::InvalidRequest(_) => {
                (StatusCode::BAD_REQUEST, "invalid_request_error", None)
            }
            ChatAgentError::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                Some("service_unavailable"),
            ),
            ChatAgentError::Failed(_) => (StatusCode::INTERNAL_SERVER_ERROR, "server_error", None),
        };
        WireError {
            status,
            message: error.to_string(),
            kind,
            param: None,
            code,
            retry_after: None,
        }
    }

    /// The status it is answered with.
    #[cfg(test)]
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The `{"error": ...}` body, also sent as a data event when a stream fails.
    pub(crate) fn body(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }
}

/// A turn that failed, answered whole: its error, marked `x-should-retry: false` for the
/// clients that retry server errors on their own (the official OpenAI SDKs), since the
/// turn may have run tools (searches, saves, deletions) before it failed.
pub(crate) fn turn_failed(error: &ChatAgentError) -> Response {
    let mut response = WireError::agent(error).into_response();
    response
        .headers_mut()
        .insert("x-should-retry", HeaderValue::from_static("false"));
    response
}

impl IntoResponse for WireError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

/// Reads a request body (already JSON), naming the parameter at fault; attached files
/// above `max_file_bytes` are passed on refused.
pub(crate) fn read_request(
    body: &Value,
    max_file_bytes: usize,
) -> Result<CompletionRequest, WireError> {
    let Some(object) = body.as_object() else {
        return Err(WireError::body_unreadable(
            "The request body must be a JSON object.",
        ));
    };
    let model = match object.get("model") {
        Some(Value::String(model)) if !model.is_empty() => model.clone(),
        Some(_) => return Err(WireError::invalid("'model' must be a string.", "model")),
        None => {
            return Err(WireError::invalid(
                "Missing required parameter: 'model'.",
                "model",
            ));
        }
    };
    let messages = match object.get("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => messages
            .iter()
            .enumerate()
            .filter_map(|(i, message)| read_message(i, message, max_file_bytes).transpose())
            .collect::<Result<Vec<_>, _>>()?,
        Some(Value::Array(_)) => {
            return Err(WireError::invalid(
                "'messages' must hold at least one message.",
                "messages",
            ));
        }
        Some(_) => {
            return Err(WireError::invalid(
                "'messages' must be an array.",
                "messages",
            ));
        }
        None => {
            return Err(WireError::invalid(
                "Missing required parameter: 'messages'.",
                "messages",
            ));
        }
    };
    if !messages.iter().any(|m| m.role == ChatRole::User) {
        return Err(WireError::invalid(
            "'messages' must hold a user message.",
            "messages",
        ));
    }
    let stream = flag(object.get("stream"), "stream")?;
    let include_usage = match object.get("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(options)) => {
            flag(options.get("include_usage"), "stream_options.include_usage")?
        }
        Some(_) => {
            return Err(WireError::invalid(
                "'stream_options' must be an object.",
                "stream_options",
            ));
        }
    };
    if include_usage && !stream {
        return Err(WireError::invalid(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
        ));
    }
    let user = match object.get("user") {
        None | Some(Value::Null) => None,
        Some(Value::String(user)) if !user.trim().is_empty() => Some(user.trim().to_owned()),
        Some(_) => return Err(WireError::invalid("'user' must be a string.", "user")),
    };
    Ok(CompletionRequest {
        model,
        messages,
        stream,
        include_usage,
        user,
    })
}

fn flag(value: Option<&Value>, param: &str) -> Result<bool, WireError> {
    match value {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(flag)) => Ok(*flag),
        Some(_) => Err(WireError::invalid(
            format!("'{param}' must be a boolean."),
            param,
        )),
    }
}

/// One message as text with its attached files; `None` for what a text conversation
/// carries no words of (tool results, an assistant turn that only called tools).
fn read_message(
    index: usize,
    message: &Value,
    max_file_bytes: usize,
) -> Result<Option<ChatMessage>, WireError> {
    let at = |field: &str| format!("messages[{index}].{field}");
    let role = match message.get("role").and_then(Value::as_str) {
        Some("system" | "developer") => ChatRole::System,
        Some("user") => ChatRole::User,
        Some("assistant") => ChatRole::Assistant,
        Some("tool" | "function") => return Ok(None),
        Some(other) => {
            return Err(WireError::invalid(
                format!(
                    "Invalid value: '{other}'. Supported values are: 'system', 'developer', 'user', 'assistant' and 'tool'."
                ),
                &at("role"),
            ));
        }
        None => {
            return Err(WireError::invalid(
                "Missing required parameter: 'role'.",
                &at("role"),
            ));
        }
    };
    let mut files = Vec::new();
    let content = match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        None | Some(Value::Null) if role == ChatRole::Assistant => return Ok(None),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (p, part) in parts.iter().enumerate() {
                match (part.get("type").and_then(Value::as_str), part.get("text")) {
                    (Some("text"), Some(Value::String(piece))) => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(piece);
                    }
                    (Some("file"), _) if role == ChatRole::User => {
                        let at_file = at(&format!("content[{p}].file"));
                        let file = read_file(part.get("file"), &at_file, max_file_bytes)
                            .map_err(|bad| WireError::invalid(bad.message, &bad.param))?;
                        files.push(file);
                    }
                    (Some(kind), _) if kind != "text" => {
                        return Err(WireError::invalid(
                            format!(
                                "Content parts of type '{kind}' are not supported: this agent reads text, and files a user attaches."
                            ),
                            &at(&format!("content[{p}].type")),
                        ));
                    }
                    _ => {
                        return Err(WireError::invalid(
                            "A text content part needs a string 'text'.",
                            &at(&format!("content[{p}].text")),
                        ));
                    }
                }
            }
            text
        }
        None | Some(Value::Null) => {
            return Err(WireError::invalid(
                "Missing required parameter: 'content'.",
                &at("content"),
            ));
        }
        Some(_) => {
            return Err(WireError::invalid(
                "'content' must be a string or an array of text parts.",
                &at("content"),
            ));
        }
    };
    let mut message = ChatMessage::new(role, content);
    message.files = files;
    Ok(Some(message))
}

/// What every chunk and answer of one completion shares.
#[derive(Debug, Clone)]
pub(crate) struct Completion {
    pub(crate) id: String,
    pub(crate) created: i64,
    pub(crate) model: String,
}

impl Completion {
    pub(crate) fn new(model: &str) -> Self {
        Completion {
            id: format!("chatcmpl-{}", uuid::Uuid::new_v4().simple()),
            created: chrono::Utc::now().timestamp(),
            model: model.to_owned(),
        }
    }

    /// The whole answer (`chat.completion`).
    pub(crate) fn answer(&self, reply: &ChatReply) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": reply.text, "refusal": null},
                "logprobs": null,
                "finish_reason": finish(reply.finish),
            }],
            "usage": usage(reply.usage),
            "system_fingerprint": null,
        })
    }

    /// A chunk whose one choice carries `delta` (and `finish_reason`, on the last).
    pub(crate) fn chunk(
        &self,
        delta: Value,
        finish_reason: Option<FinishReason>,
        include_usage: bool,
    ) -> Value {
        let mut chunk = self.chunk_head(include_usage);
        chunk["choices"] = json!([{
            "index": 0,
            "delta": delta,
            "logprobs": null,
            "finish_reason": finish_reason.map(finish),
        }]);
        chunk
    }

    /// The usage chunk: no choices, the turn's usage.
    pub(crate) fn usage_chunk(&self, tokens: ChatUsage) -> Value {
        let mut chunk = self.chunk_head(true);
        chunk["choices"] = json!([]);
        chunk["usage"] = usage(tokens);
        chunk
    }

    fn chunk_head(&self, include_usage: bool) -> Value {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
        });
        if include_usage {
            chunk["usage"] = Value::Null;
        }
        chunk
    }
}

fn finish(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
    }
}

fn usage(usage: ChatUsage) -> Value {
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    })
}

/// `GET /v1/models`.
pub(crate) fn models(ids: &[String], created: i64) -> Value {
    json!({
        "object": "list",
        "data": ids.iter().map(|id| json!({
            "id": id,
            "object": "model",
            "created": created,
            "owned_by": "agent-server",
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param_of(body: Value) -> Option<String> {
        read_request(&body, 1024).err().unwrap().param
    }

    #[test]
    fn a_bad_request_names_the_parameter_at_fault() {
        assert_eq!(param_of(json!({"messages": []})).as_deref(), Some("model"));
        assert_eq!(
            param_of(json!({"model": "m", "messages": []})).as_deref(),
            Some("messages")
        );
        assert_eq!(
            param_of(json!({"model": "m", "messages": [{"role": "user"}]})).as_deref(),
            Some("messages[0].content")
        );
        assert_eq!(
            param_of(json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}))
                .as_deref(),
            Some("messages[0].content[0].type")
        );
        assert_eq!(
            param_of(json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream_options": {"include_usage": true}}))
                .as_deref(),
            Some("stream_options")
        );
    }

    #[test]
    fn text_parts_tool_turns_and_instructions_are_read_as_text() {
        let request = read_request(&json!({
            "model": "m",
            "messages": [
                {"role": "developer", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"role": "assistant", "content": null, "tool_calls": []},
                {"role": "tool", "content": "{}", "tool_call_id": "x"},
                {"role": "assistant", "content": "ok"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "user": " ada ",
        }), 1024)
        .unwrap();
        assert_eq!(
            request.messages,
            vec![
                ChatMessage::new(ChatRole::System, "be brief"),
                ChatMessage::new(ChatRole::User, "a\nb"),
                ChatMessage::new(ChatRole::Assistant, "ok"),
            ]
        );
        assert!(request.stream && request.include_usage);
        assert_eq!(request.user.as_deref(), Some("ada"));
    }
}
