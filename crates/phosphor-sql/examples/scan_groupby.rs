//! The SQL scan of `SELECT name, count(*), sum(dur) FROM slices GROUP BY name` without the
//! engine, for timing and profiling the reading side alone (`cargo build --release -p
//! phosphor-sql --no-default-features --features bench-tools --example scan_groupby`):
//!
//! - `scan_groupby TRACE.phos [nested]` reads `slices`' `name` and `dur` columns (with
//!   `nested`, `depth` too, which the nesting gives) as a query's scan reads them, adds them up
//!   per name, and prints the groups (sorted) and the rows read;
//! - `scan_groupby --record OUT.phos WORKERS ITERATIONS` records a trace of the shape of
//!   `phosphor demo`'s (workers of nested scopes with arguments, begin/end batches, instants,
//!   counters, logs, a lock, scopes named at run time) to read, when the demo's is not at hand.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int64Type;
use phosphor::{
    trace_begin, trace_counter, trace_end, trace_instant, trace_lock_guard, trace_log, trace_scope,
    BufferMode, TraceConfig, TraceLog, TraceLogConfig,
};
use phosphor_sql::{read_columns, Table, TraceSource};

const STAGES: [&str; 3] = ["decode", "resize", "encode"];

fn record(out: &str, workers: usize, iterations: u64) {
    let log = TraceLog::new(TraceLogConfig::default()).expect("a log");
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 30)).expect("started");
    let lock = Mutex::new(0u64);
    std::thread::scope(|s| {
        for w in 0..workers {
            let (log, lock) = (&log, &lock);
            s.spawn(move || {
                let mut state = 0x9e37_79b9_7f4a_7c15 ^ w as u64;
                for i in 0..iterations {
                    if i % 64 == 0 {
                        trace_begin!(log: log, "demo", "batch", "first" => i);
                    }
                    {
                        trace_scope!(log: log, "demo", "iteration", "i" => i);
                        {
                            trace_scope!(log: log, "demo", "parse", "bytes" => i % 4096);
                            state = state.rotate_left(5) ^ i;
                        }
                        {
                            trace_scope!(log: log, "demo", "transform");
                            trace_scope!(log: log, "demo", "hash");
                            state = state.wrapping_mul(0x100_0000_01b3);
                        }
                        trace_scope!(log: log, "demo", "flush", "pending" => i % 1024);
                        if i % 16 == 0 {
                            trace_instant!(log: log, "demo", "checkpoint", "iteration" => i, "checksum" => state);
                        }
                        if i % 64 == 0 {
                            trace_log!(log: log, info, "demo", "worker {} at {}", w as u64, i);
                        }
                        if i % 4 == 0 {
                            let _g = trace_lock_guard!(log: log, "demo", "queue", lock.lock().unwrap());
                            trace_counter!(log: log, "demo", "queue_depth", i % 48);
                            trace_scope!(log: log, "demo", dyn STAGES[(i / 4 % 3) as usize]);
                        }
                    }
                    if i % 64 == 63 {
                        trace_end!(log: log, "demo", "batch");
                    }
                }
            });
        }
    });
    log.stop();
    let trace = log.take_trace().expect("a trace");
    let file = std::fs::File::create(out).expect("created");
    trace.write_to(std::io::BufWriter::new(file)).expect("written");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, out, workers, iterations] = args.as_slice() {
        if flag == "--record" {
            record(out, workers.parse().expect("workers"), iterations.parse().expect("iterations"));
            return;
        }
    }
    let Some(trace) = args.first() else {
        eprintln!("usage: scan_groupby TRACE.phos [nested] | --record OUT.phos WORKERS ITERATIONS");
        std::process::exit(2);
    };
    let schema = Table::Slices.schema();
    let at = |name: &str| schema.index_of(name).expect("a column of slices");
    let mut columns = vec![at("name"), at("dur")];
    if args.get(1).is_some_and(|a| a == "nested") {
        columns.push(at("depth"));
    }
    let start = Instant::now();
    let mut groups: BTreeMap<String, (u64, i64)> = BTreeMap::new();
    let mut rows = 0;
    let read = read_columns(&TraceSource::new(trace), Table::Slices, &columns, 8192, |_, b| {
        let (name, dur) = (b.column(0).as_string::<i32>(), b.column(1).as_primitive::<Int64Type>());
        rows += b.num_rows();
        for i in 0..b.num_rows() {
            let n = name.value(i);
            let d = if dur.is_valid(i) { dur.value(i) } else { 0 };
            match groups.get_mut(n) {
                Some(g) => *g = (g.0 + 1, g.1 + d),
                None => {
                    groups.insert(n.to_owned(), (1, d));
                }
            }
        }
        Ok(())
    });
    if let Err(e) = read {
        eprintln!("{e}");
        std::process::exit(1);
    }
    for (name, (count, dur)) in &groups {
        println!("{name},{count},{dur}");
    }
    eprintln!("{rows} rows in {:.3} s", start.elapsed().as_secs_f64());
}
