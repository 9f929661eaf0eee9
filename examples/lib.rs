//! Runnable examples of the agent platform; see the `[[example]]` targets in Cargo.toml.

pub mod deployment;
pub mod fixtures;
pub mod telemetry;
