//! One line to switch tracing on: [`init`] reads `PHOSPHOR` and `PHOSPHOR_*` from the
//! environment and does nothing when they are unset; [`Setup`] is the same settings as a builder,
//! for programs that take flags instead.
//!
//! ```no_run
//! // First thing in `main`: the trace is finished when the guard drops, or at exit.
//! let _phosphor = phosphor::init();
//! ```
//!
//! | variable | value | default |
//! |---|---|---|
//! | `PHOSPHOR` | where the trace goes: a path (`trace.phos`, or `file:PATH`): streamed to that file as it is recorded, finished at exit; `ring:PATH`: a flight recorder (the newest events in a ring), written to `PATH` on a panic, a fatal signal, `SIGUSR2` and at exit; `tcp:HOST:PORT`: streamed to `phosphor record --listen HOST:PORT`; `1` for `phosphor-{pid}.phos`; unset, empty or `0`: nothing | unset |
//! | `PHOSPHOR_SIZE` | the buffer: `64M`, `512k`, `1G` | 64 MiB |
//! | `PHOSPHOR_CATEGORIES` | the category filter, e.g. `net*,-net.verbose` | every category |
//! | `PHOSPHOR_SYSTEM` | system context: `switches`, `samples` (`samples=HZ`), `allocations` (needs `phosphor::alloc::Traced` as the global allocator), `all` | none |
//! | `PHOSPHOR_LOG_LEVEL` | the least severe log recorded: `error` … `trace` | every level |
//! | `PHOSPHOR_TRIGGERS` | with `ring:`, triggers separated by `;` (`db/query>2ms`), dumped beside `PATH` | none |
//! | `PHOSPHOR_QUIET` | `1`: no line on standard error at the end | `0` |
//!
//! `{pid}` in a path is replaced by the process id, so that every process of a run (and a forked
//! child that starts its own trace) writes a file of its own.
//!
//! A value that cannot be read is reported on standard error, naming the variable, and the
//! program runs untraced: switching tracing on never stops the program. At the end (the guard
//! dropped, or `exit`), one line on standard error says where the trace went and what it lost.

mod env;

use std::net::ToSocketAddrs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

use crate::error::{Error, ErrorKind};
use crate::stream::{Sink, StreamConfig, StreamId};
use crate::{BufferMode, TraceConfig, TraceLog};

pub use env::{
    CATEGORIES as ENV_CATEGORIES, LOG_LEVEL as ENV_LOG_LEVEL, OUTPUT as ENV_OUTPUT, QUIET as ENV_QUIET,
    SIZE as ENV_SIZE, SYSTEM as ENV_SYSTEM, TRIGGERS as ENV_TRIGGERS,
};

/// The buffer a setup takes unless told otherwise.
pub const DEFAULT_SIZE: usize = 64 << 20;

/// Where a [`Setup`]'s trace goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Streamed to a trace file as it is recorded (memory stays within the buffer however long
    /// the program runs), finished when the guard drops or at exit. The file is readable up to
    /// its last flush even if the program dies.
    File(PathBuf),
    /// A flight recorder: the newest events in a ring, written to the file on a panic, a fatal
    /// signal, `SIGUSR2` and at the end. Each dump replaces the last.
    Ring(PathBuf),
    /// Streamed to a recording server (`phosphor record --listen HOST:PORT`), reconnecting when
    /// the connection breaks.
    Tcp(String),
}

impl Output {
    /// `{pid}` replaced by `pid` in a path.
    fn for_process(&self, pid: u32) -> Output {
        let sub = |p: &Path| PathBuf::from(p.to_string_lossy().replace("{pid}", &pid.to_string()));
        match self {
            Output::File(p) => Output::File(sub(p)),
            Output::Ring(p) => Output::Ring(sub(p)),
            Output::Tcp(a) => Output::Tcp(a.clone()),
        }
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Output::File(p) => write!(f, "{}", p.display()),
            Output::Ring(p) => write!(f, "ring {}", p.display()),
            Output::Tcp(a) => write!(f, "tcp {a}"),
        }
    }
}

/// The settings of a trace switched on in one line: what [`init`] reads from the environment,
/// or built by a program from its own flags. [`Setup::start`] starts it on the global log.
#[derive(Debug)]
pub struct Setup {
    output: Output,
    size: usize,
    categories: Option<String>,
    switches: bool,
    sample_hz: u32,
    allocations: bool,
    log_level: Option<phosphor_format::Level>,
    triggers: Vec<crate::trigger::Trigger>,
    quiet: bool,
}

impl Setup {
    /// A trace to `output` with a buffer of [`DEFAULT_SIZE`], every category, no system context.
    pub fn new(output: Output) -> Setup {
        Setup {
            output,
            size: DEFAULT_SIZE,
            categories: None,
            switches: false,
            sample_hz: 0,
            allocations: false,
            log_level: None,
            triggers: Vec::new(),
            quiet: false,
        }
    }

    /// The setup `PHOSPHOR` and `PHOSPHOR_*` describe (see the module docs); `None` when
    /// `PHOSPHOR` is unset, empty or `0`. An error names the variable and its value.
    pub fn from_env() -> Result<Option<Setup>, Error> {
        env::read(&|name| std::env::var_os(name))
    }

    /// The buffer's size in bytes (the ring's, or the stream's pool of chunks).
    pub fn size(mut self, bytes: usize) -> Setup {
        self.size = bytes;
        self
    }

    /// Only the categories `spec` takes (`TraceConfig::categories`'s syntax).
    pub fn categories(mut self, spec: &str) -> Result<Setup, Error> {
        crate::CategoryFilter::parse(spec)?;
        self.categories = Some(spec.to_string());
        Ok(self)
    }

    /// Records context switches (`TraceConfig::context_switches`).
    pub fn context_switches(mut self, on: bool) -> Setup {
        self.switches = on;
        self
    }

    /// Samples call stacks `hz` times a second of CPU time (`TraceConfig::cpu_samples`; 0: off).
    pub fn cpu_samples(mut self, hz: u32) -> Setup {
        self.sample_hz = hz;
        self
    }

    /// Counts allocations (`TraceConfig::allocations`; needs `phosphor::alloc::Traced`).
    pub fn allocations(mut self, on: bool) -> Setup {
        self.allocations = on;
        self
    }

    /// Records logs of `level` and more severe only.
    pub fn log_level(mut self, level: phosphor_format::Level) -> Setup {
        self.log_level = Some(level);
        self
    }

    /// Arms `trigger` (an [`Output::Ring`] only): its dumps go beside the ring's file.
    pub fn trigger(mut self, trigger: crate::trigger::Trigger) -> Setup {
        self.triggers.push(trigger);
        self
    }

    /// Prints nothing on standard error at the end.
    pub fn quiet(mut self, quiet: bool) -> Setup {
        self.quiet = quiet;
        self
    }

    /// Where the trace goes.
    pub fn output(&self) -> &Output {
        &self.output
    }

    /// Starts the trace on [`TraceLog::global`] and returns the guard that finishes it. One setup
    /// runs at a time in a process; a second `start` before the first guard drops fails with
    /// `ErrorKind::AlreadyRunning`, as does a global log already started another way.
    pub fn start(self) -> Result<Guard, Error> {
        let mut session = SESSION.lock().unwrap_or_else(|p| p.into_inner());
        if session.is_some() {
            return Err(Error::new(ErrorKind::AlreadyRunning));
        }
        let pid = std::process::id();
        let output = self.output.for_process(pid);
        let log = TraceLog::global();
        let ring = matches!(output, Output::Ring(_));
        if !self.triggers.is_empty() && !ring {
            return Err(Error::new(ErrorKind::Trigger(
                "triggers need a flight recorder (PHOSPHOR=ring:PATH, or Output::Ring)".into(),
            )));
        }
        // Resolved before the trace starts, so that a bad address starts nothing.
        let tcp = match &output {
            Output::Tcp(addr) => Some(resolve(addr)?),
            _ => None,
        };
        // The file is made now, so that a path that cannot be written starts nothing (the stream
        // would find out only when it first writes).
        if let Output::File(path) = &output {
            std::fs::File::create(path)
                .map_err(|e| Error::new(ErrorKind::File(format!("{}: {e}", path.display()))))?;
        }
        let mode = if ring { BufferMode::Ring } else { BufferMode::Stream };
        let mut config = TraceConfig::new(mode, self.size)
            .context_switches(self.switches)
            .cpu_samples(self.sample_hz)
            .allocations(self.allocations);
        if let Some(spec) = &self.categories {
            config = config.categories(spec)?;
        }
        if let Some(level) = self.log_level {
            config = config.log_level(level);
        }
        if let Output::Ring(path) = &output {
            if !self.triggers.is_empty() {
                config = config.trigger_dir(dir_of(path));
            }
        }
        for trigger in self.triggers {
            config = config.trigger(trigger);
        }
        log.start(config)?;
        let stream = match (&output, tcp) {
            (Output::File(path), _) => Some(open(log, Sink::File(path.clone()))?),
            (Output::Tcp(_), Some(addr)) => Some(open(log, Sink::Tcp(addr))?),
            _ => None,
        };
        if let Output::Ring(path) = &output {
            install_ring_dumps(log, path);
        }
        AT_EXIT.call_once(|| {
            // SAFETY: `at_exit` is an `extern "C" fn()` that never unwinds (it catches panics);
            // registering it has no other obligation. A failure (the table full) only means no
            // finish at `exit`: the guard still finishes the trace.
            unsafe { libc::atexit(at_exit) };
        });
        *session = Some(Session { output, pid, stream, quiet: self.quiet });
        Ok(Guard { active: true })
    }
}

/// Opens the setup's stream, or stops the trace just started and says why.
fn open(log: &TraceLog, sink: Sink) -> Result<StreamId, Error> {
    log.open_stream(StreamConfig::new(sink)).inspect_err(|_| log.stop())
}

fn resolve(addr: &str) -> Result<std::net::SocketAddr, Error> {
    let fail = |reason: String| Error::new(ErrorKind::Address { addr: addr.to_string(), reason });
    let mut found = addr.to_socket_addrs().map_err(|e| fail(e.to_string()))?;
    found.next().ok_or_else(|| fail("no address found".into()))
}

/// The folder a file is in (`.` for a bare name).
fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The panic, fatal-signal and `SIGUSR2` dumps of a ring, installed once per process: a later
/// ring setup's dumps go to the first one's file (a signal handler's path is fixed when it is
/// installed), and a warning says so.
fn install_ring_dumps(log: &'static TraceLog, path: &Path) {
    static FIRST: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut first = FIRST.lock().unwrap_or_else(|p| p.into_inner());
    match first.as_ref() {
        Some(p) if p != path => {
            eprintln!(
                "phosphor: this process's crash, panic and SIGUSR2 dumps still go to {} (only the first ring's file takes them)",
                p.display()
            );
            return;
        }
        Some(_) => return,
        None => *first = Some(path.to_path_buf()),
    }
    crate::recorder::dump_on_panic(log, path);
    #[cfg(target_os = "linux")]
    if let Err(e) = crate::recorder::dump_on_crash(log, path) {
        eprintln!("phosphor: no dump on a crash: {e}");
    }
    #[cfg(unix)]
    if let Err(e) = crate::recorder::dump_on_signal(log, libc::SIGUSR2, path) {
        eprintln!("phosphor: no dump on SIGUSR2: {e}");
    }
}

/// The running setup: at most one per process.
struct Session {
    output: Output,
    /// The process that started it: a forked child inherits the session but not the trace.
    pid: u32,
    stream: Option<StreamId>,
    quiet: bool,
}

static SESSION: Mutex<Option<Session>> = Mutex::new(None);
static AT_EXIT: Once = Once::new();

extern "C" fn at_exit() {
    // A panic must not unwind out of an `extern "C"` function (it would abort the exiting
    // program): caught, and the trace is left as it is.
    let _ = std::panic::catch_unwind(|| {
        if let Some(done) = finish() {
            done.report();
        }
    });
}

/// What became of a finished setup's trace.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Finished {
    /// Where it went (`{pid}` replaced).
    pub output: Output,
    /// Events written to the file or the connection (a ring: the events the file holds).
    pub events: u64,
    /// Events lost, whatever the reason (a ring: the older events overwritten are not counted
    /// here, they are in the file's figures).
    pub lost: u64,
    /// Why the trace could not be written, if it could not.
    pub error: Option<String>,
    quiet: bool,
}

impl Finished {
    /// The line printed on standard error at the end (unless quiet).
    fn report(&self) {
        if self.quiet {
            return;
        }
        match &self.error {
            Some(e) => eprintln!("phosphor: the trace to {} could not be written: {e}", self.output),
            None => eprintln!(
                "phosphor: trace written to {}: {} events, {} lost",
                self.output, self.events, self.lost
            ),
        }
    }
}

/// Finishes the running setup (if any, and if this process started it).
fn finish() -> Option<Finished> {
    let session = SESSION.lock().unwrap_or_else(|p| p.into_inner()).take()?;
    if session.pid != std::process::id() {
        return None;
    }
    let log = TraceLog::global();
    log.stop();
    let stats = log.stats();
    let lost_by_writers = stats.dropped.total().saturating_sub(stats.dropped.overwritten);
    let mut done = Finished {
        output: session.output.clone(),
        events: 0,
        lost: lost_by_writers,
        error: None,
        quiet: session.quiet,
    };
    match (&session.output, session.stream) {
        (Output::Ring(path), _) => match log.take_trace() {
            Some(trace) => {
                done.events = trace.events().count() as u64;
                if let Err(e) = crate::recorder::save_atomically(trace, path) {
                    done.error = Some(e);
                }
            }
            None => done.error = Some("the trace was taken or stopped by another caller".into()),
        },
        (_, Some(id)) => match log.stream_stats(id) {
            Ok(s) => {
                done.events = s.events_written;
                done.lost += s.events_dropped;
                done.error = s.first_error;
            }
            Err(e) => done.error = Some(e.to_string()),
        },
        (_, None) => {}
    }
    Some(done)
}

/// Finishes the trace [`init`] or [`Setup::start`] started when it drops (or at `exit`, if it
/// never does). Keep it alive in `main`: `let _phosphor = phosphor::init();` (a bare `_` would
/// drop it at once).
#[derive(Debug)]
#[must_use = "the trace is finished when the guard drops: bind it, `let _phosphor = phosphor::init();`"]
pub struct Guard {
    active: bool,
}

impl Guard {
    /// A guard of nothing (what [`init`] returns when tracing is off).
    pub fn inactive() -> Guard {
        Guard { active: false }
    }

    /// Whether this guard's trace is running.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Finishes the trace now, printing nothing, and says what became of it (`None` for an
    /// inactive guard, or in a forked child).
    pub fn finish(mut self) -> Option<Finished> {
        std::mem::replace(&mut self.active, false).then(finish).flatten()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if std::mem::replace(&mut self.active, false) {
            if let Some(done) = finish() {
                done.report();
            }
        }
    }
}

/// Switches tracing on as `PHOSPHOR` and `PHOSPHOR_*` say (see [`setup`](crate::setup)), or does
/// nothing when `PHOSPHOR` is unset. Never fails: a setting it cannot read, or a trace it cannot
/// start, is reported on standard error and the program runs untraced.
pub fn init() -> Guard {
    match Setup::from_env() {
        Ok(None) => Guard::inactive(),
        Ok(Some(setup)) => {
            let output = setup.output.clone();
            setup.start().unwrap_or_else(|e| {
                eprintln!("phosphor: not tracing to {output}: {e}");
                Guard::inactive()
            })
        }
        Err(e) => {
            eprintln!("phosphor: not tracing: {e}");
            Guard::inactive()
        }
    }
}
