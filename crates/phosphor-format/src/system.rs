//! System context (format 1.6): what the kernel saw of the traced threads while the trace ran.
//!
//! The runtime collects it off the recording path (a thread of its own reads `perf_event_open`
//! rings and the allocator's counters) and the trace file carries it in system blocks
//! ([`kind::SYSTEM`](crate::file::kind::SYSTEM)), beside the chunks:
//!
//! * [`Switch`]: a traced thread left or resumed a CPU (`PERF_RECORD_SWITCH`);
//! * [`Sample`]: a CPU-clock sample of a traced thread with its user-space call stack, as
//!   addresses; the tools symbolize them through the [`Mapping`]s (each with its build id);
//! * [`HeapCounter`]: the process's allocation totals at one time, from `phosphor::alloc::Traced`;
//! * [`SystemStatus`]: which sources were on, which were unavailable and why, and what was lost.
//!
//! Every time here is `CLOCK_MONOTONIC` in nanoseconds, the clock the header's
//! [`ClockInfo`](crate::ClockInfo) maps the trace's ticks to (`ClockInfo::to_ns`); a reader
//! compares the two on that clock.
//!
//! Allocations *per scope* are not here: the runtime records them as an event right after the
//! scope's own (see [`SCOPE_ALLOC_NAME`]), since only the recording thread knows where a scope
//! starts and ends.

/// The category of the runtime's own events.
pub const PHOSPHOR_CATEGORY: &str = "phosphor";

/// The category of frame marks (`trace_frame!`): an instant of this category, named by its frame
/// set (`"frame"` for the main one), ends a frame of that set and starts the next.
pub const FRAME_CATEGORY: &str = "phosphor.frame";

/// The name of the event that carries a scope's allocations. It is an instant of category
/// [`PHOSPHOR_CATEGORY`] with two `u64` arguments, [`SCOPE_ALLOC_ARGS`]: the allocations the
/// recording thread made while the scope was open, and their bytes (inclusive of nested scopes).
/// It is written by the thread that closed the scope, right after the scope's complete event,
/// and belongs to that event: the complete event just before it in the thread's stream.
pub const SCOPE_ALLOC_NAME: &str = "scope_alloc";

/// The argument names of the [`SCOPE_ALLOC_NAME`] event.
pub const SCOPE_ALLOC_ARGS: [&str; 2] = ["allocs", "bytes"];

/// Whether one source of system context was collected.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Availability {
    /// Not asked for.
    #[default]
    Off,
    /// Collected.
    On,
    /// Asked for and refused; the reason, for people (`"perf_event_open: EACCES
    /// (perf_event_paranoid is 3)"`).
    Unavailable(String),
}

/// Which system sources a trace has, and what was lost of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemStatus {
    /// Context switches of the traced threads.
    pub switches: Availability,
    /// CPU samples with call stacks.
    pub samples: Availability,
    /// Allocation counts (`phosphor::alloc::Traced` installed as the global allocator).
    pub allocations: Availability,
    /// The sampling frequency asked for, in hertz (0 when sampling is off).
    pub sample_hz: u32,
    /// Records the kernel dropped because a ring was full (`PERF_RECORD_LOST`, summed).
    pub kernel_lost: u64,
    /// Records the runtime dropped because its bounded store was full.
    pub dropped: u64,
    /// Traced threads no perf event could be opened for (the limit of open files or of locked
    /// memory), so their switches and samples are missing.
    pub threads_missed: u32,
}

/// Which way a thread went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SwitchKind {
    /// Left the CPU because it blocked (a sleep, a wait, I/O): "sleeping" until it resumes.
    Out,
    /// Left the CPU while still runnable (preempted): "runnable" until it resumes.
    Preempted,
    /// Resumed on a CPU.
    In,
}

/// A context switch of a traced thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    /// The thread (the kernel's tid, as the trace's thread ids are).
    pub tid: u32,
    /// When, `CLOCK_MONOTONIC` nanoseconds.
    pub time_ns: u64,
    /// The CPU, or [`UNKNOWN_CPU`].
    pub cpu: u32,
    /// Out, preempted or in.
    pub kind: SwitchKind,
}

/// A CPU number that was not recorded.
pub const UNKNOWN_CPU: u32 = u32::MAX;

/// What a sample measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleKind {
    /// The CPU clock: one sample per `1 / sample_hz` seconds on a CPU.
    Cpu,
    /// A sampled allocation: one per N bytes allocated; the bytes it stands for.
    Allocation {
        /// The bytes this sample stands for (the sampling interval).
        bytes: u64,
    },
}

/// A sample of a traced thread's user-space call stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The thread.
    pub tid: u32,
    /// When, `CLOCK_MONOTONIC` nanoseconds.
    pub time_ns: u64,
    /// The CPU, or [`UNKNOWN_CPU`].
    pub cpu: u32,
    /// What it measures.
    pub kind: SampleKind,
    /// Instruction addresses in the process, innermost first: the sampled instruction, then the
    /// return addresses of its callers (look a return address up at `address - 1`). At most
    /// [`MAX_FRAMES`].
    pub frames: Vec<u64>,
}

/// The deepest stack a sample keeps (the kernel's default `perf_event_max_stack`).
pub const MAX_FRAMES: usize = 127;

/// An executable mapping of the traced process: where an object file was loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Offset in the file of `start`.
    pub file_offset: u64,
    /// The file's path as the process saw it (`[vdso]` and the like for the kernel's own).
    pub path: String,
    /// The object's GNU build id (empty when it has none or it could not be read).
    pub build_id: Vec<u8>,
}

/// The process's allocation totals at one time (cumulative since the allocator was installed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapCounter {
    /// When, `CLOCK_MONOTONIC` nanoseconds.
    pub time_ns: u64,
    /// Allocations made (a `realloc` counts as one allocation and one free).
    pub allocs: u64,
    /// Frees.
    pub frees: u64,
    /// Bytes allocated.
    pub alloc_bytes: u64,
    /// Bytes freed.
    pub freed_bytes: u64,
}

impl HeapCounter {
    /// Bytes allocated and not yet freed (negative when memory allocated before the allocator
    /// counted was freed since).
    pub fn live_bytes(&self) -> i64 {
        (self.alloc_bytes as i128 - self.freed_bytes as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }
}

/// One system block's content. A trace has any number of them (a datastream writes one every
/// collection period); a reader takes the union, and the last [`SystemStatus`] it saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemBatch {
    /// The sources' status so far, when it changed (always in the last batch of a trace).
    pub status: Option<SystemStatus>,
    /// Mappings added since the previous batch.
    pub mappings: Vec<Mapping>,
    /// Context switches, in time order per thread.
    pub switches: Vec<Switch>,
    /// Samples, in time order per thread.
    pub samples: Vec<Sample>,
    /// Heap totals, in time order.
    pub heap: Vec<HeapCounter>,
}

impl SystemBatch {
    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.status.is_none()
            && self.mappings.is_empty()
            && self.switches.is_empty()
            && self.samples.is_empty()
            && self.heap.is_empty()
    }
}
