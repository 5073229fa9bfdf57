//! What `phosphor convert FILE --to parquet -o DIR` runs, without the CLI (and without
//! DataFusion: `cargo build --release -p phosphor-sql --no-default-features --features
//! bench-tools --example parquet_convert`), for profiling the conversion: `parquet_convert
//! TRACE.phos DIR`. Prints the rows per table, the bytes written against the trace's, and the time
//! taken.

use std::time::Instant;

use phosphor_sql::{write_parquet, TraceSource};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [trace, dir] = args.as_slice() else {
        eprintln!("usage: parquet_convert TRACE.phos DIR");
        std::process::exit(2);
    };
    let start = Instant::now();
    let summary = match write_parquet(&[TraceSource::new(trace)], dir.as_ref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let secs = start.elapsed().as_secs_f64();
    let size = std::fs::metadata(trace).map(|m| m.len()).unwrap_or(0);
    for (table, _, rows) in &summary.tables {
        println!("{:14} {rows:>10} rows", table.name());
    }
    println!(
        "{} bytes of Parquet from {size} ({:.3}x) in {secs:.2} s wall",
        summary.bytes,
        summary.bytes as f64 / size.max(1) as f64,
    );
}
