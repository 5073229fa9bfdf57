//! `Sink::Otlp` with sampling: the stream's selection carries head sampling and the tail rules as
//! a conversion's does, and the stream's figures count what they left out.

use std::time::Duration;

use phosphor::stream::{OtlpSink, Sink, StreamConfig};
use phosphor::{trace_log, trace_scope, BufferMode, TraceConfig};
use phosphor_otlp::ids::GroupRoots;
use phosphor_otlp::receiver::Receiver;
use phosphor_otlp::select::TailRules;

use crate::support::new_log;

#[test]
fn an_otlp_stream_keeps_what_its_tail_rule_keeps_and_counts_the_rest() {
    let rx = Receiver::start(vec![]);
    let log = new_log(Default::default());
    log.start(TraceConfig::new(BufferMode::Stream, 16 << 20)).unwrap();
    let mut sink = OtlpSink::new(rx.url());
    sink.export.shutdown_deadline = Duration::from_secs(60);
    sink.forward.selection.tail = TailRules { errors: true, ..TailRules::default() };
    sink.forward.group_roots = GroupRoots::Process;
    let id = log.open_stream(StreamConfig::new(Sink::Otlp(sink))).unwrap();
    for i in 0..100u64 {
        trace_scope!(log: &log, "otlp", "request", "i" => i);
        trace_scope!(log: &log, "otlp", "work");
        if i % 10 == 3 {
            trace_log!(log: &log, error, "otlp", "request {} failed", i);
        }
    }
    log.stop();
    let o = log.stream_stats(id).unwrap().otlp.expect("an OTLP stream has OTLP figures");
    assert_eq!(o.spans_made, 200, "{o:?}");
    assert_eq!((o.spans_sent, o.spans_tail_dropped, o.spans_sampled_out), (20, 180, 0), "{o:?}");
    assert_eq!(o.spans_exported, 20, "{o:?}");
    let got = rx.got();
    assert_eq!(got.spans.len(), 20);
    let traces: std::collections::HashSet<&[u8]> = got.spans.iter().map(|s| &s.trace_id[..]).collect();
    assert_eq!(traces.len(), 1, "grouped by process");
}
