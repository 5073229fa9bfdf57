use phosphor::{trace_instant, trace_scope, ArgValue, BufferMode, Static, TraceConfig, TraceLogConfig};

#[test]
fn events_come_out_with_their_names_and_args() {
    // `new_log` waits out the moments when another test holds every slot.
    let log = crate::support::new_log(TraceLogConfig::default());
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 16)).unwrap();
    trace_instant!(log: &log, "cat", "first", "a" => 1i64, "b" => 2u64);
    {
        trace_scope!(log: &log, "cat", "scope", "s" => Static("static"), "d" => "dyn string");
    }
    log.stop();
    let t = log.take_trace().unwrap();
    let ev: Vec<_> = t.events().collect::<Result<_, _>>().unwrap();
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[0].callsite.name, "first");
    assert_eq!(ev[0].arg("a"), Some(ArgValue::I64(1)));
    assert_eq!(ev[0].arg("b"), Some(ArgValue::U64(2)));
    assert_eq!(ev[1].callsite.name, "scope");
    assert_eq!(ev[1].arg("s"), Some(ArgValue::Str("static")));
    assert_eq!(ev[1].arg("d"), Some(ArgValue::Str("dyn string")));
    assert!(ev[1].duration.is_some());
    assert_eq!(t.stats().recorded, 2);
    assert_eq!(t.stats().dropped.total(), 0);
}
