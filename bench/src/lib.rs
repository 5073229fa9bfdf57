//! The side-by-side benchmark of Phosphor, the limit loop and the peers (issue 4).
//!
//! `cargo run --release -p phosphor-bench` runs it and prints Markdown tables; `--quick` runs a
//! short version, `--help` lists the options.
//!
//! # Brief overview
//!
//! * A [`Scenario`](scenario::Scenario) is one workload of one tracer, run in batches; a batch
//!   reports the calling thread's wall time and the process CPU until the tracer has taken in
//!   every event. After the timed rounds, its [`check`](scenario::Scenario::check) counts what
//!   was recorded. [`catalog`] lists them all: [`limit`] (the limit loop, two clocks, the empty
//!   loop), [`phos`] (Phosphor, with [`callsites`] for 10,000 callsites against 10) and [`peers`]
//!   (fastrace, puffin, tracing + tracing-chrome, tracing with no subscriber).
//! * [`run`] calibrates the batches and runs the rounds, interleaved; [`scaling`] runs 1 to 16
//!   threads; [`memory`] measures resident memory in the `phosphor-bench-rss` program;
//!   [`instr`] counts instructions under callgrind, in [`child`] processes.
//! * [`full`] is the whole run in order, and [`report`] prints it.
//!
//! The peers' dependencies live only in this crate, so they never reach the library's users.

pub mod callsites;
pub mod catalog;
pub mod child;
pub mod full;
pub mod instr;
pub mod limit;
pub mod memory;
pub mod peers;
pub mod phos;
pub mod report;
pub mod run;
pub mod scaling;
pub mod scenario;
pub mod stats;
pub mod sys;
