//! A program instrumented in two compile-time groups, `net` (feature `trace-net`, on by default)
//! and `disk` (feature `trace-disk`, off by default), with every kind of Phosphor macro. Each
//! group's names carry a unique marker, so a test can look for them in the binary: a disabled
//! group, or the `off` feature, must leave no trace of its callsites or strings.
//!
//! It records a trace and prints `events=N callsites=M`: the events recorded, and the callsites of
//! this program in the linker section (categories starting with `cgo.`).

#![deny(warnings)]

phosphor::group!(net, feature = "trace-net");
phosphor::group!(disk, feature = "trace-disk");

mod work;

fn main() {
    let log = phosphor::TraceLog::global();
    log.start(phosphor::TraceConfig::new(phosphor::BufferMode::Fixed, 1 << 20)).expect("a trace starts");
    work::run(7);
    log.stop();
    let trace = log.take_trace().expect("a stopped trace");
    let callsites = phosphor::points::list().iter().filter(|p| p.category.starts_with("cgo.")).count();
    println!("events={} callsites={callsites}", trace.stats().recorded);
}
