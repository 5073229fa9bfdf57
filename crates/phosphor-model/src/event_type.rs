//! What an event is, for the tools that sort events by kind: the last segment of a statistics
//! kind's path, and the `kind` column of the SQL tables.

use phosphor_format::Phase;

/// What the last segment of a kind's path is, and what a table row of an event is.
/// Exhaustive on purpose: a new kind must be placed by every tool's `match`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventType {
    /// A complete event or a begin/end pair: has durations.
    #[default]
    Scope,
    /// Waiting for a lock: has durations.
    LockWait,
    /// Holding a lock: has durations.
    LockHeld,
    /// An instant: counted.
    Instant,
    /// A counter sample: counted.
    Counter,
    /// A log message: counted.
    Log,
}

impl EventType {
    /// `scope`, `lock_wait`, `lock_held`, `instant`, `counter` or `log`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Scope => "scope",
            EventType::LockWait => "lock_wait",
            EventType::LockHeld => "lock_held",
            EventType::Instant => "instant",
            EventType::Counter => "counter",
            EventType::Log => "log",
        }
    }

    /// Whether kinds of this type have durations.
    pub fn has_duration(self) -> bool {
        matches!(self, EventType::Scope | EventType::LockWait | EventType::LockHeld)
    }

    /// The type of events of `phase`; `None` for async events (counted apart).
    pub fn of(phase: Phase) -> Option<EventType> {
        Some(match phase {
            Phase::Begin | Phase::End | Phase::Complete => EventType::Scope,
            Phase::LockWait => EventType::LockWait,
            Phase::LockHeld => EventType::LockHeld,
            Phase::Instant => EventType::Instant,
            Phase::Counter | Phase::Data => EventType::Counter,
            Phase::Log => EventType::Log,
            Phase::AsyncBegin | Phase::AsyncEnd => return None,
        })
    }
}
