//! Test support (not published): valid Phosphor trace files of hostile shapes, and the
//! measurement of a command's memory and time on them.
//!
//! A reader that holds only tables and one block, as `docs/FORMAT.md` promises, still has shapes
//! that cost it more than the file: one 60 MiB string naming a thousand callsites, ten thousand
//! begins never closed, timestamps that go back, a clock rate that is NaN. This crate writes such
//! files, *valid* ones (the reader accepts them, so they reach the exporters and the statistics),
//! with each size a parameter, for the limits test of `phosphor-cli`, the benchmark
//! (`scripts/bench-hostile.sh`) and the structure-aware fuzz target `craft` (`fuzz/`).
//!
//! # Brief overview
//!
//! * [`TraceWriter`] writes blocks from string *indices* (a huge string is written once however
//!   many entries name it); [`ChunkStream`] cuts a thread's events into chunks; [`records`]
//!   builds the records of each kind of event.
//! * [`Shape`] is one hostile file and its size; [`write_ring`] writes a ring file for
//!   `phosphor recover`.
//! * [`catalog`] lists the [`Case`]s at the test's or the benchmark's [`Scale`], with the
//!   commands to run on each.
//! * [`system::system_trace`] is a small valid trace with system context (format 1.6) whose
//!   figures are known, for the tools' tests.
//! * [`Rng`] is the tests' deterministic random numbers (xorshift64*), one copy for every crate.
//! * [`measure::run`] runs a command under a watchdog and an address-space cap and reports its
//!   peak RSS (`wait4`) and wall time.
//!
//! It is a crate of its own, not a feature of `phosphor-format`: it is test support that no
//! library user needs, it depends on `libc` for the measurement, and the fuzz workspace, the
//! CLI's tests and the benchmark all use it.

mod catalog;
pub mod measure;
pub mod records;
mod ring;
mod rng;
mod shapes;
pub mod system;
mod trace;

pub use catalog::{catalog, lists_text_format, Case, Input, Scale};
pub use ring::write_ring;
pub use rng::Rng;
pub use shapes::{callsite, monotonic, tsc, Backwards, Shape};
pub use trace::{ChunkStream, TraceWriter};

#[cfg(test)]
mod valid_tests;
