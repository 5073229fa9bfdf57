//! Compile-time groups and the `off` feature: what a disabled group leaves in the binary.
