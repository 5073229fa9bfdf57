//! Phosphor callsites as USDT probes (the `usdt` feature), with no trace running: the probes fire
//! only while a tool (gdb, perf, bpftrace) is attached to them. `tests/it/usdt_bridge.rs` runs this
//! under gdb.
//!
//! `cargo run -p phosphor --features usdt --example usdt_bridge`, then
//! `phosphor probes target/debug/examples/usdt_bridge`.

fn main() {
    let mut evaluated = 0u32;
    for i in 0..3u64 {
        phosphor::trace_instant!("db.sql", "query: select", "rows" => i, "delta" => -5i32 - i as i32);
        {
            phosphor::trace_scope!("app", "work", "n" => {
                evaluated += 1;
                7u32
            });
        }
        phosphor::trace_counter!("mem", "heap", 4096.5f64);
        let m = std::sync::Mutex::new(i);
        let _g = phosphor::trace_lock_guard!("sync", "state", m.lock().unwrap());
    }
    // With no tool attached and no trace, the scope's argument is never evaluated.
    println!("scope arguments evaluated {evaluated} times");
}
