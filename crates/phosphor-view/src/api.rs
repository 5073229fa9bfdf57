//! Response types shared by the API's endpoints (`docs/VIEW-API.md`): each endpoint's answer is a
//! `Serialize` type, checked against the document's examples by `api_doc_tests.rs`.

use serde::{Serialize, Serializer};

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

/// An answer of an error: `{"error": "why"}`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ErrorAnswer {
    pub(crate) error: String,
}

/// A window's samples a pixel at a time (`/api/samples`, `/api/heap`): `{"samples": [...]}`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Samples<T> {
    pub(crate) samples: Vec<T>,
}

/// A counter's samples in one pixel: `[start, end, count, min, max, last]`.
pub(crate) type SamplePixel = (i64, i64, u64, Finite, Finite, Finite);

/// `/api/traces`' answer. A live trace's entry is made by `live::api::describe`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TracesAnswer {
    pub(crate) traces: Vec<serde_json::Value>,
    pub(crate) done: bool,
    pub(crate) live: bool,
    /// Where the recorder of live traces listens (`HOST:PORT`), beside `phosphor record`.
    pub(crate) listening: Option<String>,
}

/// What `/api/traces` says of every trace: where it is in its indexing, and what it holds
/// (`body`) once scanned or indexed.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TraceEntry {
    pub(crate) trace: usize,
    pub(crate) file: Option<String>,
    pub(crate) process: String,
    pub(crate) pid: u32,
    pub(crate) clock: String,
    pub(crate) offset_ns: i64,
    pub(crate) placed: String,
    /// `scanning`, `indexing`, `ready`, `failed` or `live`.
    pub(crate) state: &'static str,
    pub(crate) bytes: u64,
    pub(crate) read: u64,
    pub(crate) error: Option<String>,
    #[serde(flatten)]
    pub(crate) body: Option<TraceBody>,
}

/// A trace's tracks: those of its index once ready; before, the threads its scan found.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum TraceBody {
    Ready {
        start_ns: i64,
        end_ns: i64,
        events: u64,
        read_error: Option<String>,
        threads: Vec<ThreadEntry>,
        counters: Vec<CounterEntry>,
        asyncs: Vec<AsyncEntry>,
        threads_total: usize,
        counters_total: usize,
        asyncs_total: usize,
    },
    Scanned {
        start_ns: i64,
        end_ns: i64,
        read_error: Option<String>,
        threads: Vec<ScannedThread>,
        threads_total: usize,
    },
}

/// An indexed thread of `/api/traces`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ThreadEntry {
    pub(crate) tid: u32,
    pub(crate) name: Option<String>,
    pub(crate) levels: usize,
    pub(crate) slices: u64,
    pub(crate) points: u64,
}

/// A counter of `/api/traces`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct CounterEntry {
    pub(crate) counter: usize,
    pub(crate) name: String,
    pub(crate) samples: u64,
}

/// An async track of `/api/traces`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct AsyncEntry {
    #[serde(rename = "async")]
    pub(crate) async_track: usize,
    pub(crate) name: String,
    pub(crate) lanes: usize,
    pub(crate) slices: u64,
}

/// A thread of a trace being indexed, as its scan found it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ScannedThread {
    pub(crate) tid: u32,
    pub(crate) name: Option<String>,
    pub(crate) events: u64,
}

/// `/api/overview`'s answer.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct OverviewAnswer {
    pub(crate) threads: Vec<OverviewRow>,
}

/// A thread's events a pixel, each rounded to a tenth.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct OverviewRow {
    pub(crate) tid: u32,
    pub(crate) events: Vec<f64>,
}

/// `/api/points`' answer.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct PointsAnswer {
    pub(crate) points: Vec<PointEntry>,
    pub(crate) names: std::collections::BTreeMap<u32, String>,
}

/// A point: `[ts, name, index, kind]`, or several in a pixel: `[start, end, -count, first]`.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum PointEntry {
    Point(i64, u32, u64, u8),
    Merged(i64, i64, i64, u64),
}

/// `/api/slice`'s answer (an indexed slice).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SliceAnswer {
    pub(crate) index: u64,
    pub(crate) name: String,
    pub(crate) start_ns: i64,
    pub(crate) end_ns: i64,
    pub(crate) duration_ns: u64,
    pub(crate) self_ns: u64,
    pub(crate) children: u64,
    pub(crate) path: Vec<String>,
    /// Null for an async slice.
    pub(crate) tid: Option<u32>,
    /// An async slice's track.
    #[serde(rename = "async")]
    pub(crate) async_track: Option<usize>,
    pub(crate) level: usize,
    pub(crate) callsite: u32,
    pub(crate) flags: u8,
    pub(crate) event_offset: u64,
    pub(crate) event: crate::events::EventAnswer,
    pub(crate) system: Option<crate::system_api::SliceSystem>,
}

/// `/api/point`'s answer (an indexed point).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct PointAnswer {
    pub(crate) index: u64,
    pub(crate) name: String,
    pub(crate) kind: u8,
    pub(crate) ts_ns: i64,
    pub(crate) tid: u32,
    /// Null for a lost-chunks point.
    pub(crate) event: Option<crate::events::EventAnswer>,
}
