//! Compile-time groups and the `off` feature.
