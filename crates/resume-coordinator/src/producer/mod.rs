//! The Producer: assembles, checks and reviews the resume, and sends sections back to the
//! Craftsman over the bus.

pub mod agent;
pub mod prompts;
pub mod tools;

pub use agent::{PRODUCER, producer};
