//! The streamable HTTP transport's requests, sent with the workspace's one HTTP client
//! (reqwest 0.12, rustls on ring): rmcp's own client adapter is for reqwest 0.13, a
//! second HTTP stack with its own TLS provider.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt as _;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use reqwest::{RequestBuilder, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

/// What the client accepts: the server answers a request with JSON or an event stream.
const ACCEPTS: &str = "text/event-stream, application/json";
const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";

type Failure = StreamableHttpError<reqwest::Error>;

/// A reqwest 0.12 client speaking MCP's streamable HTTP.
#[derive(Debug, Clone, Default)]
pub(super) struct Reqwest(reqwest::Client);

/// `builder` with the bearer, the transport's own headers and the session.
fn with_headers(
    mut builder: RequestBuilder,
    auth: Option<String>,
    headers: HashMap<HeaderName, HeaderValue>,
    session: Option<&str>,
) -> RequestBuilder {
    if let Some(token) = auth {
        builder = builder.bearer_auth(token);
    }
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    if let Some(session) = session {
        builder = builder.header(SESSION_ID, session);
    }
    builder
}

fn header_text(
    response: &reqwest::Response,
    name: impl reqwest::header::AsHeaderName,
) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

impl StreamableHttpClient for Reqwest {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let request = self.0.post(uri.as_ref()).header(ACCEPT, ACCEPTS);
        let request = with_headers(request, auth_header, custom_headers, session_id.as_deref());
        let response = request
            .json(&message)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED
            && let Some(challenge) = header_text(&response, WWW_AUTHENTICATE)
        {
            return Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(
                challenge,
            )));
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let content_type = header_text(&response, CONTENT_TYPE);
        let session = header_text(&response, SESSION_ID);
        let answers_nothing = !matches!(message, JsonRpcMessage::Request(_));
        if status.is_success() && answers_nothing && response.content_length() == Some(0) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            // A JSON-RPC error in an error status is still the server's answer.
            if content_type
                .as_deref()
                .is_some_and(|kind| kind.starts_with("application/json"))
                && let Ok(error @ JsonRpcMessage::Error(_)) =
                    serde_json::from_str::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(error, session));
            }
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}: {body}"),
            )));
        }
        match content_type.as_deref() {
            Some(kind) if kind.starts_with("text/event-stream") => {
                Ok(StreamableHttpPostResponse::Sse(events(response), session))
            }
            Some(kind) if kind.starts_with("application/json") => {
                let body = response
                    .bytes()
                    .await
                    .map_err(StreamableHttpError::Client)?;
                serde_json::from_slice(&body)
                    .map(|answer| StreamableHttpPostResponse::Json(answer, session))
                    .map_err(StreamableHttpError::Deserialize)
            }
            _ if answers_nothing => Ok(StreamableHttpPostResponse::Accepted),
            _ => Err(StreamableHttpError::UnexpectedContentType(content_type)),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        let request = with_headers(
            self.0.delete(uri.as_ref()),
            auth_header,
            custom_headers,
            Some(&session_id),
        );
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response
            .error_for_status()
            .map(drop)
            .map_err(StreamableHttpError::Client)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        let mut request = self.0.get(uri.as_ref()).header(ACCEPT, ACCEPTS);
        if let Some(last) = last_event_id {
            request = request.header(LAST_EVENT_ID, last);
        }
        let request = with_headers(request, auth_header, custom_headers, session_id.as_deref());
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let response = response
            .error_for_status()
            .map_err(StreamableHttpError::Client)?;
        match header_text(&response, CONTENT_TYPE) {
            Some(kind)
                if kind.starts_with("text/event-stream")
                    || kind.starts_with("application/json") =>
            {
                Ok(events(response))
            }
            other => Err(StreamableHttpError::UnexpectedContentType(other)),
        }
    }
}

/// The events of a streamed answer.
fn events(response: reqwest::Response) -> BoxStream<'static, Result<Sse, SseError>> {
    SseStream::from_bytes_stream(response.bytes_stream()).boxed()
}
