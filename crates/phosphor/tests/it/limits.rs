//! Sizes a traced program must survive: a buffer larger than the machine can hold, asked for
//! through the API or over the control channel, is an error and never an abort.

use phosphor::{trace_instant, BufferMode, ErrorKind, TraceConfig};

use crate::support::{new_log, stop_and_take};

const TIB: usize = 1 << 40;

#[test]
fn starting_a_one_terabyte_buffer_is_an_error_that_names_the_cap() {
    let log = new_log(Default::default());
    for mode in [BufferMode::Fixed, BufferMode::Ring, BufferMode::Stream] {
        let err = log.start(TraceConfig::new(mode, TIB)).expect_err("1 TiB is past the cap");
        let ErrorKind::BufferTooLarge { size, max } = *err.kind() else { panic!("{mode:?}: {err}") };
        assert_eq!(size, TIB);
        assert!(max as u64 <= TraceConfig::MAX_BUFFER_BYTES && max < TIB, "{err}");
        assert!(err.to_string().contains(&max.to_string()), "the message names the cap: {err}");
        assert!(!log.is_enabled(), "a rejected start starts nothing");
    }
    // The largest size of all, too.
    let err = log.start(TraceConfig::new(BufferMode::Fixed, usize::MAX)).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::BufferTooLarge { .. }), "{err}");
    // The log still works.
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 16)).unwrap();
    trace_instant!(log: &log, "limits", "after");
    assert_eq!(stop_and_take(&log).stats().recorded, 1);
}
