//! Statistics of a trace: what was recorded, and what was dropped and why.

use std::fmt;

/// Events dropped, by reason. Every event that passed its enabled check and is not in the trace is
/// counted in exactly one of these (`other` is always 0 in the runtime: it is a reader's bucket for
/// reasons a later format version adds). The same type as the trace file's trailer carries.
pub use phosphor_format::file::DropCounts as Drops;

/// Statistics of the running or last trace of a `TraceLog`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Whether the trace is still running (figures then lag by the chunks threads hold).
    pub running: bool,
    /// Events in the trace. In [`BufferMode::Stream`](crate::BufferMode::Stream) this includes the
    /// [`saturation_markers`](Self::saturation_markers), which the recorder writes itself: there
    /// `recorded - saturation_markers + dropped.total()` is what the program emitted.
    pub recorded: u64,
    /// Saturation markers written (Stream mode): an event at the start of a thread's chunk that
    /// says how many of its events were dropped for want of a free chunk. Counted in `recorded`.
    pub saturation_markers: u64,
    /// Events lost, by reason.
    pub dropped: Drops,
    /// Chunks handed to tenants.
    pub chunks_loaned: u64,
    /// Chunks reused by a Ring buffer.
    pub chunks_overwritten: u64,
    /// Chunks in the buffer.
    pub chunks_total: u64,
    /// A Fixed buffer ran out.
    pub buffer_exhausted: bool,
    /// Callsite registrations refused in the whole process so far (the same figure in every
    /// log's statistics): a first event recorded while its thread was already inside the
    /// recorder (an instrumented allocator or a signal handler during a registration, an attach,
    /// a control call or a fork), which is not recorded, in any log (an unregistered callsite
    /// has no filter bits yet, so whether a trace would have taken it is unknown; its next event
    /// registers it); and each `Point::new` or `Point::custom` refused because
    /// `MAX_DYNAMIC_POINTS` points exist.
    pub registrations_refused: u64,
}

impl Stats {
    pub(crate) const ZERO: Stats = Stats {
        running: false,
        recorded: 0,
        saturation_markers: 0,
        dropped: Drops {
            buffer_full: 0,
            no_chunk: 0,
            contended: 0,
            stopping: 0,
            reentrant: 0,
            thread_exited: 0,
            overwritten: 0,
            unwound: 0,
            other: 0,
        },
        chunks_loaned: 0,
        chunks_overwritten: 0,
        chunks_total: 0,
        buffer_exhausted: false,
        registrations_refused: 0,
    };
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "recorded {} events, dropped {}", self.recorded, self.dropped.total())?;
        if self.saturation_markers > 0 {
            writeln!(f, "  of the recorded, saturation markers: {}", self.saturation_markers)?;
        }
        for (name, n) in self.dropped.by_reason() {
            if n > 0 {
                writeln!(f, "  dropped ({name}): {n}")?;
            }
        }
        write!(
            f,
            "chunks: {} loaned, {} overwritten, {} in the buffer{}",
            self.chunks_loaned,
            self.chunks_overwritten,
            self.chunks_total,
            if self.buffer_exhausted { " (exhausted)" } else { "" }
        )?;
        if self.registrations_refused > 0 {
            write!(f, "\ncallsite registrations refused (process-wide): {}", self.registrations_refused)?;
        }
        Ok(())
    }
}
