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

use phosphor_format::Phase;
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

/// The slices entered since the last [`Model::drain`], with their thread, path and kind.
#[derive(Debug, Default)]
struct Batch {
    out: Vec<(u32, PathId, SliceKind, Rec)>,
}

impl Sink<Rec> for Batch {
    fn enter(&mut self, slice: &ModelSlice, rec: Rec) {
        if rec.keep {
            self.out.push((slice.tid, slice.path, slice.kind, rec));
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
    nesting: Nesting<Rec>,
    labels: Vec<PathLabel>,
    label_ids: HashMap<PathLabel, Label>,
    batch: Batch,
}

impl Model {
    /// The model of a file recorded on `timeline`'s clock, with the pending limit of `phosphor
    /// stats` (so that the same slices are resolved early, under the same paths).
    pub(crate) fn new(timeline: Timeline) -> Model {
        let nesting = Nesting::new(phosphor_model::nesting::DEFAULT_PENDING_LIMIT).max_depth(usize::MAX);
        Model {
            timeline,
            nesting,
            labels: Vec::new(),
            label_ids: HashMap::default(),
            batch: Batch::default(),
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
            self.nesting.begin_with(tid, label, ts, rec);
        } else {
            let end = self.timeline.time(slice.end).max(ts);
            self.nesting.complete_with(tid, label, ts, end - ts, rec, &mut self.batch);
        }
    }

    /// An end named `name` at raw `ticks`: it closes the innermost open begin of `tid`, if any
    /// (returns whether one was open).
    pub(crate) fn end(&mut self, tid: u32, name: u32, ticks: u64) -> bool {
        let label = self.label(name, slice_flags::SCOPE);
        let ts = self.timeline.time(ticks);
        self.nesting.end_with(tid, label, ts, &mut self.batch, |rec| {
            rec.slice.end = ticks.max(rec.slice.start);
            if rec.slice.name != name {
                rec.slice.flags |= slice_flags::WRONG_END;
            }
        })
    }

    /// A point (an instant, log, counter or data sample) at raw `ticks`: nested as the statistics
    /// nest it, though the index keeps it apart.
    pub(crate) fn mark(&mut self, tid: u32, ticks: u64) {
        let ts = self.timeline.time(ticks);
        self.nesting.mark_with(tid, 0, ts, Rec::default(), &mut self.batch);
    }

    /// Ends the stream: begins still open become slices flagged [`slice_flags::UNCLOSED`] (their
    /// end is for the caller to set).
    pub(crate) fn finish(&mut self) {
        self.nesting.finish(&mut self.batch);
    }

    /// Hands over the slices whose paths are final: thread, level (the path's depth less one),
    /// path, and the slice.
    pub(crate) fn drain<E>(
        &mut self,
        mut f: impl FnMut(u32, u32, PathId, Slice) -> Result<(), E>,
    ) -> Result<(), E> {
        let paths = self.nesting.paths();
        for (tid, path, kind, rec) in self.batch.out.drain(..) {
            let mut slice = rec.slice;
            if kind == SliceKind::Unclosed {
                slice.flags |= slice_flags::UNCLOSED;
            }
            f(tid, paths.depth(path).saturating_sub(1), path, slice)?;
        }
        Ok(())
    }

    /// The paths, as (parent, last label), by number (0 is the empty path), once the stream has
    /// ended.
    pub(crate) fn paths(&self) -> impl Iterator<Item = (PathId, PathLabel)> + '_ {
        let paths: &Paths = self.nesting.paths();
        (0..paths.len() as PathId).map(move |p| {
            let label = self.labels.get(paths.label(p) as usize).copied().unwrap_or((u32::MAX, 0));
            (paths.parent(p), label)
        })
    }
}
