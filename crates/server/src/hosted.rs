//! A [`Product`] as the server holds it: its typed contracts erased to JSON, so products
//! of different types sit side by side.

use agent_runtime::{AnswerError, GateSpec, read_as};
use async_trait::async_trait;
use serde_json::Value;

use crate::auth::OwnerFields;
use crate::openapi;
use crate::product::{Product, Refusal, SessionHandle};

/// What the routes need of a product.
#[async_trait]
pub(crate) trait Hosted: Send + Sync {
    fn name(&self) -> &str;
    /// Reads a start body as the product's start type and checks it.
    fn read_start(&self, body: &Value) -> Result<(), AnswerError>;
    /// Admits a start body (already read) before its session is made.
    async fn admit(&self, body: &Value) -> Result<(), Refusal>;
    /// Runs a session: its result, or its error's message.
    async fn run(&self, session: SessionHandle<Value>) -> Result<Value, String>;
    /// The declared gate of this kind, if any.
    fn gate(&self, kind: &str) -> Option<GateSpec>;
    /// The product's OpenAPI document.
    fn openapi(&self) -> Value;
    /// The owner fields (`tenant_id`, `user_id`) its start request has.
    fn owner_fields(&self) -> OwnerFields;
    fn page(&self) -> Option<String>;
    /// The JSON Schema of its start request, self-contained (`$defs` inside).
    fn start_schema(&self) -> Value;
    /// Whether a run may wait at a gate for its user's answer.
    #[cfg(feature = "mcp")]
    fn has_gates(&self) -> bool;
}

#[async_trait]
impl<P: Product> Hosted for P {
    fn name(&self) -> &str {
        Product::name(self)
    }

    fn read_start(&self, body: &Value) -> Result<(), AnswerError> {
        let start: P::Start = read_as(body)?;
        self.check_start(&start)
    }

    async fn admit(&self, body: &Value) -> Result<(), Refusal> {
        let start: P::Start = read_as(body)
            .map_err(|e| Refusal::BadRequest(format!("the start request is invalid: {e}")))?;
        Product::admit(self, &start).await
    }

    async fn run(&self, session: SessionHandle<Value>) -> Result<Value, String> {
        let start: P::Start =
            read_as(session.request()).map_err(|e| format!("the start request is invalid: {e}"))?;
        let output = Product::run(self, session.retyped(), start)
            .await
            .map_err(|e| e.to_string())?;
        serde_json::to_value(output).map_err(|e| format!("the result does not serialize: {e}"))
    }

    fn gate(&self, kind: &str) -> Option<GateSpec> {
        self.gates().into_iter().find(|gate| gate.name == kind)
    }

    fn openapi(&self) -> Value {
        openapi::document::<P>(Product::name(self), &self.gates())
    }

    fn owner_fields(&self) -> OwnerFields {
        OwnerFields::of_schema(&Hosted::start_schema(self))
    }

    fn page(&self) -> Option<String> {
        Product::page(self)
    }

    fn start_schema(&self) -> Value {
        schemars::SchemaGenerator::default()
            .root_schema_for::<P::Start>()
            .to_value()
    }

    #[cfg(feature = "mcp")]
    fn has_gates(&self) -> bool {
        !self.gates().is_empty()
    }
}
