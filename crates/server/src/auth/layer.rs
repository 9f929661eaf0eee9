//! The middleware that lets a request through to a product route only with a credential
//! the server accepts, and hands the routes its [`Caller`].

use axum::extract::{Query, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::Caller;
use crate::error::ApiError;
use crate::server::AgentServer;

/// The query parameter that may carry an API key.
#[derive(serde::Deserialize)]
struct KeyQuery {
    api_key: Option<String>,
}

/// Authenticates the request ([`Auth::check`](super::Auth)): 401 without a valid
/// credential, 429 over a rate; else the route runs with the [`Caller`] in the request's
/// extensions.
pub(crate) async fn require_caller(
    State(server): State<AgentServer>,
    mut request: Request,
    next: Next,
) -> Response {
    // A browser's EventSource cannot set headers: it may give the key as `?api_key=`.
    let query_key = Query::<KeyQuery>::try_from_uri(request.uri())
        .ok()
        .and_then(|Query(query)| query.api_key);
    match server
        .inner
        .auth
        .check(request.headers(), query_key.as_deref())
    {
        Ok(caller) => {
            tracing::debug!(
                credential = caller.principal.credential(),
                "caller accepted"
            );
            request.extensions_mut().insert::<Caller>(caller);
            next.run(request).await
        }
        Err(denied) => ApiError::denied(&denied).into_response(),
    }
}
