//! Helpers shared by the integration tests of the `examples` package.
// Each test binary uses a different part of the helpers.
#![allow(dead_code)]

pub mod browser;
pub mod examples;
pub mod local_model;
