//! `phosphor info` on the files `phosphor demo` writes, whole, cut short, missing, or not traces.

use std::path::{Path, PathBuf};

use crate::cli::{count, phosphor, scratch, stderr, stdout};
use phosphor::format::file;

/// Runs a small demo in the scratch directory of `test` with `args`; returns its report and the
/// trace file it wrote.
fn demo(test: &str, args: &[&str]) -> (String, PathBuf) {
    let out = phosphor(test, &[&["demo", "--threads", "2"], args].concat());
    let report = stdout(&out);
    assert!(out.status.success(), "{:?}\n{report}\n{}", out.status, stderr(&out));
    let line = report.lines().find(|l| l.starts_with("trace file")).unwrap_or_else(|| panic!("{report}"));
    let path = line["trace file".len()..].trim_start().split(" (").next().unwrap();
    let path = scratch_path(test).join(path);
    assert!(path.is_file(), "{} is not a file:\n{report}", path.display());
    (report, path)
}

/// The scratch directory of `test`, without emptying it.
fn scratch_path(test: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("phosphor-cli-{test}"))
}

fn info(test: &str, file: &Path) -> std::process::Output {
    phosphor(&format!("{test}-info"), &["info", file.to_str().unwrap()])
}

#[test]
fn the_demo_saves_its_trace_in_demo_out_and_info_reads_back_every_recorded_event() {
    let (report, file) = demo("demo-default-out", &["--events", "5000"]);
    assert!(file.ends_with("demo-out/trace.phos"), "{}", file.display());
    let out = info("demo-default-out", &file);
    let summary = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{summary}\n{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    let version = format!("format version {}.{}", file::FORMAT_MAJOR, file::FORMAT_MINOR);
    assert!(summary.contains(&version), "{summary}");
    assert!(summary.contains(" UTC"), "{summary}");
    // Format 1.5: the host and the boot, as this machine names them.
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let line = format!("  host        {} (boot {})", host.trim(), boot.trim());
    assert!(summary.lines().any(|l| l == line), "no {line:?} in:\n{summary}");
    assert_eq!(count(&summary, "events"), count(&report, "recorded"), "{summary}\n{report}");
    assert_eq!(count(&summary, "recorded"), count(&report, "recorded"), "{summary}");
    assert_eq!(count(&summary, "dropped"), 0, "{summary}");
    for name in ["main", "sink", "worker-0", "worker-1"] {
        assert!(summary.lines().any(|l| l.split_whitespace().nth(1) == Some(name)), "no {name}:\n{summary}");
    }
}

#[test]
fn demo_out_creates_the_directory_and_info_finds_the_chunks_a_ring_overwrote() {
    let dir = scratch("ring-out").join("nested/dir");
    let (report, file) = demo(
        "ring-out",
        &["--events", "100000", "--buffer-mib", "1", "--mode", "ring", "--out", dir.to_str().unwrap()],
    );
    assert_eq!(file, dir.join("trace.phos"));
    let out = info("ring-out", &file);
    let summary = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{summary}\n{}", stderr(&out));
    assert_eq!(count(&summary, "events"), count(&report, "recorded"), "{summary}\n{report}");
    assert_eq!(count(&summary, "dropped"), count(&report, "dropped"), "{summary}\n{report}");
    // Every gap in a thread's sequence numbers is a chunk the ring overwrote. Not every overwritten
    // chunk leaves a gap: those after a thread's last surviving chunk (or all of a thread's) don't.
    let table = summary.split("threads (").nth(1).unwrap().split("\n\n").next().unwrap();
    let lost: u64 = table
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().last().unwrap().replace(',', "").parse::<u64>().unwrap())
        .sum();
    let buffer = summary.lines().find(|l| l.starts_with("buffer")).unwrap();
    let overwritten = buffer.split(", ").find(|p| p.ends_with("overwritten")).unwrap();
    let overwritten: u64 = overwritten.split(' ').next().unwrap().replace(',', "").parse().unwrap();
    assert!(lost <= overwritten, "{summary}");
    assert!(lost > 0, "{summary}");
}

#[test]
fn info_on_a_truncated_file_prints_the_complete_part_then_names_the_offset_and_exits_2() {
    // Plain blocks, so that half the file holds many whole chunks (a compressed group is read
    // whole or not at all: phosphor-format's tests cut those).
    let (_, file) = demo("truncated", &["--events", "5000", "--compression", "none"]);
    let whole = std::fs::read(&file).unwrap();
    let full = stdout(&info("truncated-whole", &file));
    let cut = file.with_file_name("cut.phos");
    std::fs::write(&cut, &whole[..whole.len() / 2 + 1000]).unwrap();

    let out = info("truncated", &cut);
    assert_eq!(out.status.code(), Some(2));
    let summary = stdout(&out);
    let err = stderr(&out);
    assert!(err.contains(cut.to_str().unwrap()), "{err}");
    assert!(err.contains("ends inside"), "{err}");
    // The error's offset is where the complete part ends, as the summary says.
    let offset: u64 = err.split("at byte ").nth(1).unwrap().split(':').next().unwrap().parse().unwrap();
    assert!(offset > 0 && offset <= whole.len() as u64 / 2 + 1000, "{err}");
    assert!(summary.contains(&format!("INCOMPLETE: read up to byte {offset} of")), "{summary}");
    let events = count(&summary, "events");
    assert!(events > 0 && events < count(&full, "events"), "{summary}\n{full}");
    assert!(summary.contains("no trailer was read"), "{summary}");
}

#[test]
fn info_on_a_missing_file_exits_2_naming_it() {
    let out = phosphor("missing", &["info", "no/such/trace.phos"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no/such/trace.phos"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
}

#[test]
fn info_on_a_file_that_is_not_a_trace_exits_2_with_bad_magic_at_byte_0() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let out = info("not-a-trace", &manifest);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(manifest.to_str().unwrap()), "{err}");
    assert!(err.contains("at byte 0") && err.contains("magic"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn info_on_a_corrupt_chunk_prints_the_chunks_before_it_then_names_its_offset_and_exits_2() {
    // Plain blocks, so that the chunk blocks can be walked and one broken.
    let (_, file) = demo("corrupt", &["--events", "5000", "--compression", "none"]);
    let mut bytes = std::fs::read(&file).unwrap();
    // Walk the blocks (16-byte preamble, then kind u32, len u32, body) to the tenth chunk block
    // (kind 5), and break its committed length (body offset 32).
    let (mut at, mut chunks) = (16, 0);
    let chunk_at = loop {
        let word = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
        let (kind, len) = (word(at), word(at + 4) as usize);
        if kind == 5 {
            chunks += 1;
            if chunks == 10 {
                break at;
            }
        }
        at += 8 + len;
    };
    bytes[chunk_at + 8 + 32..chunk_at + 8 + 36].copy_from_slice(&12_345u32.to_le_bytes());
    let bad = file.with_file_name("corrupt.phos");
    std::fs::write(&bad, &bytes).unwrap();

    let out = info("corrupt", &bad);
    assert_eq!(out.status.code(), Some(2));
    let (summary, err) = (stdout(&out), stderr(&out));
    assert_eq!(count(&summary, "chunks"), 9, "{summary}");
    assert!(summary.contains(&format!("read up to byte {chunk_at} of")), "{summary}");
    assert!(err.contains(bad.to_str().unwrap()) && err.contains("committed length 12345"), "{err}");
    assert!(err.contains(&format!("at byte {}", chunk_at + 8 + 32)), "{err}");
}

#[test]
fn a_directory_is_an_error_that_names_it_and_says_why_once() {
    let dir = scratch_path("info-dir");
    std::fs::create_dir_all(&dir).unwrap();
    let out = info("info-dir", &dir);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&dir.display().to_string()) && err.contains("at byte 0"), "{err}");
    assert_eq!(err.matches("Is a directory").count(), 1, "the OS error once, not twice: {err}");
}

/// A chunk whose extents announce another event count than its records hold is reported with its
/// block's offset (it was only counted), so a user can look at the bytes.
#[test]
fn a_chunk_whose_event_count_disagrees_is_reported_with_its_offset() {
    use phosphor::format::file::{CallsiteInfo, ClockInfo, Header, Trailer, Writer};
    use phosphor::format::{Meta, Phase, Record};
    let header = Header {
        clock: ClockInfo::monotonic(0, 0),
        pid: 1,
        process_name: "miscount".into(),
        boot_id: None,
        host_name: None,
    };
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    w.write_callsites(&[CallsiteInfo {
        id: 16,
        category: "c".into(),
        name: "tick".into(),
        phase: Phase::Instant,
        arg_names: [String::new(), String::new()],
        file: "f.rs".into(),
        line: 1,
        name_hash: 0,
        level: None,
        dynamic_name: false,
        flow: false,
    }])
    .unwrap();
    let at = w.offset();
    let records = [Record::new(10, 16, Meta(0), [0; 2]), Record::new(20, 16, Meta(0), [0; 2])];
    w.write_chunk(1, 0, &records, |_, _| "").unwrap();
    let mut bytes = w.finish(&Trailer { recorded: 2, ..Trailer::default() }).unwrap();
    // The extents' event count: 8 bytes of block framing, then offset 36 of the extents.
    let count = at as usize + 8 + 36;
    assert_eq!(bytes[count..count + 4], 2u32.to_le_bytes());
    bytes[count..count + 4].copy_from_slice(&1u32.to_le_bytes());
    let dir = scratch_path("info-miscount");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("miscount.phos");
    std::fs::write(&file, &bytes).unwrap();
    let out = info("info-miscount", &file);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("the chunk block at byte {at}, announces 1 and holds 2")),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Names longer than `format!` can pad to (65,535 characters) are printed cut, not a panic;
/// columns are padded to the longest name up to 64 characters only, and callsites are listed by id.
#[test]
fn names_longer_than_a_format_width_are_printed_and_pad_no_other_row() {
    use phosphor::format::file::{CallsiteInfo, Header, Trailer, Writer};
    use phosphor::format::{Meta, Phase, Record};
    let clock = crate::cli::nanosecond_clock();
    let long = "L".repeat(70_000);
    let callsite = |id: u32, name: &'static str| CallsiteInfo {
        id,
        category: "c",
        name,
        phase: Phase::Instant,
        arg_names: ["", ""],
        file: "f.rs",
        line: id,
        name_hash: 0,
        level: None,
        dynamic_name: false,
        flow: false,
    };
    let long_name: &'static str = long.clone().leak();
    let mut w = Writer::new(
        Vec::new(),
        &Header { clock, pid: 1, process_name: "long".into(), boot_id: None, host_name: None },
    )
    .unwrap();
    // Defined out of id order: the listing sorts them.
    w.write_callsites(&[callsite(17, "short"), callsite(16, long_name)]).unwrap();
    w.write_thread_names([(1, long.as_str()), (2, "two")]).unwrap();
    for tid in [1, 2] {
        w.write_chunk(tid, 0, &[Record::new(10, 16, Meta(0), [0; 2])], |_, _| "").unwrap();
    }
    let bytes = w.finish(&Trailer { recorded: 2, ..Trailer::default() }).unwrap();
    let dir = scratch_path("info-long-names");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("long.phos");
    std::fs::write(&file, &bytes).unwrap();
    let out = phosphor("info-long-names-run", &["info", "--callsites", file.to_str().unwrap()]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let line = |start: &str| text.lines().find(|l| l.trim_start().starts_with(start)).unwrap_or_default();
    // Cut past 512 bytes, as every listing cuts a name (one string may name every thread).
    let cut = format!("{}{}", &long[..phosphor_export::MAX_NAME_BYTES], phosphor_export::NAME_CUT_MARK);
    assert!(line("1 ").contains(&cut) && line("1 ").len() < 1000, "thread 1's name is shown cut");
    let two = line("2 ");
    assert!(
        two.contains("two") && two.len() < 200,
        "thread 2's row is not padded to 70,000: {} bytes",
        two.len()
    );
    let (first, second) = (line("16 "), line("17 "));
    assert!(first.contains(&cut) && first.ends_with("f.rs:16"), "{}", &first[..100]);
    assert!(second.contains("short") && second.len() < 200 && second.ends_with("f.rs:17"), "{second}");
    assert!(text.find("f.rs:16") < text.find("f.rs:17"), "by id");
}

/// A `dyn` callsite's name is the source text of the expression that names its events: the
/// listing says it is dynamic rather than pass the text off as a name.
#[test]
fn a_callsite_named_at_run_time_is_listed_as_dynamic_with_its_expression() {
    use phosphor::format::file::{CallsiteInfo, Header, Trailer, Writer};
    use phosphor::format::Phase;
    let clock = crate::cli::nanosecond_clock();
    let callsite = |id: u32, name: &'static str, dynamic_name: bool| CallsiteInfo {
        id,
        category: "demo",
        name,
        phase: Phase::Complete,
        arg_names: ["", ""],
        file: "w.rs",
        line: id,
        name_hash: 0,
        level: None,
        dynamic_name,
        flow: false,
    };
    let mut w = Writer::new(
        Vec::new(),
        &Header { clock, pid: 1, process_name: "dyn".into(), boot_id: None, host_name: None },
    )
    .unwrap();
    w.write_callsites(&[
        callsite(16, "STAGES[(item.id % 3) as usize]", true),
        callsite(17, "consume", false),
    ])
    .unwrap();
    let bytes = w.finish(&Trailer::default()).unwrap();
    let dir = scratch_path("info-dynamic");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("dyn.phos");
    std::fs::write(&file, &bytes).unwrap();
    let out = phosphor("info-dynamic-run", &["info", "--callsites", file.to_str().unwrap()]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let row = |id: &str| text.lines().find(|l| l.trim_start().starts_with(id)).unwrap_or_default();
    let words = |l: &str| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>().join(" ");
    assert_eq!(
        words(row("16 ")),
        "16 demo dynamic (STAGES[(item.id % 3) as usize]) complete w.rs:16",
        "{text}"
    );
    assert_eq!(words(row("17 ")), "17 demo consume complete w.rs:17", "{text}");
    // The name column is as wide as the dynamic cell: the phases line up.
    assert_eq!(row("16 ").find("complete"), row("17 ").find("complete"), "{text}");
}

/// Format 1.7: the same trace written plain and with each codec. Info reports the same events, the
/// codec, the ratio of the decoded bytes to the stored ones, and the bytes per event of each file.
#[test]
fn info_prints_the_codec_the_ratio_and_the_bytes_per_event_of_a_compressed_file() {
    use phosphor::format::file::{CallsiteInfo, Compression, Header, Trailer, Writer};
    use phosphor::format::{Meta, Phase, Record};
    let header = Header {
        clock: crate::cli::nanosecond_clock(),
        pid: 1,
        process_name: "compressed".into(),
        boot_id: None,
        host_name: None,
    };
    let write = |compression: Compression| {
        let mut w = Writer::with_compression(Vec::new(), &header, compression).unwrap();
        w.write_callsites(&[CallsiteInfo {
            id: 16,
            category: "c",
            name: "tick",
            phase: Phase::Instant,
            arg_names: ["", ""],
            file: "f.rs",
            line: 1,
            name_hash: 0,
            level: None,
            dynamic_name: false,
            flow: false,
        }])
        .unwrap();
        for c in 0..200u64 {
            let records: Vec<Record> =
                (0..127).map(|i| Record::new(1_000 + (c * 127 + i) * 50, 16, Meta(0), [0; 2])).collect();
            w.write_chunk(1, c, &records, |_, _| "").unwrap();
        }
        w.finish(&Trailer { recorded: 200 * 127, ..Trailer::default() }).unwrap()
    };
    let dir = scratch_path("info-compressed");
    std::fs::create_dir_all(&dir).unwrap();
    let plain = write(Compression::None);
    let mut reports = Vec::new();
    for (name, c) in
        [("none", Compression::None), ("zstd:3", Compression::Zstd { level: 3 }), ("lz4", Compression::Lz4)]
    {
        let bytes = write(c);
        let file = dir.join(format!("{}.phos", name.replace(':', "-")));
        std::fs::write(&file, &bytes).unwrap();
        let out = phosphor(
            &format!("info-compressed-{}", name.replace(':', "-")),
            &["info", file.to_str().unwrap()],
        );
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
        assert_eq!(count(&text, "events"), 200 * 127, "{text}");
        let line = text.lines().find(|l| l.starts_with("compression ")).unwrap_or_else(|| panic!("{text}"));
        if c == Compression::None {
            assert_eq!(line, "compression none");
        } else {
            let ratio = plain.len() as f64 / bytes.len() as f64;
            assert!(ratio > 2.0, "{name}: {ratio}");
            assert!(line.starts_with(&format!("compression {name}, ratio {ratio:.2} (")), "{line}");
        }
        let per_event = format!("{:.1} bytes per event", bytes.len() as f64 / (200.0 * 127.0));
        let size = text.lines().find(|l| l.starts_with("file size")).unwrap();
        assert!(size.ends_with(&per_event), "{size} (want {per_event})");
        reports.push(text);
    }
}
