//! Measures Parquet writer settings on one trace: `cargo run --release -p phosphor-sql --example
//! parquet_tune -- TRACE.phos`. Reads the trace's tables once into memory, then writes them with
//! each setting to a temporary folder, printing the bytes per table and the time.

use std::time::Instant;

use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};
use parquet::schema::types::ColumnPath;
use phosphor_sql::{read_tables, writer_properties, Table, TraceSource, DEFAULT_BATCH_ROWS};

fn zstd(level: i32) -> Compression {
    Compression::ZSTD(ZstdLevel::try_new(level).unwrap())
}

fn base(level: i32) -> WriterPropertiesBuilder {
    WriterProperties::builder().set_compression(zstd(level))
}

/// Integer columns that rarely repeat: delta-encoded, no dictionary.
fn delta(mut b: WriterPropertiesBuilder) -> WriterPropertiesBuilder {
    for c in ["id", "parent_id", "ts", "dur", "self_dur", "slice_id"] {
        let c = ColumnPath::from(c);
        b = b
            .set_column_dictionary_enabled(c.clone(), false)
            .set_column_encoding(c, Encoding::DELTA_BINARY_PACKED);
    }
    b
}

fn main() {
    let path = std::env::args().nth(1).expect("a trace file");
    let input = std::fs::metadata(&path).unwrap().len();
    let source = TraceSource::new(&path);
    let start = Instant::now();
    let mut batches: Vec<(Table, RecordBatch)> = Vec::new();
    read_tables(&source, &Table::ALL, DEFAULT_BATCH_ROWS, |t, b| {
        batches.push((t, b));
        Ok(())
    })
    .unwrap();
    println!("read in {:.2} s", start.elapsed().as_secs_f64());
    for table in Table::ALL {
        let rows: usize = batches.iter().filter(|(t, _)| *t == table).map(|(_, b)| b.num_rows()).sum();
        println!("  {}: {rows} rows", table.name());
    }
    let settings: Vec<(&str, WriterProperties)> = vec![
        ("zstd1 (before)", base(1).build()),
        ("zstd3", base(3).build()),
        ("zstd3 dict4M", base(3).set_dictionary_page_size_limit(4 << 20).build()),
        ("zstd3 dict4M delta", delta(base(3).set_dictionary_page_size_limit(4 << 20)).build()),
        ("zstd1 dict4M delta", delta(base(1).set_dictionary_page_size_limit(4 << 20)).build()),
        (
            "zstd3 dict4M delta nostats",
            delta(base(3).set_dictionary_page_size_limit(4 << 20))
                .set_statistics_enabled(EnabledStatistics::Chunk)
                .build(),
        ),
        ("zstd6 dict4M delta", delta(base(6).set_dictionary_page_size_limit(4 << 20)).build()),
        ("chosen (writer_properties)", writer_properties()),
    ];
    let dir = std::env::temp_dir().join(format!("parquet-tune-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, props) in settings {
        let start = Instant::now();
        let mut total = 0;
        let mut sizes = Vec::new();
        for table in Table::ALL {
            let file = dir.join(format!("{}.parquet", table.name()));
            let mut w = ArrowWriter::try_new(
                std::fs::File::create(&file).unwrap(),
                table.schema(),
                Some(props.clone()),
            )
            .unwrap();
            for (_, b) in batches.iter().filter(|(t, _)| *t == table) {
                w.write(b).unwrap();
            }
            w.close().unwrap();
            let n = std::fs::metadata(&file).unwrap().len();
            total += n;
            sizes.push(format!("{} {:.1} MB", table.name(), n as f64 / 1e6));
        }
        println!(
            "{name}: {:.1} MB ({:.2}x the trace) in {:.2} s: {}",
            total as f64 / 1e6,
            total as f64 / input as f64,
            start.elapsed().as_secs_f64(),
            sizes.join(", ")
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
