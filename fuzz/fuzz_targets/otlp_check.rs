//! The OTLP conversion's checks, shared by the `craft` target (valid files of hostile shapes,
//! every run deep in the assembler) and the `export` target (mutated bytes).
//!
//! What must hold, for any file and options: `convert` finishes with `Ok` (writing into a `Vec`
//! cannot fail) and any damage is an error at an offset inside the input;
//! the output decodes with the official messages (protobuf; JSON Lines with the crate's serde);
//! the spans decoded are the spans counted, and the spans made are the spans written plus those
//! the selection left out; ids have their sizes, span ids are non-zero and unique, no span ends
//! before it starts, and a span's parent is a span of the output (no trace context can be in
//! these files unless its callsite was crafted, and then it is counted); a second conversion gives
//! the same bytes (ids are deterministic); the live assembler (a hold time, drains, idle time)
//! makes the same number of spans.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use phosphor_format::file::Reader;
use phosphor_otlp::assemble::{AssembleOptions, Assembler};
use phosphor_otlp::convert::{convert, ConvertOptions, Converted, Encoding};
use phosphor_otlp::ids::GroupRoots;
use phosphor_otlp::select::{Sampling, Selection, TailRules};
use phosphor_otlp::{ExportTraceServiceRequest, Span};
use prost::Message as _;

/// Options drawn from the input (the defaults once it is used up).
#[allow(dead_code)] // the `export` target takes the whole input as the file, and draws no options
pub fn options(u: &mut Unstructured<'_>) -> Result<ConvertOptions> {
    const GLOBS: [&str; 6] = ["*", "a*", "*/*", "?", "frame/*", ""];
    let selection = Selection {
        min_duration_ns: if u.arbitrary()? { Some(u.int_in_range(0..=10_000)?) } else { None },
        roots_only: u.arbitrary()?,
        paths: if u.arbitrary()? { vec![(*u.choose(&GLOBS)?).to_owned()] } else { Vec::new() },
        slowest_roots: if u.arbitrary()? { Some(u.int_in_range(0..=5)?) } else { None },
        sampling: Sampling {
            ratio: if u.arbitrary()? { Some(f64::from(u.int_in_range(0u8..=4)?) / 4.0) } else { None },
            export_unsampled_callers: u.arbitrary()?,
        },
        tail: TailRules {
            slower_than_ns: if u.arbitrary()? { Some(u.int_in_range(0..=10_000)?) } else { None },
            errors: u.arbitrary()?,
            slowest_per_minute: if u.arbitrary()? { Some(u.int_in_range(1..=3)?) } else { None },
        },
    };
    let group_roots = match u.int_in_range(0u8..=2)? {
        0 => GroupRoots::None,
        1 => GroupRoots::Process,
        _ => GroupRoots::Window(u.int_in_range(1..=1_000_000)?),
    };
    Ok(ConvertOptions {
        assemble: AssembleOptions { selection, hold_ns: None, group_roots },
        service_name: None,
        max_spans: u.int_in_range(1..=300)?,
        // Small bounds too, so that a span larger than a request is reached.
        max_bytes: u.int_in_range(64..=1 << 20)?,
        encoding: if u.arbitrary()? { Encoding::Json } else { Encoding::Protobuf },
    })
}

/// Every check on `file` (whose reading may stop at damage).
pub fn check(file: &[u8], options: &ConvertOptions, hold_ns: u64, drain_every: u32) {
    let Ok(mut reader) = Reader::new(file) else { return };
    let mut out = Vec::new();
    let once = convert(&mut reader, options, &mut out).expect("writing into a Vec");
    let a = decoded(&out, &once, options.encoding, file.len());
    let Ok(mut second) = Reader::new(file) else { unreachable!("it read once") };
    let mut again = Vec::new();
    let twice = convert(&mut second, options, &mut again).expect("writing into a Vec");
    assert_eq!(once.stats, twice.stats);
    assert_eq!(a, decoded(&again, &twice, options.encoding, file.len()));
    assert!(out == again, "a second conversion gives the same bytes");
    live(file, &options.assemble.selection, hold_ns, drain_every);
}

/// A span as its id and a hash of its encoding (names can be megabytes: the outputs of two
/// conversions are compared by these).
type Digest = (Vec<u8>, u64);

/// The spans of one conversion's output, checked; their digests sorted by span id.
fn decoded(out: &[u8], c: &Converted, encoding: Encoding, len: usize) -> Vec<Digest> {
    if let Some(d) = &c.damage {
        assert!(d.offset() <= len as u64, "damage at {} past {len}", d.offset());
    }
    let requests: Vec<ExportTraceServiceRequest> = match encoding {
        Encoding::Protobuf => vec![ExportTraceServiceRequest::decode(out).expect("protobuf decodes")],
        Encoding::Json => std::str::from_utf8(out)
            .expect("JSON is UTF-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is a request"))
            .collect(),
    };
    let mut spans: Vec<Span> = requests
        .into_iter()
        .flat_map(|r| r.resource_spans)
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .collect();
    assert_eq!(spans.len() as u64, c.spans);
    // Every span made is written or counted once: left out by the selection, by head sampling
    // or by the tail rules.
    let left_out = c.stats.spans_unselected + c.stats.spans_sampled_out + c.stats.spans_tail_dropped;
    assert_eq!(c.stats.spans, c.spans + left_out);
    let ids: HashSet<Vec<u8>> = spans.iter().map(|s| s.span_id.clone()).collect();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");
    for s in &spans {
        assert_eq!(s.trace_id.len(), 16);
        assert_eq!(s.span_id.len(), 8);
        assert!(s.span_id.iter().any(|&b| b != 0));
        assert!(s.start_time_unix_nano <= s.end_time_unix_nano);
        if c.stats.contexts == 0 && !s.parent_span_id.is_empty() {
            assert!(ids.contains(&s.parent_span_id), "a parent is in the output");
        }
    }
    let mut digests: Vec<Digest> = spans
        .drain(..)
        .map(|s| {
            let mut h = DefaultHasher::new();
            s.encode_to_vec().hash(&mut h);
            (s.span_id, h.finish())
        })
        .collect();
    digests.sort();
    digests
}

/// The live path: a hold time, drains every `drain_every` events, idle time between some.
fn live(file: &[u8], selection: &Selection, hold_ns: u64, drain_every: u32) {
    let Ok(mut reader) = Reader::new(file) else { return };
    let options = AssembleOptions {
        selection: selection.clone(),
        hold_ns: Some(hold_ns),
        ..AssembleOptions::default()
    };
    let mut asm = Assembler::new(reader.header(), options);
    let (mut spans, mut out, mut n) = (0u64, Vec::new(), 0u32);
    let _ = reader.for_each_event(|e| {
        asm.push(e);
        n = n.wrapping_add(1);
        if n % drain_every.max(1) == 0 {
            if n % 3 == 0 {
                asm.idle(hold_ns / 2 + 1);
            }
            asm.drain(&mut out);
            spans += out.len() as u64;
            asm.recycle(&mut out);
        }
    });
    asm.finish(&mut out);
    spans += out.len() as u64;
    let stats = asm.stats();
    assert_eq!(
        stats.spans,
        spans + stats.spans_unselected + stats.spans_sampled_out + stats.spans_tail_dropped
    );
}
