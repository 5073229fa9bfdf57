//! What the streaming exporters (Chrome JSON, folded stacks, flame graphs) share: the reading
//! loop, and the error and summary, since they read a trace file the same way and stop the same
//! ways.

use std::io::{self, Read};

use phosphor_format::file::{self, Event, Extents, Reader};

/// What an exporter read and wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportSummary {
    /// Chunks read.
    pub chunks: u64,
    /// Events exported (metadata events not counted).
    pub events: u64,
    /// Threads that had events (saturates; 32 bits, as thread ids, keep [`Error`] small).
    pub threads: u32,
    /// Whether the trailer was read: the input was whole.
    pub complete: bool,
    /// Slices nested deeper than the depth cap, folded under a `[deeper than N]` frame (folded
    /// stacks and flame graphs; 0 for the other formats). Saturates; 32 bits keep
    /// [`Error`] small.
    pub truncated: u32,
    /// Distinct names longer than [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES), shown cut (their first
    /// bytes, then `…`) in folded stacks and flame graphs; 0 for the other formats. Saturates.
    pub names_cut: u32,
    /// Perfetto: some async begins and ends were laid out in one pass, in file order, although an
    /// [`AsyncPlan`](crate::perfetto::AsyncPlan) was given (it stopped at
    /// [`MAX_PLANNED_ASYNC_EVENTS`](crate::perfetto::MAX_PLANNED_ASYNC_EVENTS), or the file held
    /// more than when it was planned), so they may take more tracks; the trace's summary instant
    /// counts them (`async_events_unplanned`). A flag, not a count: it fits [`Error`]'s padding.
    pub async_unplanned: bool,
}

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The trace file could not be read to its end. Everything before `offset` was exported (a
    /// JSON document is closed, so it still parses).
    #[error("the trace file could not be read past byte {offset} ({} events exported)", exported.events)]
    Read {
        /// Byte offset of the problem in the trace file (as the format error says).
        offset: u64,
        /// What was exported before the error.
        exported: ExportSummary,
        /// The format error.
        #[source]
        source: file::Error,
    },
    /// Writing the output failed.
    #[error("writing the export failed")]
    Write(#[source] io::Error),
    /// A flame graph had nothing to draw: the trace, read whole, has no slice with a duration (a
    /// closed scope, a complete event, or a begin with its end). Nothing was written.
    #[error(
        "nothing to draw: none of its {} events is a closed slice (a scope, a complete event, or a \
         begin with its end), whose self time a flame graph shows",
        exported.events
    )]
    NothingToDraw {
        /// What was read.
        exported: ExportSummary,
    },
}

impl Error {
    /// The byte offset in the trace file, for a read error.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Read { offset, .. } => Some(*offset),
            Error::Write(_) | Error::NothingToDraw { .. } => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Write(e)
    }
}

/// Reads every event of the rest of the file in order, calling `f` on each and counting chunks and
/// events in `summary`. Returns the read error that stopped it (`Ok(Some(_))`), or `f`'s error.
pub(crate) fn read_events<R: Read, E>(
    reader: &mut Reader<R>,
    summary: &mut ExportSummary,
    mut f: impl FnMut(&Event<'_>) -> Result<(), E>,
) -> Result<Option<file::Error>, E> {
    read_chunks(reader, |item| {
        match item {
            Item::Chunk(_) => summary.chunks += 1,
            Item::Event(e) => {
                f(e)?;
                summary.events += 1;
            }
        }
        Ok(())
    })
}

/// What [`read_chunks`] hands its callback: a chunk's extents, then each of its events.
pub(crate) enum Item<'a, 'r> {
    Chunk(&'a Extents),
    Event(&'a Event<'r>),
}

/// Reads the rest of the file in order, calling `f` with each chunk's extents and then with each
/// of its events. Returns the read error that stopped it (`Ok(Some(_))`), or `f`'s error.
pub(crate) fn read_chunks<R: Read, E>(
    reader: &mut Reader<R>,
    mut f: impl FnMut(Item<'_, '_>) -> Result<(), E>,
) -> Result<Option<file::Error>, E> {
    loop {
        let chunk = match reader.next_chunk() {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return Ok(None),
            Err(e) => return Ok(Some(e)),
        };
        f(Item::Chunk(&chunk.extents))?;
        for event in chunk.events() {
            // By reference: moving an `Event` out of the `Result` copies its 288 bytes.
            match &event {
                Ok(e) => f(Item::Event(e))?,
                Err(_) => return Ok(event.err()),
            }
        }
    }
}
