//! The exporters hold no copy of a name per thread or per callsite: the reader holds each string
//! once and they borrow it. Measured as the growth of the peak of live bytes (counted per thread
//! by this test binary's allocator) from a file with 10 threads or callsites named by one long
//! string to a file with 40: a copy each would add 30 times its length. And the path-shaped
//! outputs (statistics, folded stacks) cost a few hundred bytes per thread or callsite of one
//! event, measured on 20,000 of them (issue 18's files have a million).

use phosphor_format::file::{CallsiteInfo, Reader, Trailer, Writer};
use phosphor_format::{ArgType, Meta, Phase, Record};

use crate::test_files::{clock, header, mark, slice};

/// The system allocator, counting live bytes per thread.
#[global_allocator]
static GLOBAL: phosphor_testalloc::Counting = phosphor_testalloc::Counting;

/// The peak of the bytes this thread holds while `f` runs, above what it held before.
fn peak_bytes_during(f: impl FnOnce()) -> usize {
    phosphor_testalloc::peak_bytes_during(f).1
}

/// The name every thread or callsite has.
fn long() -> String {
    "n".repeat(256 << 10)
}

fn callsite(id: u32, name: &str, phase: Phase) -> CallsiteInfo<&str> {
    CallsiteInfo {
        id,
        category: name,
        name,
        phase,
        arg_names: ["", ""],
        file: name,
        line: 1,
        name_hash: 0,
        level: (phase == Phase::Log).then_some(phosphor_format::Level::Info),
        dynamic_name: false,
        flow: false,
    }
}

/// Threads `1..=n` named `long()`, each with a slice and a log of short-named callsites.
fn threads(n: u32) -> Vec<u8> {
    let long = long();
    let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
    w.write_callsites(&[callsite(16, "work", Phase::Complete), callsite(17, "note", Phase::Log)]).unwrap();
    w.write_thread_names((1..=n).map(|t| (t, long.as_str()))).unwrap();
    for t in 1..=n {
        w.write_chunk(t, 0, &[slice(16, 10, 5), mark(17, 20)], |_, _| "").unwrap();
    }
    w.finish(&Trailer::default()).unwrap()
}

/// Callsites `16..16 + n` whose name, category and file are `long()`: slices, logs, instants and
/// async begins and ends in turn, one event each on one thread.
fn callsites(n: u32) -> Vec<u8> {
    let long = long();
    let phases = [Phase::Complete, Phase::Log, Phase::Instant, Phase::AsyncBegin, Phase::AsyncEnd];
    let cs: Vec<_> = (0..n).map(|i| callsite(16 + i, &long, phases[i as usize % phases.len()])).collect();
    let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
    w.write_callsites(&cs).unwrap();
    w.write_thread_names([(1, "main")]).unwrap();
    let records: Vec<Record> = cs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let ts = 10 * i as u64;
            match c.phase {
                Phase::Complete => slice(c.id, ts, 5),
                Phase::AsyncBegin | Phase::AsyncEnd => {
                    Record::new(ts, c.id, Meta::new(1, ArgType::None, ArgType::None), [i as u64, 0])
                }
                _ => mark(c.id, ts),
            }
        })
        .collect();
    w.write_chunk(1, 0, &records, |_, _| "").unwrap();
    w.finish(&Trailer::default()).unwrap()
}

/// How much more the export of `file(40)` holds at its peak than that of `file(10)`.
fn growth(file: fn(u32) -> Vec<u8>, export: Export) -> isize {
    let peak = |n| {
        let bytes = file(n);
        peak_bytes_during(|| export(Reader::new(bytes.as_slice()).unwrap())) as isize
    };
    peak(40) - peak(10)
}

fn chrome(r: Reader<&[u8]>) {
    crate::chrome::write_chrome_json(r, std::io::sink()).unwrap();
}

fn perfetto(r: Reader<&[u8]>) {
    crate::perfetto::write_perfetto(r, std::io::sink()).unwrap();
}

fn logs(r: Reader<&[u8]>) {
    let filter = crate::logs::LogFilter::default();
    crate::logs::write_logs(r, std::io::sink(), &filter, &mut Default::default()).unwrap();
}

fn logs_json(r: Reader<&[u8]>) {
    let filter = crate::logs::LogFilter { json: true, ..Default::default() };
    crate::logs::write_logs(r, std::io::sink(), &filter, &mut Default::default()).unwrap();
}

/// An export to a sink.
type Export = fn(Reader<&[u8]>);

/// Each exporter that streams.
const EXPORTS: [(&str, Export); 4] =
    [("chrome", chrome), ("logs", logs), ("logs json", logs_json), ("perfetto", perfetto)];

#[test]
fn exporters_hold_no_copy_of_a_thread_name_per_thread() {
    let half = long().len() as isize / 2;
    for (what, export) in EXPORTS {
        let g = growth(threads, export);
        assert!(g < half, "{what}: 30 more threads named by one string took {g} more bytes");
    }
}

#[test]
fn exporters_hold_no_copy_of_a_callsite_string_per_callsite() {
    let half = long().len() as isize / 2;
    for (what, export) in EXPORTS {
        let g = growth(callsites, export);
        assert!(g < half, "{what}: 30 more callsites named by one string took {g} more bytes");
    }
}

#[test]
fn logs_hold_a_long_message_once_not_again_in_a_line() {
    let format = "m".repeat(1 << 20);
    let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
    let mut cs = callsite(16, "c", Phase::Log);
    cs.name = &format;
    w.write_callsites(&[cs]).unwrap();
    w.write_chunk(1, 0, &[mark(16, 10)], |_, _| "").unwrap();
    let bytes = w.finish(&Trailer::default()).unwrap();
    for export in [logs, logs_json] {
        let peak = peak_bytes_during(|| export(Reader::new(bytes.as_slice()).unwrap()));
        // The string table's copy and the formatted message, and a little more.
        assert!(peak < 2 * format.len() + (512 << 10), "peak {peak} for a message of {}", format.len());
    }
}

/// A file of `n` callsites of distinct names (`{prefix}000000`, ...; ids past the Perfetto
/// exporter's dense range), one complete slice each, on thread 1.
fn distinct_slices(n: u32, prefix: &str) -> Vec<u8> {
    let names: Vec<String> = (0..n).map(|i| format!("{prefix}{i:06}")).collect();
    let cs: Vec<_> =
        names.iter().enumerate().map(|(i, s)| callsite(16 + i as u32, s, Phase::Complete)).collect();
    let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
    w.write_callsites(&cs).unwrap();
    let records: Vec<Record> = (0..n).map(|i| slice(16 + i, u64::from(i) * 10, 5)).collect();
    for (k, part) in records.chunks(127).enumerate() {
        w.write_chunk(1, k as u64, part, |_, _| "").unwrap();
    }
    w.finish(&Trailer::default()).unwrap()
}

#[test]
fn exporters_cost_a_few_bytes_per_callsite_beyond_what_the_reader_holds() {
    // What an export holds at its peak beyond reading alone, per callsite. The writers of
    // begins and ends (Perfetto; Chrome JSON) also hold each thread's slices until their tree is
    // known (`phosphor_model::ordered`): here every slice, all at the top level of one thread,
    // below the limit of what a thread holds, so up to 256 bytes per slice more.
    let n = 30_000u32;
    let bytes = distinct_slices(n, "cs");
    let read = peak_bytes_during(|| {
        let mut r = Reader::new(bytes.as_slice()).unwrap();
        while let Some(chunk) = r.next_chunk().unwrap() {
            for e in chunk.events() {
                e.unwrap();
            }
        }
    });
    for (what, export) in EXPORTS {
        let per_slice = if matches!(what, "perfetto" | "chrome") { 256 } else { 0 };
        let extra = peak_bytes_during(|| export(Reader::new(bytes.as_slice()).unwrap())).saturating_sub(read);
        let bound = (32 + per_slice) * n as usize;
        assert!(extra < bound, "{what}: {} bytes per callsite beyond reading", extra / n as usize);
    }
}

#[test]
fn a_writer_holds_at_most_its_limit_of_slices_per_thread_however_long_the_thread() {
    // Flat slices of one callsite on one thread, 64 times the limit of what a writer holds: the
    // oldest are written early, so it holds about the limit's worth, not the thread's.
    let limit = phosphor_model::ordered::WRITER_PENDING_LIMIT as u32;
    let n = 64 * limit;
    let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
    w.write_callsites(&[callsite(16, "s", Phase::Complete)]).unwrap();
    let records: Vec<Record> = (0..n).map(|i| slice(16, u64::from(i) * 10, 5)).collect();
    for (k, part) in records.chunks(127).enumerate() {
        w.write_chunk(1, k as u64, part, |_, _| "").unwrap();
    }
    let bytes = w.finish(&Trailer::default()).unwrap();
    let read = peak_bytes_during(|| perfetto_read_only(&bytes));
    let extra = peak_bytes_during(|| perfetto(Reader::new(bytes.as_slice()).unwrap())).saturating_sub(read);
    // At most the limit of slices (256 bytes each, records and tree), and 1 MiB of output
    // buffers; holding every slice would take 64 times that.
    let bound = 256 * limit as usize + (1 << 20);
    assert!(extra < bound, "{extra} bytes for {n} slices on one thread");
}

/// Reads every event of `bytes`, as the export's reading does.
fn perfetto_read_only(bytes: &[u8]) {
    let mut r = Reader::new(bytes).unwrap();
    while let Some(chunk) = r.next_chunk().unwrap() {
        for e in chunk.events() {
            e.unwrap();
        }
    }
}

#[test]
fn perfetto_holds_a_long_name_in_the_reader_and_its_interned_entry_only() {
    let long = "p".repeat(4 << 20);
    let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
    let mut cs = callsite(16, &long, Phase::Complete);
    cs.category = "c";
    w.write_callsites(&[cs]).unwrap();
    w.write_chunk(1, 0, &[slice(16, 10, 5), slice(16, 20, 5)], |_, _| "").unwrap();
    let bytes = w.finish(&Trailer::default()).unwrap();
    let peak = peak_bytes_during(|| perfetto(Reader::new(bytes.as_slice()).unwrap()));
    // The string table's copy and the interned entry, each once: the packet that carries the
    // entry is written out in pieces, not copied whole (`perfetto/streamed.rs`).
    assert!(peak < 2 * long.len() + (2 << 20), "peak {peak} for a name of {}", long.len());
}

#[test]
fn stats_json_writes_its_kinds_one_at_a_time() {
    let n = 20_000u32;
    let bytes = distinct_slices(n, "kind");
    let stats = crate::TraceStats::from_reader(Reader::new(bytes.as_slice()).unwrap()).unwrap();
    assert_eq!((stats.kinds.len(), stats.paths().len()), (n as usize, n as usize));
    let all = crate::TableOptions { top: None, ..Default::default() };
    let peak = peak_bytes_during(|| stats.write_json(std::io::sink(), all).unwrap());
    // The two orders (a pointer per kind each) and one kind's value at a time.
    assert!(peak < 64 * n as usize, "{} bytes per kind", peak / n as usize);
}

#[test]
fn logs_sort_in_a_window_of_the_bytes_asked_for_whatever_the_file_holds() {
    // 200,000 logs, about 20 MB waiting if all were held: thread 2's chunks, the later half, first.
    let n = 100_000u64;
    let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
    w.write_callsites(&[callsite(16, "a log", Phase::Log)]).unwrap();
    for (tid, from) in [(2, n), (1, 0)] {
        let records: Vec<Record> = (from..from + n).map(|i| mark(16, i * 10)).collect();
        for (k, part) in records.chunks(127).enumerate() {
            w.write_chunk(tid, k as u64, part, |_, _| "").unwrap();
        }
    }
    let bytes = w.finish(&Trailer::default()).unwrap();
    let read = peak_bytes_during(|| {
        let mut r = Reader::new(bytes.as_slice()).unwrap();
        while let Some(chunk) = r.next_chunk().unwrap() {
            for e in chunk.events() {
                e.unwrap();
            }
        }
    });
    let window = 1 << 20;
    let filter = crate::logs::LogFilter { window_bytes: Some(window), ..Default::default() };
    let (mut summary, mut order) = (None, crate::logs::LogOrder::default());
    let peak = peak_bytes_during(|| {
        let r = Reader::new(bytes.as_slice()).unwrap();
        summary = Some(crate::logs::write_logs(r, std::io::sink(), &filter, &mut order));
    });
    assert_eq!(summary.unwrap().unwrap().events, 2 * n);
    // The window filled with the later half, so the earlier half came too late, all of it.
    assert_eq!(order.out_of_order, n);
    // The heap grows by doubling: up to twice the window, and the output buffer.
    let extra = peak.saturating_sub(read);
    assert!(extra < 2 * window + (256 << 10), "{extra} bytes beyond reading for a {window}-byte window");
}

/// A file of `n` threads named `t000000`, ..., each with one complete slice (of one callsite) in
/// its own chunk.
fn distinct_threads(n: u32) -> Vec<u8> {
    let names: Vec<String> = (0..n).map(|i| format!("t{i:06}")).collect();
    let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
    w.write_callsites(&[callsite(16, "work", Phase::Complete)]).unwrap();
    w.write_thread_names(names.iter().enumerate().map(|(i, s)| (1 + i as u32, s.as_str()))).unwrap();
    for t in 1..=n {
        w.write_chunk(t, 0, &[slice(16, u64::from(t) * 10, 5)], |_, _| "").unwrap();
    }
    w.finish(&Trailer::default()).unwrap()
}

/// What `export` holds at its peak beyond reading `bytes` alone.
fn beyond_reading(bytes: &[u8], export: Export) -> usize {
    let read = peak_bytes_during(|| {
        let mut r = Reader::new(bytes).unwrap();
        while let Some(chunk) = r.next_chunk().unwrap() {
            for e in chunk.events() {
                e.unwrap();
            }
        }
    });
    peak_bytes_during(|| export(Reader::new(bytes).unwrap())).saturating_sub(read)
}

fn stats_text(r: Reader<&[u8]>) {
    let stats = crate::TraceStats::from_reader(r).unwrap();
    let top = crate::TableOptions { top: Some(20), ..Default::default() };
    std::io::Write::write_fmt(&mut std::io::sink(), format_args!("{}", stats.report(top))).unwrap();
}

fn stats_json(r: Reader<&[u8]>) {
    let stats = crate::TraceStats::from_reader(r).unwrap();
    let all = crate::TableOptions { top: None, ..Default::default() };
    stats.write_json(std::io::sink(), all).unwrap();
}

fn folded(r: Reader<&[u8]>) {
    crate::folded::write_folded(r, std::io::sink()).unwrap();
}

/// The path-shaped outputs, and the most each may hold beyond reading per thread (of
/// `distinct_threads`) and per callsite (of `distinct_slices`), 20,000 of them. Before the
/// figures were bounded (a thread's nesting state of ~500 bytes, a map keyed by a second copy of
/// each name, two copies of the kinds' tables, a table of strings per thread): stats 643 and 516,
/// folded 586 and 328; then 320 and 369, and 233 and 274; now, with a thread's one pending slice
/// held in its state and its count of events moved to a list before the slices are resolved,
/// stats 310 per thread; then 325, with the system context's place in each kind (a pointer in the
/// accumulator and in each table's row) and the thread's last complete start; then 338 with its
/// end too (which scope a `phosphor/scope_alloc` event, stamped with its scope's end, belongs to).
const PATH_OUTPUTS: [(&str, Export, usize, usize); 3] =
    [("stats", stats_text, 345, 420), ("stats json", stats_json, 345, 420), ("folded", folded, 280, 300)];

#[test]
fn path_outputs_cost_a_few_hundred_bytes_per_thread_of_one_slice() {
    let n = 20_000u32;
    let bytes = distinct_threads(n);
    for (what, export, most, _) in PATH_OUTPUTS {
        let per = beyond_reading(&bytes, export) / n as usize;
        assert!(per <= most, "{what}: {per} bytes per thread beyond reading");
    }
}

#[test]
fn path_outputs_cost_a_few_hundred_bytes_per_callsite_of_one_slice() {
    let n = 20_000u32;
    let bytes = distinct_slices(n, "cs");
    for (what, export, _, most) in PATH_OUTPUTS {
        let per = beyond_reading(&bytes, export) / n as usize;
        assert!(per <= most, "{what}: {per} bytes per callsite beyond reading");
    }
}

/// A file of `n` callsites of distinct names, one complete slice each on thread 1, the first
/// `shared` of them on thread 2 too.
fn slices_on_one_thread_but(n: u32, shared: u32) -> Vec<u8> {
    let names: Vec<String> = (0..n).map(|i| format!("kind{i:06}")).collect();
    let cs: Vec<_> =
        names.iter().enumerate().map(|(i, s)| callsite(16 + i as u32, s, Phase::Complete)).collect();
    let mut w = Writer::new(Vec::new(), &header(clock(1.0))).unwrap();
    w.write_callsites(&cs).unwrap();
    for (tid, of) in [(1, n), (2, shared)] {
        let records: Vec<Record> = (0..of).map(|i| slice(16 + i, u64::from(i) * 10, 5)).collect();
        for (k, part) in records.chunks(127).enumerate() {
            w.write_chunk(tid, k as u64, part, |_, _| "").unwrap();
        }
    }
    w.finish(&Trailer::default()).unwrap()
}

#[test]
fn the_table_across_threads_holds_no_copy_of_a_path_seen_on_one_thread() {
    let (n, shared) = (20_000u32, 100u32);
    let bytes = slices_on_one_thread_but(n, shared);
    // On this thread, so that what the result holds is counted here.
    let read = || {
        let r = Reader::new(bytes.as_slice()).unwrap();
        crate::StatsBuilder::new(&r.header().clock).background(false).read(r).unwrap()
    };
    let before = phosphor_testalloc::live_bytes();
    let stats = read();
    let held = (phosphor_testalloc::live_bytes() - before) as usize;
    let paths = stats.paths();
    assert_eq!((stats.kinds.len(), paths.len()), ((n + shared) as usize, n as usize));
    // A path of one thread is that thread's row itself; one of two, a row of its own.
    let table = stats.kinds.as_ptr_range();
    for k in paths {
        let on_two = k.name() < format!("kind{shared:06}").as_str();
        let own = !table.contains(&(k as *const crate::KindStats));
        assert_eq!(
            (k.tid, k.count, own),
            if on_two { (None, 2, true) } else { (Some(1), 1, false) },
            "{k:?}"
        );
    }
    // The rows per thread, and a little for each path (its names, its place across threads):
    // a copy of each row across threads would add a row's size per path.
    let row = std::mem::size_of::<crate::KindStats>();
    let per_path = held.saturating_sub(row * (n + shared) as usize) / n as usize;
    assert!(per_path < row / 2, "{per_path} bytes per path besides its row per thread ({row})");
}
