//! Requests a collector takes: every request bounded by spans and bytes and decoding on its own,
//! together the spans of the single-stream conversion; and times that nest: on a clock finer than
//! a nanosecond, no child starts before or ends after its parent once written in nanoseconds.

use std::collections::HashMap;
use std::io;

use phosphor_craft::{callsite, records, tsc, ChunkStream, Rng, TraceWriter};
use phosphor_format::file::{Reader, Trailer};
use phosphor_format::Phase;
use phosphor_otlp::convert::{convert, convert_to, ConvertOptions, Encoding, Requests};
use phosphor_otlp::{ExportTraceServiceRequest, Span};
use prost::Message as _;

const ID: u32 = phosphor_format::FIRST_CALLSITE_ID;

/// Complete events nested in `[start, end]` (ticks), children first, as a thread records them;
/// children often share a tick with their parent's ends.
fn nest(rng: &mut Rng, start: u64, end: u64, depth: u32, out: &mut Vec<[phosphor_format::Record; 1]>) {
    if depth < 4 {
        let mut at = start;
        while at < end && rng.below(3) != 0 {
            let s = at + rng.below(3);
            let e = (s + rng.below(8)).min(end);
            if s > e {
                break;
            }
            nest(rng, s, e, depth + 1, out);
            at = e;
        }
    }
    out.push(records::complete(start, ID + depth.min(3), end - start));
}

/// A file on a clock of 0.385187 ns a tick (a 2.6 GHz TSC), a thread per `threads`.
fn tsc_file(seed: u64, threads: u32) -> Vec<u8> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut w = TraceWriter::new(Vec::new(), tsc(0.385187), "ticks").unwrap();
    w.strings(&["craft", "", "requests.rs"]).unwrap();
    let names = w.strings(&["a", "b", "c", "d"]).unwrap();
    w.callsites((0..4).map(|i| callsite(ID + i, Phase::Complete, names + i))).unwrap();
    for tid in 1..=threads {
        let mut stream = ChunkStream::new(tid);
        let mut events = Vec::new();
        let mut at = 1_000 + rng.below(7);
        for _ in 0..300 {
            let len = rng.below(40);
            nest(&mut rng, at, at + len, 0, &mut events);
            at += len + rng.below(3);
        }
        for e in &events {
            stream.push(&mut w, e).unwrap();
        }
        stream.flush(&mut w).unwrap();
    }
    w.finish(Trailer::default()).unwrap()
}

fn decode(pb: &[u8]) -> Vec<Span> {
    let req = ExportTraceServiceRequest::decode(pb).unwrap();
    req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans).collect()
}

#[test]
fn no_child_starts_before_or_ends_after_its_parent_in_nanoseconds() {
    let mut children = 0;
    let mut shared_ends = 0;
    for seed in 0..20 {
        let file = tsc_file(seed, 2);
        let mut out = Vec::new();
        convert(&mut Reader::new(&file[..]).unwrap(), &ConvertOptions::default(), &mut out).unwrap();
        let spans = decode(&out);
        let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
        for s in &spans {
            let Some(p) = by_id.get(s.parent_span_id.as_slice()) else { continue };
            children += 1;
            shared_ends += usize::from(s.end_time_unix_nano == p.end_time_unix_nano);
            assert!(
                s.start_time_unix_nano >= p.start_time_unix_nano,
                "seed {seed}: {s:?} starts before {p:?}"
            );
            assert!(s.end_time_unix_nano <= p.end_time_unix_nano, "seed {seed}: {s:?} ends after {p:?}");
        }
    }
    assert!(
        children > 1000 && shared_ends > 100,
        "{children} children, {shared_ends} ending with their parent"
    );
}

/// Each request on its own.
#[derive(Default)]
struct Collect {
    requests: Vec<(Vec<u8>, u64)>,
    messages: bool,
}

impl Requests for Collect {
    fn request(&mut self, bytes: &[u8], spans: u64) -> io::Result<()> {
        self.requests.push((bytes.to_vec(), spans));
        Ok(())
    }

    fn messages(&self) -> bool {
        self.messages
    }

    fn message(&mut self, request: &ExportTraceServiceRequest, spans: u64) -> io::Result<()> {
        self.requests.push((request.encode_to_vec(), spans));
        Ok(())
    }
}

#[test]
fn every_request_is_bounded_in_bytes_and_spans_decodes_alone_and_together_they_are_the_stream() {
    let file = tsc_file(7, 3);
    let mut stream = Vec::new();
    convert(&mut Reader::new(&file[..]).unwrap(), &ConvertOptions::default(), &mut stream).unwrap();
    let all = decode(&stream);
    assert!(all.len() > 3000, "{}", all.len());
    for (max_bytes, max_spans) in [(4096, 1000), (64 << 10, 100), (1 << 20, 8192)] {
        for messages in [false, true] {
            let options = ConvertOptions { max_bytes, max_spans, ..ConvertOptions::default() };
            let mut out = Collect { messages, ..Collect::default() };
            let c = convert_to(&mut Reader::new(&file[..]).unwrap(), &options, &mut out).unwrap();
            let mut spans = Vec::new();
            for (bytes, n) in &out.requests {
                assert!(bytes.len() <= max_bytes, "{} bytes past {max_bytes}", bytes.len());
                let got = decode(bytes);
                assert_eq!(got.len() as u64, *n);
                assert!(got.len() <= max_spans);
                spans.extend(got);
            }
            assert_eq!(spans, all, "{max_bytes} bytes, {max_spans} spans, messages {messages}");
            assert_eq!(c.batches, out.requests.len() as u64);
            assert_eq!(c.spans, all.len() as u64);
            if max_bytes == 4096 {
                assert!(out.requests.len() as u64 > all.len() as u64 / 1000, "the byte bound cut them");
            }
        }
    }
    // JSON lines: bounded by the same measure (the protobuf size), each line one request.
    let json = ConvertOptions { max_bytes: 4096, encoding: Encoding::Json, ..ConvertOptions::default() };
    let mut out = Collect::default();
    convert_to(&mut Reader::new(&file[..]).unwrap(), &json, &mut out).unwrap();
    let mut n = 0;
    for (line, _) in &out.requests {
        let req: ExportTraceServiceRequest = serde_json::from_slice(line).unwrap();
        assert!(req.encoded_len() <= 4096);
        n += req.resource_spans[0].scope_spans[0].spans.len();
    }
    assert_eq!(n, all.len());
}

#[test]
fn live_the_slowest_per_minute_rule_releases_each_minute_a_hold_after_it_ends() {
    use phosphor_craft::monotonic;
    use phosphor_otlp::assemble::{AssembleOptions, Assembler};
    use phosphor_otlp::select::{Selection, TailRules};

    // One thread, a root every 5 s for 5 minutes (nanosecond ticks), lasting 1 to 6 ms.
    let mut w = TraceWriter::new(Vec::new(), monotonic(), "minutes").unwrap();
    w.strings(&["craft", "", "requests.rs"]).unwrap();
    let names = w.strings(&["tick"]).unwrap();
    w.callsites([callsite(ID, Phase::Complete, names)]).unwrap();
    let mut stream = ChunkStream::new(1);
    let roots = 60u64;
    for i in 0..roots {
        let dur = 1_000_000 * (1 + (i * 7) % 6);
        stream.push(&mut w, &records::complete(1_000 + i * 5_000_000_000, ID, dur)).unwrap();
    }
    stream.flush(&mut w).unwrap();
    let file = w.finish(Trailer::default()).unwrap();
    let selection = Selection {
        tail: TailRules { slowest_per_minute: Some(2), ..TailRules::default() },
        ..Selection::default()
    };
    let hold = 1_000_000;
    let options = AssembleOptions { selection, hold_ns: Some(hold), ..AssembleOptions::default() };
    let mut r = Reader::new(&file[..]).unwrap();
    let mut a = Assembler::new(r.header(), options);
    // What each drain gave, by the latest root start read when it was taken.
    let mut drained: Vec<(u64, Vec<Span>)> = Vec::new();
    let origin = r.header().clock.origin_wall_ns;
    let mut latest = 0;
    r.for_each_event(|e| {
        latest = e.ts;
        a.push(e);
        // The forwarder's tick: a hold of wall time goes by before the next event.
        a.idle(hold);
        let mut out = Vec::new();
        a.drain(&mut out);
        drained.push((latest, out));
    })
    .unwrap();
    let mut rest = Vec::new();
    a.finish(&mut rest);
    let early: Vec<&Span> = drained.iter().flat_map(|(_, s)| s).collect();
    // Each minute keeps its 2 slowest; every minute but the last is out before the end, and no
    // earlier than a hold after its end.
    // Minutes of the Unix clock; the clock's origin (tick 1,000) is `origin`.
    let wall = |ticks: u64| origin + ticks - 1_000;
    let minute = |t: u64| t / 60_000_000_000;
    let mut per_minute: HashMap<u64, usize> = HashMap::new();
    for s in early.iter().copied().chain(&rest) {
        *per_minute.entry(minute(s.start_time_unix_nano)).or_default() += 1;
    }
    assert!(per_minute.values().all(|&n| n == 2), "{per_minute:?}");
    assert!(early.len() >= 2 * (per_minute.len() - 2), "{} spans out before the end", early.len());
    for (read_up_to, spans) in &drained {
        for s in spans {
            let end_of_minute = (minute(s.start_time_unix_nano) + 1) * 60_000_000_000;
            assert!(wall(*read_up_to) >= end_of_minute + hold, "released before its minute was over");
        }
    }
    assert_eq!(a.stats().spans_tail_dropped, roots - 2 * per_minute.len() as u64);
}
