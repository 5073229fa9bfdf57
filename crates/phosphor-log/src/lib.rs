//! A [`log::Log`] implementation that records `log` records as Phosphor logs.
//!
//! ```
//! let log = phosphor::TraceLog::global();
//! phosphor_log::init(log, log::LevelFilter::Debug).unwrap();
//! # log.start(phosphor::TraceConfig::new(phosphor::BufferMode::Ring, 1 << 20)).unwrap();
//! log::info!("server started");          // deferred: the message is the point's format string
//! log::warn!("{} retries left", 3);     // formatted once into a per-thread buffer, then copied
//! # log.stop();
//! ```
//!
//! # What is recorded
//!
//! Each record is a Phosphor log of the record's level, with its target as the category. A `log`
//! call has no callsite object, so the points of a call are found by its file (a `'static`
//! string's address), line and level, in a lock-free cache, and checked against the record's
//! target.
//!
//! * A message without arguments (`log::info!("started")`) is a `&'static str` that `log` hands
//!   over as such ([`fmt::Arguments::as_str`](std::fmt::Arguments::as_str)): it becomes the point's
//!   format string, and the event records nothing but its timestamp. Formatting is deferred to the
//!   tools, as with `trace_log!`.
//! * A message with arguments can only be formatted: `log` gives no access to the format string and
//!   the arguments apart. It is formatted into a per-thread buffer (no allocation once the buffer
//!   has grown) and copied into the event, at most `MAX_LOG_STR_BYTES` of it (longer messages are
//!   cut and flagged).
//! * Key-value pairs (`log`'s `kv` feature) are not recorded.
//!
//! Records without a `'static` file (made at run time, not by `log`'s macros) take a slow path
//! that looks their point up under a lock.
//!
//! Phosphor's filters apply: the trace's category globs match targets, its log level applies, and
//! so does `log`'s maximum level (set by [`init`]).

use std::cell::RefCell;
use std::fmt::Write as _;

use phosphor::bridge::{PointSpec, SiteCache, Value};
use phosphor::points::Point;
use phosphor::{Level, Phase, TraceLog};

/// Calls (file, line, level) the cache holds; beyond, records take the slow path.
const CACHE_SLOTS: usize = 16384;

/// The points of one `log` call.
#[derive(Debug)]
struct Site {
    file: &'static str,
    line: u32,
    level: log::Level,
    target: String,
    /// The call's message when it had no arguments, and the point whose format string it is.
    fixed: Option<(&'static str, Point)>,
    /// The point of a formatted message (`{}`).
    formatted: Option<Point>,
}

/// Records `log` records into a Phosphor [`TraceLog`]; see the crate docs.
#[derive(Debug)]
pub struct PhosphorLogger {
    log: &'static TraceLog,
    sites: SiteCache<Site>,
}

/// Installs a [`PhosphorLogger`] for `log` as the `log` crate's logger, with `max` as its
/// maximum level. Fails if a logger is already installed.
pub fn init(log: &'static TraceLog, max: log::LevelFilter) -> Result<(), log::SetLoggerError> {
    log::set_boxed_logger(Box::new(PhosphorLogger::new(log)))?;
    log::set_max_level(max);
    Ok(())
}

fn level(l: log::Level) -> Level {
    match l {
        log::Level::Error => Level::Error,
        log::Level::Warn => Level::Warn,
        log::Level::Info => Level::Info,
        log::Level::Debug => Level::Debug,
        log::Level::Trace => Level::Trace,
    }
}

/// `message` as a format string that prints it unchanged.
fn escaped(message: &str) -> String {
    message.replace('{', "{{").replace('}', "}}")
}

fn point(record: &log::Record<'_>, file: &str, line: u32, format: &str) -> Option<Point> {
    let spec = PointSpec {
        level: Some(level(record.level())),
        file,
        line,
        ..PointSpec::new(record.target(), format, Phase::Log)
    };
    Point::custom(&spec).ok()
}

thread_local! {
    /// Formatted messages; cleared per record, its capacity kept.
    static TEXT: RefCell<String> = const { RefCell::new(String::new()) };
}

impl PhosphorLogger {
    /// A logger recording into `log` (usually [`TraceLog::global`]).
    pub fn new(log: &'static TraceLog) -> PhosphorLogger {
        PhosphorLogger { log, sites: SiteCache::new(CACHE_SLOTS) }
    }

    /// The cached site of a record from `log`'s macros, if it matches.
    fn site(&self, record: &log::Record<'_>, file: &'static str, line: u32) -> Option<&'static Site> {
        // The file's address, the line and the level, mixed into one non-zero key; a collision is
        // caught by the comparison below.
        let key = (file.as_ptr() as usize)
            .wrapping_mul(31)
            .wrapping_add((line as usize) << 3 | record.level() as usize)
            .max(1);
        let same = |s: &Site| {
            std::ptr::eq(s.file, file)
                && s.line == line
                && s.level == record.level()
                && s.target == record.target()
        };
        if let Some(s) = self.sites.get(key) {
            return same(s).then_some(s);
        }
        let made = self.sites.insert(key, || {
            let fixed =
                record.args().as_str().and_then(|m| Some((m, point(record, file, line, &escaped(m))?)));
            Site {
                file,
                line,
                level: record.level(),
                target: record.target().to_owned(),
                fixed,
                formatted: point(record, file, line, "{}"),
            }
        })?;
        same(made).then_some(made)
    }

    fn record(
        &self,
        record: &log::Record<'_>,
        fixed: Option<(&'static str, Point)>,
        formatted: Option<Point>,
    ) {
        if let (Some((m, p)), Some(now)) = (fixed, record.args().as_str()) {
            if std::ptr::eq(m, now) {
                return p.log_in(self.log, &[], false);
            }
        }
        let Some(p) = formatted else { return };
        if let Some(m) = record.args().as_str() {
            return p.log_in(self.log, &[Value::Static(m)], false);
        }
        if !p.enabled_in(self.log) {
            return;
        }
        TEXT.with(|t| match t.try_borrow_mut() {
            Ok(mut text) => {
                text.clear();
                let _ = write!(text, "{}", record.args());
                p.log_in(self.log, &[Value::Str(&text)], false);
            }
            // A `Display` that logs while it is formatted: its own buffer.
            Err(_) => p.log_in(self.log, &[Value::Str(&record.args().to_string())], false),
        });
    }
}

impl log::Log for PhosphorLogger {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        // Phosphor decides per point (category and level), once the point is found.
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        if let (Some(file), Some(line)) = (record.file_static(), record.line()) {
            if let Some(site) = self.site(record, file, line) {
                return self.record(record, site.fixed, site.formatted);
            }
        }
        // A record made at run time, or a cache collision: find the points under the registry's lock.
        let file = record.file().unwrap_or("<unknown>");
        let line = record.line().unwrap_or(0);
        let fixed = record.args().as_str().and_then(|m| Some((m, point(record, file, line, &escaped(m))?)));
        self.record(record, fixed, point(record, file, line, "{}"));
    }

    fn flush(&self) {}
}
