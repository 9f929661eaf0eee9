//! Examples package.
