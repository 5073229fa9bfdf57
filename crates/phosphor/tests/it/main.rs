//! Integration tests of the recording engine, one binary (ripgrep's layout).

mod smoke;
