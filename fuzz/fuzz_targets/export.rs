//! Fuzzes everything that reads a trace file after the reader: the Perfetto (with and without its
//! async plan), Chrome JSON and folded
//! exporters, the statistics (also with the system context, and the samples' folded stacks), and `phosphor logs` (the log formatter, on the file's format strings
//! and parameters, and on the input itself as a format string). Any input must give a result or an error naming an offset inside
//! the input, and never panic. Inputs start from mutations of real files (seed the corpus with
//! `crates/phosphor-format/tests/data/*.phtrace`).

#![no_main]

mod otlp_check;

use libfuzzer_sys::fuzz_target;
use phosphor_export::logs::{format_log, write_logs, LogFilter, LogOrder};
use phosphor_export::sample_stacks::{self, SampleScopes};
use phosphor_export::symbolize::Symbolizer;
use phosphor_export::system::SystemContext;
use phosphor_export::{chrome, folded, perfetto, StatsBuilder, TraceStats};
use phosphor_format::file::Reader;

fuzz_target!(|data: &[u8]| {
    let within = |offset: Option<u64>| assert!(offset.is_none_or(|o| o <= data.len() as u64));
    if let Ok(r) = Reader::new(data) {
        within(perfetto::write_perfetto(r, std::io::sink()).err().and_then(|e| e.offset()));
    }
    // The async lanes planned in a first reading, then followed in a second.
    if let (Ok(first), Ok(second)) = (Reader::new(data), Reader::new(data)) {
        let plan = perfetto::AsyncPlan::from_reader(first);
        within(
            perfetto::write_perfetto_planned(second, plan, std::io::sink()).err().and_then(|e| e.offset()),
        );
    }
    if let Ok(r) = Reader::new(data) {
        within(chrome::write_chrome_json(r, std::io::sink()).err().and_then(|e| e.offset()));
    }
    if let Ok(r) = Reader::new(data) {
        within(folded::write_folded(r, std::io::sink()).err().and_then(|e| e.offset()));
    }
    if let Ok(r) = Reader::new(data) {
        let order = &mut LogOrder::default();
        within(write_logs(r, std::io::sink(), &LogFilter::default(), order).err().and_then(|e| e.offset()));
    }
    // The OTLP conversions, protobuf and JSON, with one selection.
    let mut options = phosphor_otlp::convert::ConvertOptions { max_spans: 64, ..Default::default() };
    otlp_check::check(data, &options, 1_000_000, 512);
    options.encoding = phosphor_otlp::convert::Encoding::Json;
    options.assemble.selection.min_duration_ns = Some(100);
    otlp_check::check(data, &options, 0, 1);
    if let Ok(fmt) = std::str::from_utf8(data) {
        let mut out = String::new();
        format_log(
            &mut out,
            fmt,
            &[phosphor_format::file::Value::U64(7), phosphor_format::file::Value::Str(fmt)],
        );
    }
    if let Ok(r) = Reader::new(data) {
        match TraceStats::from_reader(r) {
            Ok(stats) => {
                let _ = stats.to_string();
            }
            Err(e) => {
                within(Some(e.source.offset()));
                let _ = e.partial.to_string();
            }
        }
    }
    // The system context (format 1.6): the statistics asking it about each scope, and the sample
    // flame graph with its scopes; symbolized offline (the input's mappings name files).
    if let (Ok(first), Ok(second), Ok(third)) = (Reader::new(data), Reader::new(data), Reader::new(data)) {
        let Ok(mut context) = SystemContext::read(first) else { return };
        context.name_leaves(&mut Symbolizer::offline());
        let (scopes, _) = SampleScopes::read(third, &context);
        let _ = sample_stacks::fold_samples(&context, &mut Symbolizer::offline(), Some(&scopes), |_| None);
        let builder = StatsBuilder::new(&second.header().clock).system(std::sync::Arc::new(context));
        match builder.read(second) {
            Ok(stats) => {
                let _ = stats.to_string();
            }
            Err(e) => within(Some(e.source.offset())),
        }
    }
});
