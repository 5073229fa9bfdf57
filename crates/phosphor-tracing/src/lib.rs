//! A [`tracing_subscriber::Layer`] that records `tracing` spans and events into Phosphor.
//!
//! ```
//! use tracing_subscriber::prelude::*;
//!
//! let log = phosphor::TraceLog::global();
//! tracing_subscriber::registry().with(phosphor_tracing::PhosphorLayer::new(log)).init();
//! # log.start(phosphor::TraceConfig::new(phosphor::BufferMode::Ring, 1 << 20)).unwrap();
//! tracing::info!(user = "ada", n = 3, "logged in");
//! # log.stop();
//! ```
//!
//! # One line
//!
//! [`init`] is `phosphor::init()` (tracing switched on by `PHOSPHOR` and `PHOSPHOR_*`, off when
//! they are unset) with this layer installed as the global `tracing` subscriber when it is on:
//!
//! ```no_run
//! let _phosphor = phosphor_tracing::init(); // first thing in `main`
//! tracing::info!("traced when PHOSPHOR is set");
//! ```
//!
//! # What is recorded
//!
//! * An **event** is a Phosphor log (`trace_log!`'s kind) of the event's level, with the event's
//!   target as its category. Its format string is built once per callsite: the message, then
//!   ` name={}` per other field. Field values are its parameters: integers, floats and booleans
//!   stay typed; `&str` values are copied; anything else (the message included, which `tracing`
//!   hands over as `fmt::Arguments`) is formatted with `Debug` into a per-thread buffer and copied.
//!   At most 16 parameters are kept; the event is flagged truncated if it had more. An event
//!   of at most five fields (its message one of them), all scalars but the message, is the cheap
//!   case: its values are written straight into the record's parameters as the visitor hands
//!   them over ([`phosphor::bridge::ScalarParams`]), with no array of values; its message, still
//!   formatted, is recorded by reference when it is the text the callsite's first event had
//!   (kept once per callsite, up to 256 bytes). A callsite whose event needs more (a string, a
//!   `Debug` value, another message) has its later events go to the general path directly.
//! * A **span** is an async slice from its creation to its close (its whole life, named by the
//!   span, on a track of its own, with its id) carrying its first two fields as typed arguments
//!   (flagged truncated if it has more), and a slice on the thread from each enter to the matching
//!   exit. Values recorded later (`Span::record`) are not recorded. Spans that never leave their
//!   thread may skip the async slice ([`PhosphorLayer::with_span_lifetimes`]).
//!
//! The points of a `tracing` callsite are made the first time it is seen and cached by the
//! callsite's address in a lock-free table, with a direct-mapped table of event callsites in
//! front of it, so an event costs a lookup (a hash and a compare) and the recording, with no lock
//! and no allocation (the per-thread buffer keeps its capacity).
//!
//! # Filters
//!
//! Phosphor's own filters apply: the trace's category globs match targets, and its log level
//! applies to events. `tracing_subscriber`'s filters (`with_filter`, `EnvFilter`, `Targets`,
//! `LevelFilter`) apply as to any layer.

mod directives;
mod subscriber;

pub use directives::{Directives, DirectivesError};
pub use subscriber::PhosphorSubscriber;

use std::cell::RefCell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use phosphor::bridge::{PointSpec, ScalarParams, SiteCache, Value};
use phosphor::points::{CheckedLog, LogPoint, Point};
use phosphor::{Level, Phase, TraceLog};
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id};
use tracing_core::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The most parameters a Phosphor log keeps.
const MAX_PARAMS: usize = phosphor::format::MAX_PARAMS;

/// The parameters most events have at most (their slots are set up for every event).
const FEW_PARAMS: usize = 4;

/// `tracing` allows at most 32 fields per callsite.
const MAX_FIELDS: usize = 32;

/// Callsites the cache holds; beyond, events of new callsites are counted as lost.
const CACHE_SLOTS: usize = 16384;

/// The Phosphor points of one `tracing` callsite.
#[derive(Debug)]
enum Site {
    Event(EventSite),
    Span {
        /// The span's metadata (for `Subscriber::current_span`).
        meta: &'static Metadata<'static>,
        begin: Point,
        end: Point,
        enter: Point,
        exit: Point,
    },
    /// Points could not be made (too many dynamic points).
    None,
}

/// The points and recording state of an event callsite.
#[derive(Debug)]
struct EventSite {
    /// The callsite's metadata address (its key in the caches).
    key: usize,
    log: LogPoint,
    /// Each field's parameter position (by field index), `u8::MAX` when it is not kept.
    slot: [u8; MAX_FIELDS],
    params: usize,
    /// Whether field 0 is the message.
    message: bool,
    /// Its parameters before any is set (each an empty static string), copied per event.
    unset: ScalarParams,
    /// The scalar path's state. A callsite may take it when it has at most five parameters,
    /// each field's index its parameter's (a message is field 0, as `tracing`'s macros make it):
    /// its values, when they are all integers, floats or booleans and its message is the one seen
    /// before, are written straight into the record's parameters, with no slots. Null until the
    /// first event of such a callsite, then the message seen first (kept for the program's life,
    /// recorded as a static string whenever an event's message is the same text); [`SLOW`] for
    /// a callsite that may not take it, or once an event of the callsite needed the general path
    /// (a string or `Debug` field, another message): its events then go there directly.
    fast: AtomicPtr<Message>,
}

/// A callsite's message kept for the scalar path (see `Site::Event::fast`).
#[derive(Debug)]
struct Message {
    /// Leaked from a `Box<str>` when the message is published, never freed after.
    text: &'static str,
}

/// `Site::Event::fast` of a callsite whose events take the general path.
static SLOW: Message = Message { text: "" };

/// The pointer that says [`SLOW`].
fn slow() -> *mut Message {
    &SLOW as *const Message as *mut Message
}

/// Slots of the front table: a power of two.
const FRONT_BITS: u32 = 8;

/// A direct-mapped table of event callsites in front of the callsite cache: an event's own
/// slot, found by hashing its metadata's address, holds its [`EventSite`] unless another
/// callsite's took the slot since (then the cache is asked, and the slot is the event's again).
/// Its entries are the cache's, which live for the program's life and never change, so it needs
/// no invalidation: a slot is right or says it is not (its site's key is not the event's).
struct Front {
    slots: [AtomicPtr<EventSite>; 1 << FRONT_BITS],
}

impl Front {
    fn new() -> Front {
        Front { slots: [const { AtomicPtr::new(std::ptr::null_mut()) }; 1 << FRONT_BITS] }
    }

    /// The slot of `key`: Fibonacci hashing, the product's top bits (addresses are aligned, so
    /// their low bits are poor on their own).
    #[inline(always)]
    fn slot(key: usize) -> usize {
        key.wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize) >> (usize::BITS - FRONT_BITS)
    }

    /// The site of callsite `key` if its slot holds it.
    #[inline(always)]
    fn get(&self, key: usize) -> Option<&'static EventSite> {
        // Acquire: pairs with the Release in `put`, after which the site is fully built (it was
        // published in the callsite cache before `put` read it, by a Release that `put`'s Acquire
        // lookup synchronized with).
        let site = self.slots[Front::slot(key)].load(Ordering::Acquire);
        // SAFETY: a non-null slot holds a site of the callsite cache (`put`), leaked there and
        // never freed, never changed but through its atomics.
        let site = unsafe { site.as_ref() }?;
        (site.key == key).then_some(site)
    }

    /// Puts `site` (of the callsite cache, for the program's life) in its callsite's slot.
    fn put(&self, site: &'static EventSite) {
        // Release: see `get`.
        self.slots[Front::slot(site.key)]
            .store(site as *const EventSite as *mut EventSite, Ordering::Release);
    }
}

impl std::fmt::Debug for Front {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Relaxed: a count for display.
        let used = self.slots.iter().filter(|s| !s.load(Ordering::Relaxed).is_null()).count();
        f.debug_struct("Front").field("used", &used).finish()
    }
}

/// The longest message the scalar path keeps (a callsite's first message, once): what the general
/// path records whole.
const MAX_KEPT_MESSAGE: usize = phosphor::format::MAX_DYN_STR_BYTES;

/// The variable [`init`] reads `tracing` directives from (`EnvFilter`'s static syntax, e.g.
/// `warn,my_crate=debug`); unset, every callsite is recorded.
pub const DIRECTIVES_VAR: &str = "PHOSPHOR_TRACING";

/// Switches Phosphor on as `phosphor::init()` does (from `PHOSPHOR` and `PHOSPHOR_*`; nothing
/// when unset) and, when it is on, installs a [`PhosphorSubscriber`] of the global log (with the
/// directives of [`DIRECTIVES_VAR`]) as the global default subscriber. A program that already set a subscriber is told
/// on standard error to add the layer to its own (the trace still records Phosphor's macros).
/// Keep the guard alive in `main`: the trace is finished when it drops, or at exit.
pub fn init() -> phosphor::Guard {
    let guard = phosphor::init();
    if guard.is_active() {
        let directives = match std::env::var(DIRECTIVES_VAR) {
            Ok(spec) => Directives::parse(&spec).unwrap_or_else(|e| {
                eprintln!("phosphor: {DIRECTIVES_VAR}: {e}; recording every callsite");
                Directives::default()
            }),
            Err(_) => Directives::default(),
        };
        let subscriber = PhosphorSubscriber::new(TraceLog::global()).with_directives(directives);
        if tracing_core::dispatcher::set_global_default(tracing_core::Dispatch::new(subscriber)).is_err() {
            eprintln!(
                "phosphor: a global tracing subscriber was already set; add phosphor_tracing::PhosphorLayer to it to record tracing's spans and events"
            );
        }
    }
    guard
}

/// Records `tracing` spans and events into a Phosphor [`TraceLog`]; see the crate docs.
#[derive(Debug)]
pub struct PhosphorLayer {
    log: &'static TraceLog,
    sites: SiteCache<Site>,
    /// The event callsites last seen, in front of `sites`.
    front: Front,
    lost: AtomicU64,
    lifetimes: bool,
}

impl PhosphorLayer {
    /// A layer recording into `log` (usually [`TraceLog::global`]).
    pub fn new(log: &'static TraceLog) -> PhosphorLayer {
        PhosphorLayer {
            log,
            sites: SiteCache::new(CACHE_SLOTS),
            front: Front::new(),
            lost: AtomicU64::new(0),
            lifetimes: true,
        }
    }

    /// Whether a span's whole life is recorded as an async slice (the default) besides its
    /// enter/exit slices. Code whose spans never leave their thread may turn it off: each span
    /// then costs two events instead of four, and the viewer shows no track per span. The span's
    /// fields are recorded with its life only.
    pub fn with_span_lifetimes(mut self, lifetimes: bool) -> PhosphorLayer {
        self.lifetimes = lifetimes;
        self
    }

    /// Events and spans not recorded because their callsite got no points: the callsite cache
    /// was full, or Phosphor's limit of dynamic points was reached.
    pub fn lost(&self) -> u64 {
        // Relaxed: a statistic.
        self.lost.load(Ordering::Relaxed)
    }

    #[inline]
    fn site(&self, meta: &'static Metadata<'static>) -> &'static Site {
        let key = meta as *const Metadata<'static> as usize;
        match self.sites.get(key) {
            Some(site) => site,
            None => self.new_site(meta),
        }
    }

    /// Makes and caches the points of a callsite seen for the first time.
    #[cold]
    #[inline(never)]
    fn new_site(&self, meta: &'static Metadata<'static>) -> &'static Site {
        let key = meta as *const Metadata<'static> as usize;
        self.sites.insert(key, || make_site(meta)).unwrap_or(&Site::None)
    }

    fn count_lost(&self) {
        // Relaxed: a statistic.
        self.lost.fetch_add(1, Ordering::Relaxed);
    }
}

fn level(l: &tracing_core::Level) -> Level {
    match *l {
        tracing_core::Level::ERROR => Level::Error,
        tracing_core::Level::WARN => Level::Warn,
        tracing_core::Level::INFO => Level::Info,
        tracing_core::Level::DEBUG => Level::Debug,
        _ => Level::Trace,
    }
}

/// Makes the points of a callsite: cold, once per callsite.
#[cold]
fn make_site(meta: &'static Metadata<'static>) -> Site {
    fn spec<'a>(meta: &'static Metadata<'static>, name: &'a str, phase: Phase) -> PointSpec<'a> {
        PointSpec {
            category: meta.target(),
            name,
            phase,
            level: Some(level(meta.level())),
            arg_names: ["", ""],
            file: meta.file().unwrap_or("<unknown>"),
            line: meta.line().unwrap_or(0),
        }
    }
    let made = if meta.is_span() {
        let names: Vec<&str> = meta.fields().iter().map(|f| f.name()).take(2).collect();
        let arg_names = [names.first().copied().unwrap_or(""), names.get(1).copied().unwrap_or("")];
        (|| {
            Ok::<_, phosphor::Error>(Site::Span {
                meta,
                begin: Point::custom(&PointSpec { arg_names, ..spec(meta, meta.name(), Phase::AsyncBegin) })?,
                end: Point::custom(&spec(meta, meta.name(), Phase::AsyncEnd))?,
                enter: Point::custom(&spec(meta, meta.name(), Phase::Begin))?,
                exit: Point::custom(&spec(meta, meta.name(), Phase::End))?,
            })
        })()
    } else {
        // The message first, then the other fields in order, as `name={}`.
        let mut format = String::new();
        let mut slot = [u8::MAX; MAX_FIELDS];
        let mut params = 0;
        let fields = meta.fields();
        let is_message = |f: &Field| f.name() == "message";
        for f in fields.iter().filter(is_message).chain(fields.iter().filter(|f| !is_message(f))) {
            if params == MAX_PARAMS || f.index() >= MAX_FIELDS {
                break;
            }
            slot[f.index()] = params as u8;
            params += 1;
            if !format.is_empty() {
                format.push(' ');
            }
            if f.name() == "message" {
                format.push_str("{}");
            } else {
                let _ = write!(format, "{}={{}}", f.name());
            }
        }
        // The scalar path's parameter of a field is its index: no message, or the message first.
        let message = fields.field("message").map(|f| f.index());
        let scalars = fields.len() <= ScalarParams::MAX_SCALARS && message.is_none_or(|i| i == 0);
        let message = message.is_some();
        let unset = ScalarParams::new(params);
        let fast = AtomicPtr::new(if scalars { std::ptr::null_mut() } else { slow() });
        let key = meta as *const Metadata<'static> as usize;
        Point::custom(&spec(meta, &format, Phase::Log)).map(|point| match point.as_log() {
            Some(log) => Site::Event(EventSite { key, log, slot, params, message, unset, fast }),
            None => Site::None,
        })
    };
    made.unwrap_or(Site::None)
}

/// A collected value: typed, or a range of the per-thread text buffer.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Empty,
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Text(u32, u32),
}

/// Collects field values into `N` slots, formatting into `text`. `N` is 4 for most callsites:
/// the slots (and the values made of them) are set up for every event, so their size is time.
struct Collect<'a, const N: usize> {
    slots: [Slot; N],
    /// Field index → slot (events); for spans, the first two fields.
    map: &'a [u8; MAX_FIELDS],
    text: &'a mut String,
    /// Fields that had a value but no slot.
    extra: bool,
}

impl<const N: usize> Collect<'_, N> {
    fn slot(&mut self, field: &Field) -> Option<&mut Slot> {
        match self.map.get(field.index()).copied() {
            Some(i) if (i as usize) < N => Some(&mut self.slots[i as usize]),
            _ => {
                self.extra = true;
                None
            }
        }
    }

    fn put(&mut self, field: &Field, v: Slot) {
        if let Some(s) = self.slot(field) {
            *s = v;
        }
    }
}

fn value(s: Slot, text: &str) -> Value<'_> {
    match s {
        Slot::Empty => Value::Static(""),
        Slot::I64(v) => Value::I64(v),
        Slot::U64(v) => Value::U64(v),
        Slot::F64(v) => Value::F64(v),
        Slot::Bool(v) => Value::Bool(v),
        Slot::Text(a, b) => Value::Str(text.get(a as usize..b as usize).unwrap_or("")),
    }
}

impl<const N: usize> Visit for Collect<'_, N> {
    fn record_i64(&mut self, field: &Field, v: i64) {
        self.put(field, Slot::I64(v));
    }
    fn record_u64(&mut self, field: &Field, v: u64) {
        self.put(field, Slot::U64(v));
    }
    fn record_f64(&mut self, field: &Field, v: f64) {
        self.put(field, Slot::F64(v));
    }
    fn record_bool(&mut self, field: &Field, v: bool) {
        self.put(field, Slot::Bool(v));
    }
    fn record_str(&mut self, field: &Field, v: &str) {
        if self.slot(field).is_some() {
            let start = self.text.len() as u32;
            self.text.push_str(v);
            let end = self.text.len() as u32;
            self.put(field, Slot::Text(start, end));
        }
    }
    fn record_debug(&mut self, field: &Field, v: &dyn std::fmt::Debug) {
        if self.slot(field).is_some() {
            let start = self.text.len() as u32;
            let _ = write!(self.text, "{v:?}");
            let end = self.text.len() as u32;
            self.put(field, Slot::Text(start, end));
        }
    }
}

/// Writes an event's scalar fields into its parameters, parameter `i` from field `i` (a scalar
/// callsite's fields are in parameter order), and its message as a static string when it is the
/// callsite's kept message; notes anything else (`spill`), for the general path to record it.
struct Scalars<'a> {
    params: ScalarParams,
    /// The callsite (whose `fast` is where the first event of a callsite with a message keeps its
    /// message).
    site: &'a EventSite,
    /// The callsite's scalar-path state, as loaded before the visit (`EventSite::fast`).
    kept: *mut Message,
    spill: bool,
    /// A value stored cut (a static string out of a word's range): the truncated flag.
    cut: bool,
}

impl Scalars<'_> {
    /// The parameter of `field`, or `None` (and the event spills) when it has none.
    #[inline(always)]
    fn at(&mut self, field: &Field) -> Option<usize> {
        let i = field.index();
        if i < self.params.len() {
            Some(i)
        } else {
            self.spill = true;
            None
        }
    }

    /// The message `v` as a static string: the kept one if `v` formats to its text (compared as
    /// it is written, copying nothing); on a callsite's first event, `v` formatted and kept (once,
    /// for the program's life: at most [`MAX_KEPT_MESSAGE`] bytes). `None` when it is another
    /// text, or could not be kept.
    fn kept_message(&self, v: &dyn std::fmt::Debug) -> Option<&'static str> {
        if self.kept.is_null() {
            return self.first_message(v);
        }
        // SAFETY: `kept` is non-null and not `SLOW` (the caller checked): a `Message` that
        // `keep` published and never frees, read after an Acquire load (`record_event`).
        let kept = unsafe { &*self.kept }.text;
        let mut same = SameText { rest: Some(kept) };
        // An error (the text differs, or a `Debug` failed): not the kept message.
        (write!(same, "{v:?}").is_ok() && same.rest == Some("")).then_some(kept)
    }

    /// The message of a callsite's first event, formatted into this thread's buffer and kept.
    /// The buffer in use (a `Debug` of the message's arguments that records an event) or gone
    /// (thread exit): `None`, and the general path records it.
    #[cold]
    #[inline(never)]
    fn first_message(&self, v: &dyn std::fmt::Debug) -> Option<&'static str> {
        TEXT.try_with(|t| {
            let mut t = t.try_borrow_mut().ok()?;
            t.clear();
            let _ = write!(t, "{v:?}");
            self.keep(&t)
        })
        .ok()
        .flatten()
    }

    /// Publishes `text` as the callsite's kept message, if no other thread did first.
    #[cold]
    #[inline(never)]
    fn keep(&self, text: &str) -> Option<&'static str> {
        if text.len() > MAX_KEPT_MESSAGE {
            return None;
        }
        let leaked: &'static str = Box::leak(Box::<str>::from(text));
        let message = Box::into_raw(Box::new(Message { text: leaked }));
        // Release on success: the message's text is written before another thread's Acquire
        // load (`record_event`) can see its pointer. Relaxed on failure: nothing is read.
        let fast = &self.site.fast;
        match fast.compare_exchange(std::ptr::null_mut(), message, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => Some(leaked),
            Err(_) => {
                // SAFETY: leaked just above and, unpublished, seen by no one else.
                drop(unsafe { Box::from_raw(message) });
                // SAFETY: as above: the text's box, whose only reference was in `message`.
                drop(unsafe { Box::from_raw(leaked as *const str as *mut str) });
                None
            }
        }
    }
}

impl Visit for Scalars<'_> {
    fn record_i64(&mut self, field: &Field, v: i64) {
        if let Some(i) = self.at(field) {
            self.params.set_i64(i, v);
        }
    }
    fn record_u64(&mut self, field: &Field, v: u64) {
        if let Some(i) = self.at(field) {
            self.params.set_u64(i, v);
        }
    }
    fn record_f64(&mut self, field: &Field, v: f64) {
        if let Some(i) = self.at(field) {
            self.params.set_f64(i, v);
        }
    }
    fn record_bool(&mut self, field: &Field, v: bool) {
        if let Some(i) = self.at(field) {
            self.params.set_bool(i, v);
        }
    }
    fn record_str(&mut self, _field: &Field, _v: &str) {
        self.spill = true;
    }
    fn record_debug(&mut self, field: &Field, v: &dyn std::fmt::Debug) {
        if !self.site.message || field.index() != 0 {
            self.spill = true;
            return;
        }
        // The message (`format_args!`, only `Debug` to a visitor) is formatted and compared with
        // the kept one.
        let kept = self.kept_message(v);
        match kept {
            Some(text) => self.cut |= self.params.set_static(0, text),
            None => self.spill = true,
        }
    }
}

/// A `fmt::Write` that compares what is written with a text instead of keeping it: `rest` is
/// the text not matched yet, `None` once something written differed (every later write fails
/// too, in case a `Debug` goes on after an error).
struct SameText<'k> {
    rest: Option<&'k str>,
}

impl std::fmt::Write for SameText<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.rest = self.rest.and_then(|rest| rest.strip_prefix(s));
        self.rest.map(|_| ()).ok_or(std::fmt::Error)
    }
}

thread_local! {
    /// The text of formatted values; cleared per event, its capacity kept.
    static TEXT: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Runs `f` with the per-thread text buffer, or a fresh one if it is in use (a field's `Debug`
/// that itself emits an event).
fn with_text<R>(f: impl FnOnce(&mut String) -> R) -> R {
    TEXT.with(|t| match t.try_borrow_mut() {
        Ok(mut t) => {
            t.clear();
            f(&mut t)
        }
        Err(_) => f(&mut String::new()),
    })
}

/// The first two fields of a span, in its slots 0 and 1.
const SPAN_MAP: [u8; MAX_FIELDS] = {
    let mut m = [u8::MAX; MAX_FIELDS];
    m[0] = 0;
    m[1] = 1;
    m
};

/// Records an event with a message, a string or a `Debug` value, or more than five fields: out
/// of the scalar path's way.
#[inline(never)]
fn record_general(event: &Event<'_>, checked: CheckedLog<'_>, slot: &[u8; MAX_FIELDS], params: usize) {
    if params <= FEW_PARAMS {
        emit::<FEW_PARAMS>(event, checked, slot, params);
    } else {
        emit::<MAX_PARAMS>(event, checked, slot, params);
    }
}

/// Collects an event's `params` values (at most `N`) and records them.
fn emit<const N: usize>(event: &Event<'_>, checked: CheckedLog<'_>, slot: &[u8; MAX_FIELDS], params: usize) {
    with_text(|text| {
        let mut c = Collect::<N> { slots: [Slot::Empty; N], map: slot, text, extra: false };
        event.record(&mut c);
        // Read in place: the slots are a few hundred bytes, not worth a move.
        let text: &str = c.text;
        let mut values = [Value::U64(0); N];
        for (v, s) in values.iter_mut().zip(&c.slots[..params]) {
            *v = value(*s, text);
        }
        checked.values(&values[..params], c.extra);
    });
}

impl PhosphorLayer {
    /// Makes a callsite's points off the recording path; false when it got none (counted lost).
    fn register(&self, meta: &'static Metadata<'static>) -> bool {
        let made = !matches!(self.site(meta), Site::None);
        if !made {
            self.count_lost();
        }
        made
    }

    /// Records an event as a Phosphor log.
    #[inline]
    fn record_event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let site = match self.front.get(meta as *const Metadata<'static> as usize) {
            Some(site) => site,
            None => match self.event_site(meta) {
                Some(site) => site,
                None => return self.count_lost(),
            },
        };
        // The global log's address is a link-time constant: named as such, the check and the clock
        // fold its slot to a constant (`TraceLog::slot`) instead of testing for it each.
        let global = std::ptr::eq(self.log, TraceLog::global());
        // The one check: the event is recorded with what the visit finds, unchecked.
        let checked =
            if global { site.log.check_in(TraceLog::global()) } else { site.log.check_in(self.log) };
        let Some(checked) = checked else { return };
        // Acquire: pairs with the Release that published a kept message (`Scalars::keep`), whose
        // text the visit may read.
        let kept = site.fast.load(Ordering::Acquire);
        if kept != slow() {
            // The clock first: its latency overlaps the visit.
            let ts = if global { TraceLog::global().now() } else { self.log.now() };
            // Integers, floats and booleans straight into the record's parameters, the kept
            // message as a static string; anything else sends the event down the general path
            // (visited again), and the callsite's later events straight there.
            let mut v = Scalars { params: site.unset, site, kept, spill: false, cut: false };
            event.record(&mut v);
            if !v.spill {
                return checked.scalars_at(ts, &v.params, v.cut);
            }
            // Relaxed: `SLOW` is a static, nothing is published with it.
            site.fast.store(slow(), Ordering::Relaxed);
        }
        record_general(event, checked, &site.slot, site.params);
    }

    /// The event points of a callsite missing from the front table (seen for the first time, or
    /// its slot taken by another callsite's), put there; `None` when it got none.
    #[cold]
    #[inline(never)]
    fn event_site(&self, meta: &'static Metadata<'static>) -> Option<&'static EventSite> {
        match self.site(meta) {
            Site::Event(site) => {
                self.front.put(site);
                Some(site)
            }
            _ => None,
        }
    }

    /// Records a new span's life beginning (when lifetimes are recorded), as async slice `id`,
    /// of callsite points `site` (nothing for a callsite that got none: counted by the caller).
    fn record_new_span(&self, site: &Site, attrs: &Attributes<'_>, id: u64) {
        let Site::Span { begin, .. } = site else { return };
        if !self.lifetimes || !begin.enabled_in(self.log) {
            return;
        }
        with_text(|text| {
            let mut c = Collect::<2> { slots: [Slot::Empty; 2], map: &SPAN_MAP, text, extra: false };
            attrs.record(&mut c);
            let Collect { slots, extra, .. } = c;
            let fields = attrs.metadata().fields().len();
            let arg = |i: usize| (i < fields).then(|| value(slots[i], text));
            begin.record_in(self.log, id, 0, [arg(0), arg(1)], extra);
        });
    }

    /// Records a span's enter (`true`) or exit as the slice's begin or end on this thread.
    #[inline]
    fn record_enter(&self, site: &Site, enter: bool) {
        if let Site::Span { enter: begin, exit: end, .. } = site {
            let point = if enter { begin } else { end };
            point.mark_in(self.log);
        }
    }

    /// Records the end of a span's life, async slice `id` (when lifetimes are recorded).
    fn record_close(&self, site: &Site, id: u64) {
        if let (true, Site::Span { end, .. }) = (self.lifetimes, site) {
            end.record_in(self.log, id, 0, [None, None], false);
        }
    }
}

impl<S> tracing_subscriber::Layer<S> for PhosphorLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> tracing_core::subscriber::Interest {
        self.register(meta);
        tracing_core::subscriber::Interest::always()
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        self.record_event(event);
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let site = self.site(attrs.metadata());
        if matches!(site, Site::None) {
            self.count_lost();
        }
        self.record_new_span(site, attrs, id.into_u64());
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if let Some(m) = ctx.metadata(id) {
            self.record_enter(self.site(m), true);
        }
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        if let Some(m) = ctx.metadata(id) {
            self.record_enter(self.site(m), false);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(m) = ctx.metadata(&id) {
            self.record_close(self.site(m), id.into_u64());
        }
    }
}
