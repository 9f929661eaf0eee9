//! Structured output: typed answers from any [`crate::ChatModel`].

mod schema;

pub use schema::{schema_name, schema_of, strict_schema};
