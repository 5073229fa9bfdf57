//! Integration tests of the trace file format: one binary, one module per idea.

mod compressed;
mod corrupt;
mod golden;
mod memory;
mod next_where;
mod random_access;
mod read_ahead;
mod support;
mod system;
