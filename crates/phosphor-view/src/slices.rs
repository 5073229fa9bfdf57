//! A trace's thread slices as the model nests them: the index's slices, levels and scope paths
//! come from [`phosphor_model::nesting`], the tree `phosphor stats` counts, so that the viewer
//! draws and measures what the statistics say.
//!
//! Events are nested on [`Timeline`] times (nanoseconds rounded per timestamp, as the outputs
//! write them), with the model's one rule for an end whose begin has another name: it closes the
//! innermost open begin (the slice is flagged [`slice_flags::WRONG_END`]). The index keeps each
//! slice's raw clock ticks; a slice's level is its path's depth, and its path is stored beside it.
//! Paths are not cut at a depth here: the statistics table cuts them as `phosphor stats` does
//! (`stats.rs`).
//!
//! The engine runs on a second core once the trace is long enough
//! ([`phosphor_model::background`]): the slices it resolves come back in batches over a channel,
//! in the order it resolved them, and [`Model::drain`] hands over those that have arrived.

use std::sync::mpsc::{channel, Receiver, Sender};

use phosphor_format::Phase;
use phosphor_model::background::{Consumer, Feed};
use phosphor_model::nesting::{Label, Nesting, PathId, Paths, Sink, Slice as ModelSlice, SliceKind};
use phosphor_model::timeline::Timeline;
use rustc_hash::FxHashMap as HashMap;

use crate::records::{slice_flags, Slice};

/// What a slice of the index is made of, carried through the nesting as its payload.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rec {
    pub(crate) slice: Slice,
    /// False for the marks (instants, logs, counters), nested as the statistics nest them, but
    /// kept by the index as points.
    keep: bool,
}

/// A resolved slice: its thread, level, path and kind.
type Resolved = (u32, u32, PathId, SliceKind, Rec);

/// Resolved slices sent back at a time from the engine's thread.
const SEND_AT: usize = 4096;

/// The slices entered and not yet handed over, with their thread, level, path and kind; sent
/// to the model's thread [`SEND_AT`] at a time.
#[derive(Debug)]
struct Batch {
    out: Vec<Resolved>,
    to_model: Sender<Vec<Resolved>>,
}

impl Sink<Rec> for Batch {
    fn enter(&mut self, slice: &ModelSlice, rec: Rec) {
        if rec.keep {
            self.out.push((slice.tid, slice.depth.saturating_sub(1), slice.path, slice.kind, rec));
            if self.out.len() >= SEND_AT {
                // The model's end is gone only if it is being dropped: nothing to hand over then.
                let _ = self.to_model.send(std::mem::take(&mut self.out));
            }
        }
    }
}

impl Consumer<Rec> for Batch {
    /// The viewer sends nothing but slices.
    type Message = std::convert::Infallible;

    fn message(&mut self, _: &Nesting<Rec>, message: Self::Message) {
        match message {}
    }

    /// An end's record (its raw time and name) into its begin's: the end time, and the flag of
    /// an end of another name.
    fn close(begin: &mut Rec, end: Rec) {
        begin.slice.end = end.slice.end.max(begin.slice.start);
        if begin.slice.name != end.slice.name {
            begin.slice.flags |= slice_flags::WRONG_END;
        }
    }
}

/// A path's last label: a name's number in the index's names, and its statistics type
/// ([`slice_flags::SCOPE`] for begin/end pairs and complete events alike, or a lock's kind).
pub(crate) type PathLabel = (u32, u8);

/// Each thread's slices, nested by the model (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Model {
    timeline: Timeline,
    engine: Feed<Rec, Batch>,
    /// The batches of resolved slices sent back by the engine.
    resolved: Receiver<Vec<Resolved>>,
    labels: Vec<PathLabel>,
    label_ids: HashMap<PathLabel, Label>,
    /// Begins open per thread: whether an end closes one is known here, without asking the
    /// engine (the model's rule: an end closes the innermost open begin, if there is one).
    open: HashMap<u32, u32>,
}

impl Model {
    /// The model of a file recorded on `timeline`'s clock, with the pending limit of `phosphor
    /// stats` (so that the same slices are resolved early, under the same paths).
    pub(crate) fn new(timeline: Timeline) -> Model {
        let nesting = Nesting::new(phosphor_model::nesting::DEFAULT_PENDING_LIMIT).max_depth(usize::MAX);
        let (to_model, resolved) = channel();
        Model {
            timeline,
            engine: Feed::new(nesting, Batch { out: Vec::new(), to_model }),
            resolved,
            labels: Vec::new(),
            label_ids: HashMap::default(),
            open: HashMap::default(),
        }
    }

    fn label(&mut self, name: u32, flags: u8) -> Label {
        let ty = match flags & slice_flags::KIND_MASK {
            slice_flags::COMPLETE => slice_flags::SCOPE,
            k => k,
        };
        let next = self.labels.len() as Label;
        let l = *self.label_ids.entry((name, ty)).or_insert(next);
        if l == next {
            self.labels.push((name, ty));
        }
        l
    }

    /// Takes a thread slice: a begin, a complete or lock event (`slice`, in raw ticks, its end
    /// set). An end goes to [`Model::end`].
    pub(crate) fn slice(&mut self, tid: u32, phase: Phase, slice: Slice) {
        let label = self.label(slice.name, slice.flags);
        let ts = self.timeline.time(slice.start);
        let rec = Rec { slice, keep: true };
        if phase == Phase::Begin {
            *self.open.entry(tid).or_default() += 1;
            self.engine.begin_with(tid, label, ts, rec);
        } else {
            let end = self.timeline.time(slice.end).max(ts);
            self.engine.complete_with(tid, label, ts, end - ts, rec);
        }
    }

    /// An end named `name` at raw `ticks`: it closes the innermost open begin of `tid`, if any
    /// (returns whether one was open).
    pub(crate) fn end(&mut self, tid: u32, name: u32, ticks: u64) -> bool {
        let Some(open) = self.open.get_mut(&tid).filter(|n| **n > 0) else { return false };
        *open -= 1;
        let label = self.label(name, slice_flags::SCOPE);
        let ts = self.timeline.time(ticks);
        // The begin's record takes the end's time, and is flagged if the names differ.
        let end = Rec { slice: Slice { end: ticks, name, ..Slice::default() }, keep: false };
        self.engine.end_with(tid, label, ts, end);
        true
    }

    /// A point (an instant, log, counter or data sample) at raw `ticks`: nested as the statistics
    /// nest it, though the index keeps it apart.
    pub(crate) fn mark(&mut self, tid: u32, ticks: u64) {
        let ts = self.timeline.time(ticks);
        self.engine.mark_with(tid, 0, ts, Rec::default());
    }

    /// Ends the stream: begins still open become slices flagged [`slice_flags::UNCLOSED`] (their
    /// end is for the caller to set).
    pub(crate) fn finish(&mut self) {
        let (nesting, batch) = self.engine.finish();
        nesting.finish(batch);
    }

    /// Hands over the slices whose paths are final: thread, level (the path's depth less one),
    /// path, and the slice.
    pub(crate) fn drain<E>(
        &mut self,
        mut f: impl FnMut(u32, u32, PathId, Slice) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut hand = |(tid, level, path, kind, rec): Resolved| {
            let mut slice = rec.slice;
            if kind == SliceKind::Unclosed {
                slice.flags |= slice_flags::UNCLOSED;
            }
            f(tid, level, path, slice)
        };
        // Those sent back first, then those still in the sink's hands (on this thread).
        while let Ok(batch) = self.resolved.try_recv() {
            batch.into_iter().try_for_each(&mut hand)?;
        }
        if let Some((_, batch)) = self.engine.parts() {
            batch.out.drain(..).try_for_each(&mut hand)?;
        }
        Ok(())
    }

    /// The paths, as (parent, last label), by number (0 is the empty path), once the stream has
    /// ended.
    pub(crate) fn paths(&self) -> impl Iterator<Item = (PathId, PathLabel)> + '_ {
        let paths: &Paths = self.engine.parts_ref().expect("the stream has ended").0.paths();
        (0..paths.len() as PathId).map(move |p| {
            let label = self.labels.get(paths.label(p) as usize).copied().unwrap_or((u32::MAX, 0));
            (paths.parent(p), label)
        })
    }
}
