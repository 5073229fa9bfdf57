//! Integration tests of the `phosphor` binary, one test binary (ripgrep's layout).

mod cli;
mod demo;
mod info;
