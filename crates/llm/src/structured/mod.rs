//! Structured output: typed answers from any [`crate::ChatModel`].

mod extract;
mod json_text;
mod schema;

pub use extract::{ExtractError, ExtractOptions, Extracted, extract, extract_with};
pub use json_text::find_json;
pub use schema::{
    compact_schema, schema_name, schema_name_of, schema_of, strict_schema, without_descriptions,
};
