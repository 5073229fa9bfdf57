//! `GET /api/compare`: two of the served traces compared path by path (`phosphor view BASE NEW
//! --compare`), the rows `phosphor diff BASE NEW --json` gives.
//!
//! The rows come from `phosphor_export::TraceDiff`, the code behind `phosphor diff`: each file
//! read again in a streaming pass of its own ([`DiffSide::from_reader`], the two at once), on a
//! thread started with the server ([`Traces::compare`]), not from the viewer's index, so that the
//! page shows exactly what `phosphor diff` prints. Each row also gives the names that
//! `/api/kind` takes for it, so that the page can list the slowest occurrences of its path in
//! each trace. Memory: the two sides' rows, as `phosphor diff` holds them, then the answer's rows.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use phosphor_export::diff::{DiffKind, SIGNIFICANCE};
use phosphor_export::{DiffOptions, DiffRowJson, DiffSide, EventType, TraceDiff};
use phosphor_format::file::Reader;
use serde::Serialize;

use crate::server::{Failure, Shared};
use crate::traces::Traces;

/// The page's comparison panel (an ES module of the page).
pub(crate) const COMPARE_JS: &str = include_str!("../assets/compare.js");

/// Two traces a server compares, and their diff once computed.
#[derive(Debug)]
pub(crate) struct Comparison {
    /// The base trace's number.
    base: usize,
    /// The new trace's number.
    new: usize,
    /// The rows, or why the traces could not be compared.
    done: OnceLock<Result<Compared, String>>,
}

/// The diff as the API serves it.
#[derive(Debug)]
struct Compared {
    rows: Vec<DiffRowJson>,
    kinds: Vec<Option<KindPath>>,
    events: [u64; 2],
}

/// What `GET /api/compare` answers.
#[derive(Clone, Debug, Serialize)]
pub struct CompareAnswer {
    /// `off` (the server compares no traces), `computing`, or `ready`.
    pub state: &'static str,
    /// The base trace (BASE of `phosphor view BASE NEW --compare`).
    pub base: Option<CompareSide>,
    /// The new trace.
    pub new: Option<CompareSide>,
    /// The p-value below which a change is significant (`phosphor diff`'s).
    pub significance: f64,
    /// Rows (all of them: there is a row per path and type).
    pub rows_total: usize,
    /// `phosphor diff BASE NEW --json`'s rows, in its order (the largest change of total time
    /// first); empty until `ready`.
    pub rows: Vec<DiffRowJson>,
    /// For each row, how `/api/kind` names its slices on either side; `null` for a row of events
    /// without durations (instants, counters, logs).
    pub kinds: Vec<Option<KindPath>>,
}

/// One side of a comparison.
#[derive(Clone, Debug, Serialize)]
pub struct CompareSide {
    /// Its number among the traces (`/api/traces`).
    pub trace: usize,
    /// Its file's name.
    pub file: Option<String>,
    /// Events read from it (once `ready`).
    pub events: Option<u64>,
}

/// A row's path as `/api/kind` takes it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindPath {
    /// `scope`, `lock_wait`, `lock_held` or `async`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Its names, outermost first (an async slice's name alone).
    pub path: Vec<String>,
}

impl Traces {
    /// Compares trace `base` with trace `new`: `/api/compare` gives their diff, computed from now
    /// on a thread of its own. Once per server; an error if either is not among the traces.
    pub fn compare(self: &Arc<Self>, base: usize, new: usize) -> Result<(), String> {
        let n = self.len();
        if base >= n || new >= n || base == new {
            return Err(format!("cannot compare trace {base} with trace {new}: there are {n} traces"));
        }
        let c = Comparison { base, new, done: OnceLock::new() };
        self.comparison.set(c).map_err(|_| "two traces are compared already".to_owned())?;
        let traces = self.clone();
        std::thread::Builder::new()
            .name("phosphor-diff".into())
            .spawn(move || traces.compute_comparison())
            .map_err(|e| format!("no thread to compare the traces: {e}"))?;
        Ok(())
    }

    /// Computes the comparison. Reads both files: called on a thread of its own.
    fn compute_comparison(&self) {
        let Some(c) = self.comparison.get() else { return };
        c.done.get_or_init(|| {
            let (Some(base), Some(new)) = (self.slot(c.base), self.slot(c.new)) else {
                return Err("the traces are gone".to_owned());
            };
            compared(&base.path, &new.path)
        });
    }
}

/// The diff of the files at `base` and `new`, each read on a thread of its own.
fn compared(base: &Path, new: &Path) -> Result<Compared, String> {
    let (base, new) = std::thread::scope(|s| {
        let other = s.spawn(|| side(base));
        (other.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), side(new))
    });
    let (base, new) = (base?, new?);
    let diff = TraceDiff::new(&base, &new, &DiffOptions::default());
    let kinds = diff.rows.iter().map(|r| kind_path(r.kind, &r.names)).collect();
    Ok(Compared { rows: diff.json_rows(), kinds, events: diff.events })
}

/// One file's side of the diff, as `phosphor diff` reads it; an error names the file and, for
/// damage, the byte offset.
fn side(path: &Path) -> Result<DiffSide, String> {
    let file = File::open(path).map_err(|e| crate::Error::io(path, e).to_string())?;
    let trace = |source| crate::Error::Trace { path: path.to_owned(), source }.to_string();
    let reader = Reader::new(BufReader::with_capacity(1 << 16, file)).map_err(trace)?.read_ahead();
    DiffSide::from_reader(reader).map_err(|e| format!("{} (cannot be compared)", trace(e)))
}

/// How `/api/kind` asks for a row's slices: a scope's or a lock's path, an async slice's name;
/// `None` for rows of events without durations.
fn kind_path(kind: DiffKind, names: &[String]) -> Option<KindPath> {
    let kind = match kind {
        DiffKind::Async => "async",
        DiffKind::Event(EventType::Scope) => "scope",
        DiffKind::Event(EventType::LockWait) => "lock_wait",
        DiffKind::Event(EventType::LockHeld) => "lock_held",
        _ => return None,
    };
    Some(KindPath { kind, path: names.to_vec() })
}

/// `GET /api/compare`: the comparison's state and, once computed, its rows. Answers at once: the
/// page asks again while `computing`. 500 (with the file and the byte offset) if a trace could
/// not be read to its end.
pub(crate) async fn compare(State(traces): State<Shared>) -> Result<Json<CompareAnswer>, Failure> {
    let mut answer = CompareAnswer {
        state: "off",
        base: None,
        new: None,
        significance: SIGNIFICANCE,
        rows_total: 0,
        rows: Vec::new(),
        kinds: Vec::new(),
    };
    let Some(c) = traces.comparison.get() else { return Ok(Json(answer)) };
    let side = |n: usize, events: Option<u64>| CompareSide {
        trace: n,
        file: traces.slot(n).and_then(|s| s.path.file_name()).map(|f| f.to_string_lossy().into_owned()),
        events,
    };
    answer.base = Some(side(c.base, None));
    answer.new = Some(side(c.new, None));
    answer.state = "computing";
    let Some(done) = c.done.get() else { return Ok(Json(answer)) };
    let done = done.as_ref().map_err(|why| Failure(StatusCode::INTERNAL_SERVER_ERROR, why.clone()))?;
    answer.state = "ready";
    answer.base = Some(side(c.base, Some(done.events[0])));
    answer.new = Some(side(c.new, Some(done.events[1])));
    answer.rows_total = done.rows.len();
    answer.rows = done.rows.clone();
    answer.kinds = done.kinds.clone();
    Ok(Json(answer))
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
