//! Response types shared by the API's endpoints (`docs/VIEW-API.md`): each endpoint's answer is a
//! `Serialize` type, checked against the document's examples by `api_doc_tests.rs`. A live trace
//! answers with the same types as an indexed one (`live/api.rs`), so the page reads one shape.
//! `answers` (built for tests) names each endpoint's type.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::ser::Error as _;
use serde::{Serialize, Serializer};

use crate::query::SliceItem;

/// A float as JSON: a number, or its text (`"NaN"`, `"inf"`) when not finite (JSON has no NaN).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Finite(pub(crate) f64);

impl Serialize for Finite {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            s.serialize_f64(self.0)
        } else {
            s.serialize_str(&self.0.to_string())
        }
    }
}

/// An answer of an error (status 400, 404, 500 or 503), or an event's details that cannot be
/// read: `{"error": "why"}`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ErrorAnswer {
    /// What is wrong.
    pub(crate) error: String,
}

/// A window's samples a pixel at a time (`/api/samples`, `/api/heap`): `{"samples": [...]}`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Samples<T> {
    /// One item per pixel that holds a sample; the sample before the window comes first.
    pub(crate) samples: Vec<T>,
}

/// A counter's samples in one pixel: `[start, end, count, min, max, last]`, a value that is not
/// finite as a string.
pub(crate) type SamplePixel = (i64, i64, u64, Finite, Finite, Finite);

/// `/api/traces`' answer: the traces, and how far their indexing has come.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TracesAnswer {
    /// Every trace, by its number.
    pub(crate) traces: Vec<TraceEntry>,
    /// Whether every trace is indexed (never, in live mode: more programs may connect).
    pub(crate) done: bool,
    /// Whether the server shows traces as they are recorded (`phosphor record --view`).
    pub(crate) live: bool,
    /// Where the recorder of live traces listens (`HOST:PORT`), beside `phosphor record`; null
    /// outside live mode.
    pub(crate) listening: Option<String>,
}

/// What `/api/traces` says of every trace: where it is in its indexing, and what it holds
/// (`body`) once scanned, indexed or read live.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TraceEntry {
    /// Its number, by which requests name it.
    pub(crate) trace: usize,
    /// Its file's name.
    pub(crate) file: Option<String>,
    /// The traced process's name, from the header.
    pub(crate) process: String,
    /// The traced process's id.
    pub(crate) pid: u32,
    /// The clock its times were taken with.
    pub(crate) clock: String,
    /// Where its times fall on the shared timeline: add it to its nanoseconds since its clock's
    /// origin.
    pub(crate) offset_ns: i64,
    /// Why it is placed there (`placement.rs`), e.g. `first of its group`.
    pub(crate) placed: String,
    /// `scanning`, `indexing`, `ready`, `failed` or `live`.
    pub(crate) state: &'static str,
    /// The file's length.
    pub(crate) bytes: u64,
    /// The bytes of the file the current stage has read, of `bytes`.
    pub(crate) read: u64,
    /// Why it failed (`"state": "failed"`).
    pub(crate) error: Option<String>,
    /// What it holds, once scanned (absent before).
    #[serde(flatten)]
    pub(crate) body: Option<TraceBody>,
}

/// A trace's tracks: those of its index once ready; before, the threads its scan found; while
/// recorded, those its live view holds.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum TraceBody {
    /// An indexed trace (`"state": "ready"`).
    Ready {
        /// Its first time, on the shared timeline.
        start_ns: i64,
        /// Its last time, on the shared timeline.
        end_ns: i64,
        /// How many events it has.
        events: u64,
        /// Where reading stopped, if the file is truncated or damaged.
        read_error: Option<String>,
        /// Its busiest threads, at most `MAX_TRACKS`, in order of `tid`.
        threads: Vec<ThreadEntry>,
        /// Its busiest counters, in order of number.
        counters: Vec<CounterEntry>,
        /// Its busiest async tracks, in order of number.
        asyncs: Vec<AsyncEntry>,
        /// How many threads it has.
        threads_total: usize,
        /// How many counters it has.
        counters_total: usize,
        /// How many async tracks it has.
        asyncs_total: usize,
    },
    /// A trace being indexed, once its chunk headers are scanned.
    Scanned {
        /// Its first time, on the shared timeline.
        start_ns: i64,
        /// Its last time, on the shared timeline.
        end_ns: i64,
        /// Where reading stopped, if the file is truncated or damaged.
        read_error: Option<String>,
        /// The threads the scan found, with their events.
        threads: Vec<ScannedThread>,
        /// How many threads it has.
        threads_total: usize,
    },
    /// A trace being recorded (`"state": "live"`), counted over what its live view holds.
    Live {
        /// Its first time, absent until its first event is read.
        #[serde(skip_serializing_if = "Option::is_none")]
        start_ns: Option<i64>,
        /// Its newest time, absent until its first event is read.
        #[serde(skip_serializing_if = "Option::is_none")]
        end_ns: Option<i64>,
        /// How many events the live view has taken in.
        events: u64,
        /// Why reading the file stopped, if it did.
        read_error: Option<String>,
        /// Its threads.
        threads: Vec<ThreadEntry>,
        /// Its counters.
        counters: Vec<CounterEntry>,
        /// Its async tracks.
        asyncs: Vec<AsyncEntry>,
        /// What the live view holds of it.
        live: LiveState,
    },
}

/// An indexed (or live) thread of `/api/traces`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ThreadEntry {
    /// Its id, by which requests name it.
    pub(crate) tid: u32,
    /// Its name; null for a thread without one.
    pub(crate) name: Option<String>,
    /// How deep its slices nest (level 0 is the outermost).
    pub(crate) levels: usize,
    /// How many slices it has.
    pub(crate) slices: u64,
    /// How many points (instants, logs, markers) it has.
    pub(crate) points: u64,
}

/// A counter of `/api/traces`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct CounterEntry {
    /// Its number, by which `/api/samples` names it.
    pub(crate) counter: usize,
    /// Its name.
    pub(crate) name: String,
    /// How many samples it has.
    pub(crate) samples: u64,
}

/// An async track of `/api/traces`: one per async slice name.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct AsyncEntry {
    /// Its number, by which `/api/slices?async=A` names it.
    #[serde(rename = "async")]
    pub(crate) async_track: usize,
    /// The name of its slices.
    pub(crate) name: String,
    /// How many lanes its slices take (no lane holds two that overlap).
    pub(crate) lanes: usize,
    /// How many slices it has.
    pub(crate) slices: u64,
}

/// A thread of a trace being indexed, as its scan found it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ScannedThread {
    /// Its id.
    pub(crate) tid: u32,
    /// Its name; null for a thread without one.
    pub(crate) name: Option<String>,
    /// How many events it has.
    pub(crate) events: u64,
}

/// `live` of a live trace in `/api/traces`: what its live view holds.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct LiveState {
    /// The recorder is still writing the file.
    pub(crate) connected: bool,
    /// The live view has read all of the file (it is indexed next).
    pub(crate) finished: bool,
    /// The records (slices, points, counter samples, async slices) the live view holds.
    pub(crate) retained: usize,
    /// The most records it holds (`--view-records`).
    pub(crate) limit: usize,
    /// The records dropped, oldest first, past the limit.
    pub(crate) dropped: u64,
    /// Events read past without being decoded, the live view having fallen behind.
    pub(crate) skipped: u64,
    /// Events not kept because a bound was reached.
    pub(crate) refused: u64,
    /// The cut in time before which the live view has dropped records; null until it has.
    pub(crate) horizon_ns: Option<i64>,
}

/// What an answer of `/api/search`, `/api/stats` or `/api/kind` covers of a live trace
/// (`live::scan::coverage`): from `from_ns` to `end_ns`, its newest data.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct LiveCoverage {
    /// The live trace's number.
    pub(crate) trace: usize,
    /// Its first time.
    pub(crate) start_ns: i64,
    /// Its newest time.
    pub(crate) end_ns: i64,
    /// The first time the live view holds all of: its `horizon_ns` once it has dropped records,
    /// else `start_ns`.
    pub(crate) from_ns: i64,
    /// The records the live view has dropped.
    pub(crate) dropped: u64,
    /// The events it has read past without decoding.
    pub(crate) skipped: u64,
}

/// `/api/overview`'s answer.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct OverviewAnswer {
    /// Each listed thread's events a pixel.
    pub(crate) threads: Vec<OverviewRow>,
}

/// A thread's events a pixel, each rounded to a tenth.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct OverviewRow {
    /// The thread's id.
    pub(crate) tid: u32,
    /// How many events it has in each pixel of the window.
    pub(crate) events: Vec<f64>,
}

/// `/api/slices`' answer, for an index and a live trace alike. Its levels may hold hundreds of
/// thousands of items, so they are written as they are made ([`Lazy`]), never held as JSON
/// values, and `names`, filled meanwhile, comes after them.
#[derive(Debug, Serialize)]
pub(crate) struct SlicesAnswer<'a, L> {
    /// The first level given (the request's `from`).
    pub(crate) from: usize,
    /// The levels from `from`, at most `MAX_LEVELS`: each a list of [`SliceEntry`], in time order.
    pub(crate) levels: L,
    /// Whether the track has levels past the ones given.
    pub(crate) more_levels: bool,
    /// The names the items refer to, by number.
    pub(crate) names: &'a RefCell<BTreeMap<u32, String>>,
}

/// An item of a level of `/api/slices`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum SliceEntry {
    /// `[start, end, name, index, flags]`: a slice at least a pixel wide, or alone in its pixel;
    /// `name` a key of `names`, `index` its number for `/api/slice`.
    Slice(i64, i64, u32, u64, u8),
    /// `[start, end, -count, first, name]`: a run of `count` slices narrower than a pixel,
    /// numbered from `first`; `end` the run's latest end, `name` its dominant name.
    Merged(i64, i64, i64, u64, u32),
}

/// A sequence written from an iterator as it goes (JSON an item at a time, no list of them
/// made first). It can be serialized once: the iterator is taken then.
pub(crate) struct Lazy<I>(RefCell<Option<I>>);

impl<I> Lazy<I> {
    pub(crate) fn new(items: I) -> Lazy<I> {
        Lazy(RefCell::new(Some(items)))
    }
}

impl<I> std::fmt::Debug for Lazy<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lazy(..)")
    }
}

impl<I: Iterator<Item: Serialize>> Serialize for Lazy<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let items = self.0.borrow_mut().take().ok_or_else(|| S::Error::custom("serialized twice"))?;
        s.collect_seq(items)
    }
}

/// `/api/slices`' answer as JSON, written a part at a time: each level's items as they are made
/// from `levels` (the levels from `from`), then the names they refer to. `ns` puts a time in
/// ticks on the shared timeline; `name` gives a name's text.
pub(crate) fn slices_json(
    from: usize,
    levels: impl Iterator<Item = Vec<SliceItem>>,
    more_levels: bool,
    ns: impl Fn(u64) -> i64,
    name: impl Fn(u32) -> String,
) -> Result<Vec<u8>, serde_json::Error> {
    let names = RefCell::new(BTreeMap::new());
    let named = |n: u32| {
        names.borrow_mut().entry(n).or_insert_with(|| name(n));
        n
    };
    let entry = |item: SliceItem| match item {
        SliceItem::Slice(i, s) => SliceEntry::Slice(ns(s.start), ns(s.end), named(s.name), i, s.flags),
        SliceItem::Merged { first, count, start, end, name } => {
            SliceEntry::Merged(ns(start), ns(end), -(count as i64), first, named(name))
        }
    };
    let levels = Lazy::new(levels.map(|items| Lazy::new(items.into_iter().map(&entry))));
    let mut out = Vec::with_capacity(1 << 14);
    serde_json::to_writer(&mut out, &SlicesAnswer { from, levels, more_levels, names: &names })?;
    Ok(out)
}

/// `/api/points`' answer.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct PointsAnswer {
    /// The points in the window, in time order.
    pub(crate) points: Vec<PointEntry>,
    /// The names the points refer to, by number.
    pub(crate) names: BTreeMap<u32, String>,
}

/// A point: `[ts, name, index, kind]`, or several in a pixel: `[start, end, -count, first]`.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum PointEntry {
    /// `[ts, name, index, kind]`: a point alone in its pixel; `name` a key of `names`.
    Point(i64, u32, u64, u8),
    /// `[start, end, -count, first]`: `count` points in one pixel, numbered from `first`.
    Merged(i64, i64, i64, u64),
}

/// `/api/slice`'s answer: an indexed or a live slice.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SliceAnswer {
    /// Its number.
    pub(crate) index: u64,
    /// Its name.
    pub(crate) name: String,
    /// Its start, on the shared timeline.
    pub(crate) start_ns: i64,
    /// Its end, on the shared timeline.
    pub(crate) end_ns: i64,
    /// Its end less its start, each rounded to the nanosecond (as `phosphor stats` measures).
    pub(crate) duration_ns: u64,
    /// The duration less those of its `children`.
    pub(crate) self_ns: u64,
    /// How many slices it holds, one level down.
    pub(crate) children: u64,
    /// The names of the slices that hold it, outermost first, then its own.
    pub(crate) path: Vec<String>,
    /// Its thread; null for an async slice.
    pub(crate) tid: Option<u32>,
    /// An async slice's track; null on a thread.
    #[serde(rename = "async")]
    pub(crate) async_track: Option<usize>,
    /// Its level on its track (0 the outermost).
    pub(crate) level: usize,
    /// Its callsite's number; null for a live slice.
    pub(crate) callsite: Option<u32>,
    /// How it was recorded (the two low bits) and its problems (4 unclosed, 8 closed by another
    /// name's end, 16 interlaced).
    pub(crate) flags: u8,
    /// The byte offset of its event's record in the trace file; null for a live slice.
    pub(crate) event_offset: Option<u64>,
    /// Its event's details, read again from the file, or why they cannot be.
    pub(crate) event: crate::events::EventAnswer,
    /// Its thread's system figures between its start and end; null without system context.
    pub(crate) system: Option<crate::system_api::SliceSystem>,
    /// True for a slice of a live trace (its number is the live view's); absent otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) live: bool,
}

/// `/api/point`'s answer: an indexed or a live point.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct PointAnswer {
    /// Its number.
    pub(crate) index: u64,
    /// Its name (a log's format string).
    pub(crate) name: String,
    /// 0 an instant, 1 a log, 2 a saturation marker, 3 an end without a begin, 4 lost chunks.
    pub(crate) kind: u8,
    /// Its time, on the shared timeline.
    pub(crate) ts_ns: i64,
    /// Its thread.
    pub(crate) tid: u32,
    /// Its event's details; null for a lost-chunks point of an index.
    pub(crate) event: Option<crate::events::EventAnswer>,
    /// True for a point of a live trace; absent otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) live: bool,
}

/// The type of `T`'s name, which must be `Serialize`.
#[cfg(test)]
fn typed<T: Serialize>() -> &'static str {
    std::any::type_name::<T>()
}

/// Each endpoint of the server's route table and the type of its answer (`api_doc_tests.rs`
/// checks that every route has one, documented and checked against the document).
#[cfg(test)]
pub(crate) fn answers() -> Vec<(&'static str, &'static str)> {
    type Slices<'a> = SlicesAnswer<'a, Lazy<std::vec::IntoIter<Lazy<std::vec::IntoIter<SliceEntry>>>>>;
    vec![
        ("/api/traces", typed::<TracesAnswer>()),
        ("/api/overview", typed::<OverviewAnswer>()),
        ("/api/slices", typed::<Slices<'_>>()),
        ("/api/points", typed::<PointsAnswer>()),
        ("/api/samples", typed::<Samples<SamplePixel>>()),
        ("/api/slice", typed::<SliceAnswer>()),
        ("/api/flow", typed::<crate::flows::FlowAnswer>()),
        ("/api/point", typed::<PointAnswer>()),
        ("/api/search", typed::<crate::search::SearchAnswer>()),
        ("/api/stats", typed::<crate::stats::StatsAnswer>()),
        ("/api/kind", typed::<crate::stats::KindAnswer>()),
        ("/api/compare", typed::<crate::compare::CompareAnswer>()),
        ("/api/system", typed::<crate::system::SystemSummary>()),
        ("/api/context", typed::<crate::system::ContextAnswer>()),
        ("/api/heap", typed::<Samples<crate::system::HeapPixel>>()),
        ("/api/stack", typed::<crate::system::StackAnswer>()),
        ("/api/stacks", typed::<crate::system::StacksAnswer>()),
        ("/api/frames", typed::<crate::frame_track::FramesAnswer>()),
        ("/api/tasks", typed::<crate::task_table::TasksAnswer>()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Slice;

    #[test]
    fn a_slices_answer_is_compact_json_of_its_levels_then_the_names_its_items_use() {
        let slice = |start, end, name| Slice { start, end, name, callsite: 0, event: 0, flags: 1 };
        let levels = vec![
            vec![
                SliceItem::Slice(7, slice(10, 20, 3)),
                SliceItem::Merged { first: 8, count: 4, start: 21, end: 29, name: 5 },
            ],
            vec![],
            vec![SliceItem::Slice(30, slice(30, 31, 3))],
        ];
        let out = slices_json(2, levels.into_iter(), true, |t| t as i64 * 2, |n| format!("n{n}")).unwrap();
        // The text the page has always read (`[start, end, name, index, flags]`, `[start, end,
        // -count, first, name]`), names only those used, each once.
        let want = r#"{"from":2,"levels":[[[20,40,3,7,1],[42,58,-4,8,5]],[],[[60,62,3,30,1]]],"more_levels":true,"names":{"3":"n3","5":"n5"}}"#;
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }
}
