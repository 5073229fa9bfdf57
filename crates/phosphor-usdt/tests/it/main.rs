//! Integration tests of the probe macros, one test binary (ripgrep's layout).
//!
//! `in_process.rs` needs nothing outside the test. The others build the example `usdt_demo`
//! (`demo.rs`) and read it with the system's `readelf` and `gdb`, which must be installed: a
//! missing tool fails the test with a message, it does not skip it (`.ci/run` installs gdb).

mod demo;
mod gdb;
mod in_process;
mod readelf;
