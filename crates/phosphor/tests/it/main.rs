//! Integration tests of the recording engine, one binary (ripgrep's layout).
//!
//! The binary installs a counting global allocator whose counters are per thread, so the
//! allocation test measures only its own thread while the other tests run in parallel.

mod accounting;
mod aggregates;
mod alloc;
mod attribute;
mod bridge;
mod compression;
mod config;
mod control;
mod crash;
mod events;
#[cfg(target_os = "linux")]
mod fork_anytime;
mod fork_effects;
mod futures;
mod groups;
mod hardening;
mod intern;
#[cfg(target_os = "linux")]
mod internal_threads;
mod layers;
mod lifecycle;
mod limits;
mod logs;
#[cfg(feature = "otlp")]
mod otlp;
#[cfg(feature = "otlp")]
mod otlp_sampling;
mod points;
mod recorder;
mod reentrancy;
mod smoke;
mod snapshot;
mod soak;
#[cfg(target_os = "linux")]
mod stop_race;
mod stream;
mod stream_close;
mod support;
#[cfg(target_os = "linux")]
mod system;
mod trace_context;
mod triggers;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod usdt_bridge;

/// The system allocator, counting calls per thread (`support::allocation_counts`).
#[global_allocator]
static GLOBAL: phosphor_testalloc::Counting = phosphor_testalloc::Counting;
