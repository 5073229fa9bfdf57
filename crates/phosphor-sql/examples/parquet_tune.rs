//! Measures Parquet writer settings on one trace: `cargo run --release -p phosphor-sql
//! --no-default-features --features bench-tools --example parquet_tune -- TRACE.phos
//! [columns]`. Reads the trace's tables once into memory, then:
//!
//! - with `columns` (and optionally table names after it: only those), writes every column of
//!   every table with rows alone, once per encoding and zstd level, printing its bytes and
//!   encoding time (the thread's CPU time) (what picks each column's encoding);
//! - writes every table with `writer_properties_for` (the settings `convert` uses), with the
//!   settings before them (dictionary on every column) and with variants of them, printing
//!   bytes per table and per column, and the CPU time.

use std::sync::Arc;
use std::time::Instant;

use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};
use phosphor_sql::{read_tables, writer_properties_for, Table, TraceSource, DEFAULT_BATCH_ROWS};

fn zstd(level: i32) -> Compression {
    Compression::ZSTD(ZstdLevel::try_new(level).unwrap())
}

/// The settings before issue 40's tuning: zstd 3, a dictionary on every column.
fn before() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(zstd(3))
        .set_dictionary_enabled(true)
        .set_dictionary_page_size_limit(4 << 20)
        .set_max_row_group_row_count(Some(1 << 20))
        .set_statistics_enabled(EnabledStatistics::Page)
        .build()
}

/// The CPU time this thread has run, in seconds (`/proc/thread-self/schedstat`'s first field, in
/// ns; 0 where there is none): what encoding costs, whatever else the machine runs meanwhile.
fn thread_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    stat.split_whitespace().next().and_then(|ns| ns.parse::<u64>().ok()).unwrap_or(0) as f64 / 1e9
}

/// Writes `batches` (all of `schema`) with `props` into memory: the bytes per column (compressed,
/// from the footer), the file's bytes, and the CPU seconds it took.
fn write(
    schema: Arc<Schema>,
    batches: &[RecordBatch],
    props: WriterProperties,
) -> (Vec<(String, i64)>, usize, f64) {
    let start = thread_cpu();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, schema.clone(), Some(props)).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    let meta = w.close().unwrap();
    let secs = thread_cpu() - start;
    let mut columns: Vec<(String, i64)> = schema.fields().iter().map(|f| (f.name().clone(), 0)).collect();
    for rg in meta.row_groups() {
        for (i, c) in rg.columns().iter().enumerate() {
            columns[i].1 += c.compressed_size();
        }
    }
    (columns, out.len(), secs)
}

/// The encodings worth trying for a column of type `ty` (`None`: dictionary).
fn candidates(ty: &DataType) -> Vec<Option<Encoding>> {
    let mut c = vec![None, Some(Encoding::PLAIN)];
    match ty {
        DataType::Int32 | DataType::Int64 | DataType::UInt32 | DataType::UInt64 => {
            c.extend([Some(Encoding::DELTA_BINARY_PACKED), Some(Encoding::BYTE_STREAM_SPLIT)])
        }
        DataType::Float64 => c.push(Some(Encoding::BYTE_STREAM_SPLIT)),
        DataType::Utf8 => {
            c.extend([Some(Encoding::DELTA_LENGTH_BYTE_ARRAY), Some(Encoding::DELTA_BYTE_ARRAY)])
        }
        _ => {}
    }
    c
}

fn one_column(encoding: Option<Encoding>, level: i32) -> WriterPropertiesBuilder {
    let b = WriterProperties::builder()
        .set_compression(zstd(level))
        .set_statistics_enabled(EnabledStatistics::Page);
    match encoding {
        None => b.set_dictionary_enabled(true).set_dictionary_page_size_limit(4 << 20),
        Some(e) => b.set_dictionary_enabled(false).set_encoding(e),
    }
}

fn main() {
    let path = std::env::args().nth(1).expect("a trace file");
    let per_column = std::env::args().nth(2).is_some_and(|a| a == "columns");
    // After `columns`, the tables to measure (all by default).
    let only: Vec<String> = std::env::args().skip(3).collect();
    let input = std::fs::metadata(&path).unwrap().len();
    let source = TraceSource::new(&path);
    let start = Instant::now();
    let mut batches: Vec<(Table, RecordBatch)> = Vec::new();
    read_tables(&source, &Table::ALL, DEFAULT_BATCH_ROWS, |t, b| {
        batches.push((t, b));
        Ok(())
    })
    .unwrap();
    println!("read in {:.2} s ({} bytes)", start.elapsed().as_secs_f64(), input);
    let of = |table: Table| -> Vec<RecordBatch> {
        batches.iter().filter(|(t, _)| *t == table).map(|(_, b)| b.clone()).collect()
    };
    if per_column {
        for table in Table::ALL {
            let tb = of(table);
            let rows: usize = tb.iter().map(|b| b.num_rows()).sum();
            if rows < 10_000 || !(only.is_empty() || only.iter().any(|t| t == table.name())) {
                continue;
            }
            println!("{} ({rows} rows)", table.name());
            for (i, field) in table.schema().fields().iter().enumerate() {
                let schema = Arc::new(Schema::new(vec![field.as_ref().clone()]));
                let cols: Vec<RecordBatch> = tb
                    .iter()
                    .map(|b| RecordBatch::try_new(schema.clone(), vec![b.column(i).clone()]).unwrap())
                    .collect();
                let mut line = format!("  {:<14}", field.name());
                for enc in candidates(field.data_type()) {
                    for level in [1, 3] {
                        let (_, bytes, secs) = write(schema.clone(), &cols, one_column(enc, level).build());
                        let name = enc.map_or("DICT".to_owned(), |e| format!("{e:?}"));
                        let name = name.replace("DELTA_", "D_").replace("BYTE_STREAM_SPLIT", "BSS");
                        line.push_str(&format!(
                            " | {name} z{level} {:.2}MB {:.2}s",
                            bytes as f64 / 1e6,
                            secs
                        ));
                    }
                }
                println!("{line}");
            }
        }
    }
    // The settings `convert` uses, the settings before issue 40's tuning, and variants of the
    // former (what each change to them costs or saves on every table).
    type Props = fn(&Schema) -> WriterProperties;
    let variants: [(&str, Props); 4] = [
        ("before", |_| before()),
        ("writer_properties_for()", writer_properties_for),
        ("  with zstd 1", |s| writer_properties_for(s).into_builder().set_compression(zstd(1)).build()),
        ("  with write batches of 8192", |s| {
            writer_properties_for(s).into_builder().set_write_batch_size(8192).build()
        }),
    ];
    for (name, props) in variants {
        let mut total = 0;
        let mut secs = 0.0;
        let mut lines = Vec::new();
        for table in Table::ALL {
            let tb = of(table);
            let schema = table.schema();
            let (columns, bytes, s) = write(schema.clone(), &tb, props(&schema));
            total += bytes;
            secs += s;
            if tb.iter().map(|b| b.num_rows()).sum::<usize>() > 0 {
                let mut columns = columns;
                columns.sort_by_key(|c| -c.1);
                let top: Vec<String> =
                    columns.iter().take(6).map(|(c, b)| format!("{c} {:.2}", *b as f64 / 1e6)).collect();
                lines.push(format!(
                    "  {} {:.2} MB in {:.2} s: {}",
                    table.name(),
                    bytes as f64 / 1e6,
                    s,
                    top.join(", ")
                ));
            }
        }
        println!(
            "{name}: {:.1} MB ({:.3}x the trace), written in {:.2} s of CPU",
            total as f64 / 1e6,
            total as f64 / input as f64,
            secs
        );
        for l in lines {
            println!("{l}");
        }
    }
}
