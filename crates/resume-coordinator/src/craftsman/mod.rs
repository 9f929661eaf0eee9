//! The Craftsman: writes, checks, presents and revises the sections.

pub mod agent;
pub mod prompts;
pub mod review;
pub mod tools;

pub use agent::{CRAFTSMAN, craftsman};
