//! What every session route checks first: the path, the query, the session (its tenant's
//! callers only) and its token.

use agent_runtime::sessions::SessionRecord;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::Value;

use crate::auth::Caller;
use crate::auth::tokens::{SESSION_TOKEN_HEADER, bearer, token_matches};
use crate::error::ApiError;
use crate::server::AgentServer;

pub(crate) fn path<T>(extracted: Result<Path<T>, PathRejection>) -> Result<T, ApiError> {
    extracted
        .map(|Path(value)| value)
        .map_err(|rejection| ApiError::bad_request(format!("bad path: {rejection}")))
}

/// The session `id` of `product`: 404 for an unknown product, or a session that does not
/// exist or belongs to another product.
pub(crate) async fn session_of(
    server: &AgentServer,
    product: &str,
    id: &str,
) -> Result<SessionRecord, ApiError> {
    if server.product(product).is_none() {
        return Err(ApiError::unknown_product(product));
    }
    match server.inner.store.get(id).await {
        Ok(Some(record)) if record.product == product => Ok(record),
        Ok(_) => Err(ApiError::unknown_session(id)),
        Err(error) => Err(ApiError::store(&error)),
    }
}

/// Lets `caller` reach the session `record` with the session token `token`: 404 for
/// another tenant's session (as if it did not exist), 401 without its token.
pub(crate) fn authorize(
    record: &SessionRecord,
    caller: &Caller,
    token: Option<&str>,
) -> Result<(), ApiError> {
    if !caller.may_reach(record.tenant.as_deref()) {
        return Err(ApiError::unknown_session(&record.id));
    }
    match token {
        Some(token) if token_matches(token, &record.token_hash) => Ok(()),
        _ => Err(ApiError::unauthorized()),
    }
}

/// The session token a request carries in its headers: `X-Session-Token`, else the
/// bearer when that is not the caller's credential.
pub(crate) fn header_token<'a>(headers: &'a HeaderMap, caller: &Caller) -> Option<&'a str> {
    headers
        .get(SESSION_TOKEN_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|token| !token.is_empty())
        .or_else(|| caller.session_bearer(bearer(headers)))
}

#[derive(Debug, Deserialize)]
pub(crate) struct TokenQuery {
    pub(crate) token: Option<String>,
    pub(crate) last_event_id: Option<String>,
}

pub(crate) fn query(
    extracted: Result<Query<TokenQuery>, QueryRejection>,
) -> Result<TokenQuery, ApiError> {
    extracted
        .map(|Query(query)| query)
        .map_err(|rejection| ApiError::bad_request(format!("bad query: {rejection}")))
}

/// A session route's request, checked: the product's name, the session (whose token the
/// request carried, as a bearer header or `?token=`) and the query.
pub(crate) struct Authorized {
    pub(crate) product: String,
    pub(crate) record: SessionRecord,
    pub(crate) query: TokenQuery,
}

/// Checks a `/api/{product}/{session}...` request: 400 for a bad path or query, 404 for an
/// unknown product or session (or another tenant's), 401 without its token.
pub(crate) async fn authorized(
    server: &AgentServer,
    caller: &Caller,
    headers: &HeaderMap,
    ids: Result<Path<(String, String)>, PathRejection>,
    query_string: Result<Query<TokenQuery>, QueryRejection>,
) -> Result<Authorized, ApiError> {
    let (product, id) = path(ids)?;
    let query = query(query_string)?;
    let record = session_of(server, &product, &id).await?;
    authorize(
        &record,
        caller,
        header_token(headers, caller).or(query.token.as_deref()),
    )?;
    Ok(Authorized {
        product,
        record,
        query,
    })
}

/// Reads a JSON body: 413 when over the limit, 400 when it is not JSON.
pub(crate) fn json_body(
    body: Result<Bytes, BytesRejection>,
    limit: usize,
) -> Result<Value, ApiError> {
    let bytes = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!("the body is larger than {limit} bytes"),
            )
        } else {
            ApiError::bad_request(format!("could not read the body: {rejection}"))
        }
    })?;
    serde_json::from_slice(&bytes)
        .map_err(|error| ApiError::bad_request(format!("the body is not valid JSON: {error}")))
}

/// The event number a stream resumes after (`Last-Event-ID`, or `?last_event_id=`): 0
/// when none or blank is given, 400 for anything but a number.
pub(crate) fn last_event_id(given: Option<&str>) -> Result<u64, ApiError> {
    match given.map(str::trim) {
        None | Some("") => Ok(0),
        Some(text) => text.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("Last-Event-ID {text:?} is not an event number"))
        }),
    }
}
