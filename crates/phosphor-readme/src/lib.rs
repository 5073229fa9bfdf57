//! The README's Rust examples, compiled and run by `cargo test` as they are written there: each is
//! a whole program a reader can paste into a `main.rs` of a crate with the dependencies above.
//!
//! Its documentation is the README (and its `guide` module's is
//! docs/GUIDE.md), and rustdoc tests every `rust` block of them (`no_run` marks the ones that need
//! a server or leave files behind: those still compile). `tests/docs.rs` checks ARCHITECTURE.md's
//! code map against the sources and every relative Markdown link of the repository.
//!
//! Its one piece of code is the tool that writes a document: [`bench_record`] and its binary
//! `bench-record`, which write BENCHMARKS.md's generated tables from the measuring scripts' output.
#![doc = include_str!("../../../README.md")]

pub mod bench_record;

/// The user's guide, `docs/GUIDE.md`, whose Rust examples are compiled and run as the README's are.
#[doc = include_str!("../../../docs/GUIDE.md")]
pub mod guide {}
