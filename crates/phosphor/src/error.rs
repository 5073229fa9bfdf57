//! Errors of the configuration and control API. The recording path has none: it counts.

/// An error from the `TraceLog` API, or from saving or reading a trace file (converted from a
/// [`format::file::Error`](crate::format::file::Error), so one `?` serves both:
///
/// ```no_run
/// fn dump(log: &phosphor::TraceLog) -> Result<(), phosphor::Error> {
///     log.snapshot()?.save("dump.phos")?;
///     Ok(())
/// }
/// ```
#[derive(Debug, thiserror::Error)]
#[error("{kind}")]
pub struct Error {
    kind: ErrorKind,
    /// Not a `#[source]`: `kind`'s message already holds its text, and a report of the chain
    /// would show it twice.
    file: Option<Box<phosphor_format::file::Error>>,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Error {
        Error { kind, file: None }
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The trace file error this one was made from (`ErrorKind::File`), with its kind and offset.
    pub fn file_error(&self) -> Option<&phosphor_format::file::Error> {
        self.file.as_deref()
    }
}

impl From<phosphor_format::file::Error> for Error {
    fn from(e: phosphor_format::file::Error) -> Error {
        Error { kind: ErrorKind::File(e.to_string()), file: Some(Box::new(e)) }
    }
}

/// The kinds of [`Error`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `TraceLogConfig` is one-time configuration.
    #[error("TraceLogConfig was already applied to this TraceLog ({0})")]
    AlreadyConfigured(&'static str),
    /// A trace is running; stop it first.
    #[error("a trace is already running on this TraceLog; stop it before starting another")]
    AlreadyRunning,
    /// Every TraceLog slot is in use.
    #[error("too many TraceLog instances: at most {max} may exist at once, the global one included")]
    TooManyInstances {
        /// The limit.
        max: usize,
    },
    /// The buffer cannot hold even one chunk.
    #[error("buffer size {size} bytes is smaller than one chunk ({chunk} bytes)")]
    BufferTooSmall {
        /// Requested size.
        size: usize,
        /// Chunk size.
        chunk: usize,
    },
    /// The buffer is larger than a trace may use on this machine: the smaller of
    /// [`TraceConfig::MAX_BUFFER_BYTES`](crate::TraceConfig::MAX_BUFFER_BYTES) and the physical memory (see
    /// [`TraceConfig::new`](crate::TraceConfig::new)).
    #[error(
        "buffer size {size} bytes is larger than the limit of {max} bytes (the smaller of 64 GiB and \
         this machine's physical memory)"
    )]
    BufferTooLarge {
        /// Requested size.
        size: usize,
        /// The limit on this machine.
        max: usize,
    },
    /// The memory for the buffer could not be allocated (a size under the limit, which the system
    /// could not give now).
    #[error("the trace buffer of {bytes} bytes could not be allocated")]
    BufferAlloc {
        /// The bytes asked for.
        bytes: usize,
    },
    /// A category filter does not parse.
    #[error("invalid category filter {spec:?}: {reason}")]
    InvalidCategoryFilter {
        /// The filter text.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `PHOSPHOR_CATEGORIES` is set but not valid UTF-8.
    #[error("PHOSPHOR_CATEGORIES is not valid UTF-8")]
    EnvNotUnicode,
    /// A pool of zero tenants cannot record anything.
    #[error("the tenant pool needs at least one tenant")]
    EmptyPool,
    /// More pool tenants than the trace file can tell apart (each is a writer stream numbered in
    /// 16 bits).
    #[error("the tenant pool can have at most {max} tenants, not {requested}")]
    PoolTooLarge {
        /// Tenants asked for.
        requested: usize,
        /// The most allowed.
        max: usize,
    },
    /// A point selector does not parse.
    #[error("invalid point selector {spec:?}: {reason}")]
    InvalidPointSelector {
        /// The selector text.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The limit on points created at run time is reached.
    #[error("at most {max} points can be created at run time")]
    TooManyDynamicPoints {
        /// The limit.
        max: usize,
    },
    /// This kind of point cannot be created at run time.
    #[error("{kind} points cannot be created at run time; declare them with their macro")]
    UnsupportedDynamicPoint {
        /// The kind asked for.
        kind: &'static str,
    },
    /// No trace is running (a snapshot needs one).
    #[error("no trace is running on this TraceLog")]
    NotRunning,
    /// A dump signal could not be set up.
    #[error("setting up the dump signal failed: {0}")]
    Signal(String),
    /// The ring file of a file-backed trace could not be created.
    #[error("the ring file could not be created: {0}")]
    RingFile(String),
    /// Datastreams need a trace in `BufferMode::Stream`, and snapshots one in another mode.
    #[error("{0}")]
    WrongMode(&'static str),
    /// The limit on open datastreams is reached.
    #[error("at most {max} datastreams can be open at once")]
    TooManyStreams {
        /// The limit.
        max: usize,
    },
    /// No open datastream has this id.
    #[error("no open datastream has this id")]
    NoSuchStream,
    /// Saving or reading a trace file failed; [`Error::file_error`] has the details.
    #[error("{0}")]
    File(String),
    /// The collector thread could not be started.
    #[error("the collector thread could not be started: {0}")]
    Collector(String),
    /// A trigger's string form could not be read.
    #[error("bad trigger {spec:?}: {reason}")]
    TriggerSpec {
        /// The text given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Triggers could not be armed (wrong buffer mode, no room, no dump directory, ...).
    #[error("triggers: {0}")]
    Trigger(String),
    /// An environment variable of `phosphor::init` (`PHOSPHOR`, `PHOSPHOR_*`) could not be read.
    #[error("{var}={value:?}: {reason}")]
    Env {
        /// The variable.
        var: String,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A feature this platform cannot offer (the crash handler, dump signals and the system
    /// context's switches and samples are Linux's).
    #[error("{feature} is not available on {platform} (only on Linux)")]
    Unsupported {
        /// What was asked for.
        feature: &'static str,
        /// The platform, `std::env::consts::OS`.
        platform: &'static str,
    },
    /// A recording server's address could not be resolved.
    #[error("the address {addr:?} could not be resolved: {reason}")]
    Address {
        /// The address given.
        addr: String,
        /// Why it could not be.
        reason: String,
    },
}
