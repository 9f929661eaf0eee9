//! Starting a session: the one path of `POST /api/{product}/start` and of the MCP
//! front's product tools.

use std::sync::Arc;

use agent_runtime::sessions::NewSession;
use serde_json::Value;

use crate::auth::Caller;
use crate::auth::tokens::{hash_token, new_token};
use crate::error::ApiError;
use crate::server::AgentServer;

/// A session just started: its id and the token that reaches it.
pub(crate) struct StartedSession {
    pub(crate) id: String,
    pub(crate) token: String,
}

impl AgentServer {
    /// Starts a session of product `name` for `caller` on `request`: the owner fields
    /// bound to the caller's credential, the request read and admitted by the product, a
    /// place among the live sessions and the tenant's taken, the session stored, its run
    /// started.
    pub(crate) async fn start_session(
        &self,
        caller: &Caller,
        name: &str,
        mut request: Value,
    ) -> Result<StartedSession, ApiError> {
        let product = self
            .product(name)
            .cloned()
            .ok_or_else(|| ApiError::unknown_product(name))?;
        if !request.is_object() {
            return Err(ApiError::invalid("the start request must be a JSON object"));
        }
        let owner_fields = self
            .inner
            .owner_fields
            .get(name)
            .copied()
            .unwrap_or_default();
        caller
            .bind_start(&mut request, owner_fields)
            .map_err(ApiError::forbidden)?;
        product
            .read_start(&request)
            .map_err(|error| ApiError::invalid_at("the start request does not fit", &error))?;
        product
            .admit(&request)
            .await
            .map_err(|refusal| ApiError::refused(&refusal))?;
        let slot = Arc::clone(&self.inner.session_slots)
            .try_acquire_owned()
            .map_err(|_| {
                ApiError::at_capacity(
                    "too_many_sessions",
                    "this server runs as many sessions as it may; try again shortly",
                )
            })?;

        let tenant = caller.session_tenant(&request);
        let tenant_slot = match (&tenant, self.inner.config.max_sessions_per_tenant) {
            (Some(tenant), Some(max)) => Some(
                self.inner
                    .tenant_sessions
                    .open(tenant, max)
                    .ok_or_else(|| ApiError::tenant_at_limit(tenant, max))?,
            ),
            _ => None,
        };
        let id = uuid::Uuid::new_v4().to_string();
        let token = new_token();
        self.inner
            .store
            .create(NewSession {
                id: id.clone(),
                product: name.to_owned(),
                token_hash: hash_token(&token),
                tenant: tenant.clone(),
                request: request.clone(),
            })
            .await
            .map_err(|error| ApiError::store(&error))?;
        tracing::info!(
            session = %id,
            product = %name,
            credential = caller.principal.credential(),
            "session started"
        );
        crate::prometheus::session_started(name);
        self.start_run(product, id.clone(), request, tenant, (slot, tenant_slot))
            .await
            .map_err(|error| ApiError::store(&error))?;
        Ok(StartedSession { id, token })
    }
}
