//! Integration tests of the trace file format: one binary, one module per idea.

mod compressed;
mod corrupt;
mod golden;
mod memory;
mod random_access;
mod support;
mod system;
