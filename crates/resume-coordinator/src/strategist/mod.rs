//! The Strategist: reads the job, interviews the candidate, finds the gaps and designs the
//! blueprint.

pub mod agent;
pub mod prompts;
pub mod tools;

pub use agent::{STRATEGIST, StrategistPhase, strategist};

#[cfg(test)]
mod tests;
