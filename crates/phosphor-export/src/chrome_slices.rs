//! The thread slices of a Chrome JSON file, as [`Ordered`](phosphor_model::ordered::Ordered)
//! walks them (`chrome.rs`, "Slices, per client"): each held as its text but its time, encoded
//! as it is read ([`SliceWriter::encode`]), then written in the walk's order once every slice of
//! the subtree has its end.

use std::io::{self, Write};

use phosphor_format::file::{Event, Value};
use phosphor_format::Phase;
use phosphor_model::nesting::{Slice, SliceKind};
use phosphor_model::ordered::{HeldEvent, SliceWriter};

use super::{write_event, write_head, write_tail, write_time, Ids, Place, Placed, Quoted};
use crate::chrome_time::Points;

/// A thread slice of the walk, written as far as its time (`text[at..split]`) and from there on
/// (`text[split..till]`), with its place: a slice's end is known when the walk leaves it.
pub(super) struct Entry {
    at: usize,
    split: usize,
    till: usize,
    place: Place,
}

/// The walk's slices since the last time no scope was open, held until every one's end is
/// known, then written in the walk's order (a slice before the slices nested in it): at most
/// the subtree [`Ordered`] hands over at once.
#[derive(Default)]
pub(super) struct Walk {
    text: Vec<u8>,
    entries: Vec<Entry>,
    /// The entries of the scopes entered and not yet left.
    open: Vec<usize>,
    points: Points,
}

/// The [`SliceWriter`] of a file's thread slices, and the writer of its other events.
pub(super) struct Slices<'a, W> {
    pub(super) out: &'a mut W,
    pub(super) at: &'a Placed<'a>,
    pub(super) ids: &'a mut Ids,
    pub(super) scratch: &'a mut String,
    pub(super) quoted: &'a mut Quoted,
    pub(super) walk: &'a mut Walk,
    /// The first write error: nothing more is written after it.
    pub(super) error: Option<io::Error>,
}

impl<W: Write> Slices<'_, W> {
    /// An event that is not a thread slice, written as read.
    pub(super) fn stream(&mut self, e: &Event<'_>) {
        if self.error.is_none() {
            let r = write_event(self.out, self.at, self.ids, e, self.scratch, self.quoted, Place::Stream);
            if let Err(err) = r {
                self.error = Some(err);
            }
        }
    }

    /// Holds `e`, a slice of the walk, at `place` (an end to be filled in when it is left).
    fn hold(&mut self, e: &Event<'_>, place: Place) {
        let w = &mut *self.walk;
        let at = w.text.len();
        // Writing to a `Vec` cannot fail.
        let _ = write_head(&mut w.text, e, self.scratch, self.quoted);
        if let Place::Stream = place {
            // A mark: its time is its own.
            let _ = write_time(&mut w.text, self.at, Some(e), place);
        }
        let split = w.text.len();
        let _ = write_tail(&mut w.text, self.ids, e, self.quoted);
        w.entries.push(Entry { at, split, till: w.text.len(), place });
    }

    /// Writes the entries held, once no scope is open.
    fn flush(&mut self) {
        let w = &mut *self.walk;
        if !w.open.is_empty() {
            return;
        }
        if self.error.is_none() {
            for entry in &w.entries {
                let text = &w.text;
                let r = (|| {
                    self.out.write_all(&text[entry.at..entry.split])?;
                    write_time(self.out, self.at, None, entry.place)?;
                    self.out.write_all(&text[entry.split..entry.till])
                })();
                if let Err(err) = r {
                    self.error = Some(err);
                    break;
                }
            }
        }
        w.entries.clear();
        w.text.clear();
    }

    /// Writes what is held whatever is open (at the end of a file: scopes never left are
    /// written as begins never ended).
    pub(super) fn flush_all(&mut self) {
        for i in std::mem::take(&mut self.walk.open) {
            if let Place::Complete { start, .. } = self.walk.entries[i].place {
                self.walk.entries[i].place = Place::Open { start };
            }
        }
        self.flush();
    }
}

/// Nanoseconds on the shared timeline (`i64`) as a slice's time for [`Ordered`]: an order-keeping
/// map onto `u64` (the sign bit flipped), and back.
fn slice_time(ns: i64) -> u64 {
    (ns as u64) ^ (1 << 63)
}

fn slice_ns(time: u64) -> i64 {
    (time ^ (1 << 63)) as i64
}

/// The most bytes a held slice's text may take: a slice whose name, category or arguments are
/// longer is held as its records, which the file had to store anyway (a name of 60 MiB is not
/// copied per slice held).
const MAX_ENCODED: usize = 512;

/// Whether a string `e` writes (its name, category, argument names and values, a log's format
/// and parameters) is too long for it to be held as text: checked before writing it.
fn long_strings(e: &Event<'_>) -> bool {
    const LONG: usize = MAX_ENCODED / 4;
    let cs = &e.callsite;
    let long = |v: &Value<'_>| matches!(v, Value::Str(s) if s.len() > LONG);
    cs.name.len() > LONG
        || cs.category.len() > LONG
        || cs.arg_names.iter().any(|n| n.len() > LONG)
        || e.args.iter().flatten().any(|(_, v)| long(v))
        || (cs.level.is_some() && e.params.iter().any(|v| long(&v)))
}

impl<W: Write> SliceWriter for Slices<'_, W> {
    /// The nanoseconds written (three decimals of a microsecond), so that slices are nested on
    /// what a client reads.
    fn time(&self, ticks: u64) -> u64 {
        slice_time(self.at.ns(ticks))
    }

    /// The slice's text but its time, as [`Slices::hold`] writes it (a mark's own time
    /// included), after the length of the part before the time (4 bytes). An end's event adds
    /// nothing to its `X`: it is held as nothing.
    fn encode(&mut self, e: &Event<'_>, out: &mut Vec<u8>) -> bool {
        if e.callsite.phase == Phase::End {
            return true;
        }
        if long_strings(e) {
            return false;
        }
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        // Writing to a `Vec` cannot fail.
        let _ = write_head(out, e, self.scratch, self.quoted);
        if matches!(e.callsite.phase, Phase::Instant | Phase::Log) {
            let _ = write_time(out, self.at, Some(e), Place::Stream);
        }
        let split = (out.len() - at - 4) as u32;
        out[at..at + 4].copy_from_slice(&split.to_le_bytes());
        let _ = write_tail(out, self.ids, e, self.quoted);
        out.len() - at <= MAX_ENCODED
    }

    fn begin(&mut self, s: &Slice, e: HeldEvent<'_>) {
        let place = match s.kind {
            SliceKind::Mark => Place::Stream,
            SliceKind::Scope => {
                let start = self.walk.points.at(s.tid, slice_ns(s.start));
                self.walk.open.push(self.walk.entries.len());
                // The end is filled in when the walk leaves the slice.
                Place::Complete { start, end: start }
            }
            SliceKind::Unclosed => Place::Open { start: self.walk.points.at(s.tid, slice_ns(s.start)) },
        };
        match e {
            HeldEvent::Encoded(text) => {
                let (split, text) = text.split_at(4);
                let split = u32::from_le_bytes([split[0], split[1], split[2], split[3]]) as usize;
                let w = &mut *self.walk;
                let at = w.text.len();
                w.text.extend_from_slice(text);
                w.entries.push(Entry { at, split: at + split, till: w.text.len(), place });
            }
            HeldEvent::Event(e) => self.hold(e, place),
        }
        self.flush();
    }

    fn end(&mut self, s: &Slice, _end: Option<HeldEvent<'_>>) {
        let end = self.walk.points.at(s.tid, slice_ns(s.start.saturating_add(s.dur)));
        if let Some(i) = self.walk.open.pop() {
            if let Place::Complete { start, .. } = self.walk.entries[i].place {
                self.walk.entries[i].place = Place::Complete { start, end };
            }
        }
        self.flush();
    }
}
