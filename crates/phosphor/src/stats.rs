//! Statistics of a trace: what was recorded, and what was dropped and why.

use std::fmt;

/// Events dropped, by reason. Every event that passed its enabled check and is not in the trace is
/// counted in exactly one of these.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Drops {
    /// A Fixed buffer ran out of chunks.
    pub buffer_full: u64,
    /// Every chunk of a Ring buffer was held by a tenant.
    pub no_chunk: u64,
    /// A pool tenant was busy with another thread.
    pub contended: u64,
    /// Tracing was stopping when the event arrived.
    pub stopping: u64,
    /// The thread was already inside the recorder (a signal handler).
    pub reentrant: u64,
    /// The thread was exiting and its tenant was gone.
    pub thread_exited: u64,
    /// Recorded, then overwritten by a Ring buffer.
    pub overwritten: u64,
}

impl Drops {
    /// All drops.
    pub fn total(&self) -> u64 {
        self.buffer_full
            + self.no_chunk
            + self.contended
            + self.stopping
            + self.reentrant
            + self.thread_exited
            + self.overwritten
    }

    /// Field-wise `self - earlier`, for counters that only grow.
    pub(crate) fn since(&self, earlier: &Drops) -> Drops {
        Drops {
            buffer_full: self.buffer_full.saturating_sub(earlier.buffer_full),
            no_chunk: self.no_chunk.saturating_sub(earlier.no_chunk),
            contended: self.contended.saturating_sub(earlier.contended),
            stopping: self.stopping.saturating_sub(earlier.stopping),
            reentrant: self.reentrant.saturating_sub(earlier.reentrant),
            thread_exited: self.thread_exited.saturating_sub(earlier.thread_exited),
            overwritten: self.overwritten.saturating_sub(earlier.overwritten),
        }
    }

    /// Field-wise sum.
    pub(crate) fn plus(&self, other: &Drops) -> Drops {
        Drops {
            buffer_full: self.buffer_full + other.buffer_full,
            no_chunk: self.no_chunk + other.no_chunk,
            contended: self.contended + other.contended,
            stopping: self.stopping + other.stopping,
            reentrant: self.reentrant + other.reentrant,
            thread_exited: self.thread_exited + other.thread_exited,
            overwritten: self.overwritten + other.overwritten,
        }
    }

    /// `(name, count)` for every reason, in a fixed order.
    pub fn by_reason(&self) -> [(&'static str, u64); 7] {
        [
            ("buffer_full", self.buffer_full),
            ("no_chunk", self.no_chunk),
            ("contended", self.contended),
            ("stopping", self.stopping),
            ("reentrant", self.reentrant),
            ("thread_exited", self.thread_exited),
            ("overwritten", self.overwritten),
        ]
    }
}

/// Statistics of the running or last trace of a `TraceLog`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Whether the trace is still running (figures then lag by the chunks threads hold).
    pub running: bool,
    /// Events in the trace.
    pub recorded: u64,
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
}

impl Drops {
    pub(crate) const ZERO: Drops = Drops {
        buffer_full: 0,
        no_chunk: 0,
        contended: 0,
        stopping: 0,
        reentrant: 0,
        thread_exited: 0,
        overwritten: 0,
    };
}

impl Stats {
    pub(crate) const ZERO: Stats = Stats {
        running: false,
        recorded: 0,
        dropped: Drops {
            buffer_full: 0,
            no_chunk: 0,
            contended: 0,
            stopping: 0,
            reentrant: 0,
            thread_exited: 0,
            overwritten: 0,
        },
        chunks_loaned: 0,
        chunks_overwritten: 0,
        chunks_total: 0,
        buffer_exhausted: false,
    };
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "recorded {} events, dropped {}", self.recorded, self.dropped.total())?;
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
        )
    }
}
