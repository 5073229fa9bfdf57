//! What reading costs in memory: each string of the file once, however many callsites and
//! threads name it, and a small fixed cost per entry, so a file's tables take a few times its
//! size at most.
//!
//! The binary's allocator counts the bytes live on each thread and their peak, so a test measures
//! its own reading while the others run.

use phosphor_format::file::{Block, CallsiteInfo, ClockInfo, Header, Reader, Trailer, Writer};
use phosphor_format::{Meta, Phase, Record};

/// The system allocator, counting live bytes per thread.
#[global_allocator]
static GLOBAL: phosphor_testalloc::Counting = phosphor_testalloc::Counting;

/// The peak of the bytes this thread holds while `f` runs, above what it held before.
pub(crate) use phosphor_testalloc::peak_bytes_during;

fn header() -> Header {
    let clock = ClockInfo::monotonic(0, 0);
    Header { clock, pid: 1, process_name: "memory".into(), boot_id: None, host_name: None }
}

/// A file whose callsites `16..16 + n` have the strings `strings(i)` (category, name, argument
/// names, file), `threads` threads named `thread(t)`, and `events` instants of the first callsites.
fn file<'s>(
    n: u32,
    events: u32,
    strings: impl Fn(u32) -> [&'s str; 5],
    threads: u32,
    thread: impl Fn(u32) -> &'s str,
) -> Vec<u8> {
    let callsites: Vec<CallsiteInfo<&str>> = (0..n)
        .map(|i| {
            let [category, name, a0, a1, file] = strings(i);
            CallsiteInfo {
                id: 16 + i,
                category,
                name,
                phase: Phase::Instant,
                arg_names: [a0, a1],
                file,
                line: i,
                name_hash: 0,
                level: None,
                dynamic_name: false,
                flow: false,
            }
        })
        .collect();
    let mut w = Writer::new(Vec::new(), &header()).unwrap();
    w.write_callsites(&callsites).unwrap();
    w.write_thread_names((1..=threads).map(|t| (t, thread(t)))).unwrap();
    let records: Vec<Record> =
        (0..events).map(|i| Record::new(u64::from(i), 16 + i, Meta(0), [0, 0])).collect();
    for (k, part) in records.chunks(127).enumerate() {
        w.write_chunk(1, k as u64, part, |_, _| "").unwrap();
    }
    w.finish(&Trailer::default()).unwrap()
}

/// Reads every block and decodes every event; returns the events.
fn read_all(reader: &mut Reader<&[u8]>) -> usize {
    let mut events = 0;
    while let Some(block) = reader.next_block().unwrap() {
        if let Block::Chunk(chunk) = block {
            for e in chunk.events() {
                e.unwrap();
                events += 1;
            }
        }
    }
    events
}

#[test]
fn a_string_named_by_many_callsites_and_threads_is_held_once() {
    let long = "x".repeat(1000);
    let bytes = file(50, 50, |_| [long.as_str(); 5], 20, |_| long.as_str());
    let mut r = Reader::new(bytes.as_slice()).unwrap();
    assert_eq!(read_all(&mut r), 50);
    let at = |s: &str| s.as_ptr();
    let first = r.callsite(16).unwrap();
    for cs in r.callsites() {
        for s in [cs.category, cs.name, cs.arg_names[0], cs.arg_names[1], cs.file] {
            assert_eq!((s.as_str(), at(&s)), (long.as_str(), at(&first.name)), "callsite {}", cs.id);
        }
    }
    for (tid, name) in r.thread_names() {
        assert_eq!(at(&name), at(&first.name), "thread {tid}");
    }
    assert_eq!((r.strings().len(), r.strings().text_len()), (1, long.len()));
}

#[test]
fn reading_long_strings_named_many_times_holds_a_few_times_the_file_at_most() {
    // 64 KiB named five times by each of 100 callsites and by 100 threads: a copy per name would
    // be 600 copies, 38 MiB, for a file of 70 KiB.
    let long = "y".repeat(64 << 10);
    let bytes = file(100, 100, |_| [long.as_str(); 5], 100, |_| long.as_str());
    let (events, peak) = peak_bytes_during(|| read_all(&mut Reader::new(bytes.as_slice()).unwrap()));
    assert_eq!(events, 100);
    assert!(peak <= 3 * bytes.len(), "peak {peak} bytes reading a file of {}", bytes.len());
}

#[test]
fn reading_many_callsites_costs_a_small_multiple_of_their_entries() {
    // 30,000 callsites of distinct names, the other strings shared: 52 bytes each in the file
    // (the 40-byte entry, the name and its length), and 1,000 events.
    let names: Vec<String> = (0..30_000).map(|i| format!("cs{i:06}")).collect();
    let bytes = file(30_000, 1000, |i| ["cat", &names[i as usize], "", "", "src/a.rs"], 1, |_| "main");
    let (events, peak) = peak_bytes_during(|| read_all(&mut Reader::new(bytes.as_slice()).unwrap()));
    assert_eq!(events, 1000);
    assert!(peak <= 3 * bytes.len(), "peak {peak} bytes reading a file of {}", bytes.len());
}

#[test]
fn a_long_block_is_read_into_a_buffer_of_its_length_not_double() {
    // A string block of 1 MiB and 8 bytes: a buffer grown by doubling would reach 2 MiB.
    let long = "z".repeat(1 << 20);
    let bytes = file(1, 0, |_| [long.as_str(); 5], 0, |_| "");
    let (events, peak) = peak_bytes_during(|| read_all(&mut Reader::new(bytes.as_slice()).unwrap()));
    assert_eq!(events, 0);
    // The block's bytes, the string table's copy, and a little for the rest.
    assert!(peak <= 2 * long.len() + (64 << 10), "peak {peak} bytes for a string of {}", long.len());
}

#[test]
fn a_long_block_is_freed_once_read() {
    let long = "w".repeat(4 << 20);
    let bytes = file(1, 1, |_| [long.as_str(); 5], 0, |_| "");
    let base = phosphor_testalloc::live_bytes();
    let mut r = Reader::new(bytes.as_slice()).unwrap();
    assert_eq!(read_all(&mut r), 1);
    // The string table's copy stays, the 4 MiB block's buffer does not.
    let held = (phosphor_testalloc::live_bytes() - base) as usize;
    assert!(held < long.len() + (1 << 20), "the reader holds {held} bytes for a string of {}", long.len());
    drop(r);
}
