//! The JSON errors every route answers with: `{"error": {"code": "...", "message": "..."}}`.

use agent_runtime::sessions::StoreError;

use crate::auth::{Denied, Forbidden};
use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::borrow::Cow;

/// An error answered to a client.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    code: Cow<'static, str>,
    message: String,
    /// The path of the request field at fault, when one is.
    field: Option<String>,
    /// When to try again, in seconds (`retry-after`), for a refusal that passes.
    retry_after: Option<u64>,
}

impl ApiError {
    /// What went wrong, as the client reads it.
    #[cfg(feature = "mcp")]
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code: Cow::Borrowed(code),
            message: message.into(),
            field: None,
            retry_after: None,
        }
    }

    /// 503 with `retry-after: 1`: the server is at one of its limits
    /// ([`ServerConfig`](crate::ServerConfig)), and the request may pass in a moment.
    pub(crate) fn at_capacity(code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            retry_after: Some(1),
            ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
        }
    }

    /// Names the request field at fault (`"field"` in the error body).
    pub(crate) fn with_field(mut self, path: &str) -> Self {
        self.field = Some(path.to_owned());
        self
    }

    /// 422 for a body that does not fit its type, naming the field.
    pub(crate) fn invalid_at(what: &str, error: &agent_runtime::AnswerError) -> Self {
        ApiError::invalid(format!("{what}: {error}")).with_field(&error.path)
    }

    /// A product's refusal of a start request, with its status and code.
    pub(crate) fn refused(refusal: &crate::product::Refusal) -> Self {
        let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::BAD_REQUEST);
        ApiError::new(status, refusal.code(), refusal.to_string())
    }

    pub(crate) fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, code, message)
    }

    pub(crate) fn unknown_product(product: &str) -> Self {
        ApiError::not_found("unknown_product", format!("no product {product:?}"))
    }

    pub(crate) fn unknown_session(session: &str) -> Self {
        ApiError::not_found("unknown_session", format!("no session {session:?}"))
    }

    /// 401 for a session route without its session's token.
    pub(crate) fn unauthorized() -> Self {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the session's token is required (X-Session-Token: <token>, ?token=, or \
             Authorization: Bearer <token> when the credential is in X-API-Key or the \
             server needs none)",
        )
    }

    /// 401 for a request without a valid credential, 429 for one over a rate.
    pub(crate) fn denied(denied: &Denied) -> Self {
        match denied {
            Denied::Missing => ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "a credential is required: Authorization: Bearer <API key or JWT>, or X-API-Key",
            ),
            Denied::Invalid(reason) => ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                format!("the credential is not accepted: {reason}"),
            ),
            Denied::RateLimited { scope, wait } => ApiError {
                // Whole seconds, rounded up: a client that waits that long passes.
                retry_after: Some(wait.as_secs() + u64::from(wait.subsec_nanos() > 0)),
                ..ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    format!("too many requests for this {scope}; try again later"),
                )
            },
        }
    }

    /// 429 with `retry-after`: the tenant runs as many sessions as it may here.
    pub(crate) fn tenant_at_limit(tenant: &str, max: usize) -> Self {
        ApiError {
            retry_after: Some(1),
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "tenant_session_limit",
                format!("tenant {tenant:?} runs {max} sessions already; try again when one ends"),
            )
        }
    }

    /// 403 for a body naming a tenant or user the caller does not speak for.
    pub(crate) fn forbidden(forbidden: Forbidden) -> Self {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", forbidden.message)
            .with_field(forbidden.field)
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", message)
    }

    pub(crate) fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::CONFLICT, code, message)
    }

    pub(crate) fn unavailable(message: impl Into<String>) -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "instance_unreachable",
            message,
        )
    }

    pub(crate) fn store(error: &StoreError) -> Self {
        tracing::error!(%error, "session store failed");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "store_error",
            "the session store failed; try again",
        )
    }
}

impl ApiError {
    /// The status it is answered with.
    #[cfg(test)]
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The error's code (`already_answered`, ...).
    pub(crate) fn code(&self) -> &str {
        &self.code
    }

    /// The error as JSON, to send it to the instance that forwarded the request.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "status": self.status.as_u16(),
            "code": self.code,
            "message": self.message,
            "field": self.field,
        })
    }

    /// An error another instance answered with ([`to_json`](Self::to_json)).
    pub(crate) fn from_json(value: &Value) -> Option<ApiError> {
        let status = value.get("status")?.as_u64()?;
        Some(ApiError {
            status: StatusCode::from_u16(u16::try_from(status).ok()?).ok()?,
            code: Cow::Owned(value.get("code")?.as_str()?.to_owned()),
            message: value.get("message")?.as_str()?.to_owned(),
            field: value
                .get("field")
                .and_then(Value::as_str)
                .map(str::to_owned),
            retry_after: None,
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::warn!(status = %self.status, code = %self.code, "request failed");
        } else {
            tracing::debug!(status = %self.status, code = %self.code, message = %self.message, "request refused");
        }
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(field) = self.field {
            error["field"] = json!(field);
        }
        let body = Json(json!({ "error": error }));
        let mut response = (self.status, body).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
