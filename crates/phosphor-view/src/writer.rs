//! Writing the index file (its layout: `file.rs`): the record sections compressed block by
//! block into files of their own (`blocks.rs`), the summaries and paths likewise spooled, then
//! everything appended after the header with the tables, the block tables and the footer.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::blocks::{self, BlockWriter};
use crate::file::{
    Meta, COUNTER_BYTES, FOOTER_MAGIC, HEADER_BYTES, MAGIC, NO_NAME, PATH_BYTES, SLICE_RECORD, THREAD_BYTES,
    VERSION,
};
use crate::flows::FlowMember;
use crate::records::{Sample, Slice, POINT_BYTES, SAMPLE_BYTES, SLICE_BYTES};
use crate::summary::{SampleSummary, SliceBlock, Summer};
use crate::Error;

/// A thread's entry while the index is built.
#[derive(Debug)]
pub(crate) struct ThreadEntry {
    pub(crate) tid: u32,
    pub(crate) name: Option<u32>,
    /// Its levels: where they start in the list of every thread's (by level: first slice,
    /// slices), and how many.
    first_level: usize,
    n_levels: u32,
    /// First point, points.
    points: (u64, u64),
}

impl ThreadEntry {
    pub(crate) fn new(tid: u32) -> ThreadEntry {
        ThreadEntry { tid, name: None, first_level: 0, n_levels: 0, points: (0, 0) }
    }

    /// Slice number `at` is the next of level `depth` (levels come in order), and this thread's
    /// levels are the last of `levels`.
    pub(crate) fn add_slice(&mut self, levels: &mut Vec<(u64, u64)>, depth: u32, at: u64) {
        if self.n_levels == 0 {
            self.first_level = levels.len();
        }
        while self.n_levels <= depth {
            levels.push((at, 0));
            self.n_levels += 1;
        }
        levels[self.first_level + depth as usize].1 += 1;
    }

    /// Its levels in `levels`.
    fn levels<'a>(&self, levels: &'a [(u64, u64)]) -> &'a [(u64, u64)] {
        levels.get(self.first_level..self.first_level + self.n_levels as usize).unwrap_or(&[])
    }

    /// Point number `at` is the thread's next.
    pub(crate) fn add_point(&mut self, at: u64) {
        if self.points.1 == 0 {
            self.points.0 = at;
        }
        self.points.1 += 1;
    }
}

/// Writes an index file: the records in their sections' order, then the tables.
#[derive(Debug)]
pub(crate) struct IndexWriter {
    out: BufWriter<File>,
    path: PathBuf,
    /// Bytes written.
    at: u64,
    /// (offset, length) of each section, as they are finished.
    sections: Vec<(u64, u64)>,
    /// The record sections, compressed block by block into files of their own until the end
    /// (`blocks.rs`): slices (each with its scope path, `build::NO_PATH` for an async slice),
    /// points, samples, flow members and (event, member) pairs, as they come in their sections'
    /// order. (Taken at the end.)
    records: Option<Records>,
    /// The summaries, in files of their own until the end (`summary.rs`).
    slice_sums: Option<Summer<BufWriter<File>, SliceBlock>>,
    sample_sums: Option<Summer<BufWriter<File>, SampleSummary>>,
    /// The scope paths.
    paths: Option<BufWriter<File>>,
}

/// The record sections being written.
type Spool = BlockWriter<BufWriter<File>>;
#[derive(Debug)]
struct Records {
    slices: Spool,
    points: Spool,
    samples: Spool,
    flows: Spool,
    flow_events: Spool,
}

/// The record sections' block tables, and the flows' two sections (offset, length).
type RecordSections = (Vec<blocks::BlockTable>, Vec<(u64, u64)>);

impl IndexWriter {
    /// Starts an index of a source of `source_len` bytes modified at `mtime_ns`, written to
    /// `file` (at `path`, for errors), its record sections in blocks of `block_records` records
    /// (0: [`blocks::PER_BLOCK`]).
    pub(crate) fn new(
        file: File,
        path: &Path,
        source_len: u64,
        mtime_ns: u64,
        block_records: u32,
    ) -> Result<IndexWriter, Error> {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let spool = || -> Result<BufWriter<File>, Error> {
            let f = tempfile::tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
            Ok(BufWriter::with_capacity(1 << 16, f))
        };
        let per = if block_records == 0 { blocks::PER_BLOCK } else { block_records };
        let blocks = |layout| -> Result<Spool, Error> {
            BlockWriter::new(spool()?, layout, per).map_err(|e| Error::io(path, e))
        };
        let records = Records {
            slices: blocks(&blocks::SLICES)?,
            points: blocks(&blocks::POINTS)?,
            samples: blocks(&blocks::SAMPLES)?,
            flows: blocks(&blocks::FLOWS)?,
            flow_events: blocks(&blocks::FLOW_EVENTS)?,
        };
        let mut w = IndexWriter {
            out: BufWriter::with_capacity(1 << 16, file),
            path: path.to_owned(),
            at: 0,
            sections: Vec::new(),
            records: Some(records),
            slice_sums: Some(Summer::new(spool()?)),
            sample_sums: Some(Summer::new(spool()?)),
            paths: Some(spool()?),
        };
        let mut header = [0u8; HEADER_BYTES as usize];
        header[0..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        header[16..24].copy_from_slice(&source_len.to_le_bytes());
        header[24..32].copy_from_slice(&mtime_ns.to_le_bytes());
        w.write(&header)?;
        Ok(w)
    }

    fn write(&mut self, b: &[u8]) -> Result<(), Error> {
        self.out.write_all(b).map_err(|e| Error::io(&self.path, e))?;
        self.at += b.len() as u64;
        Ok(())
    }

    /// Appends record `b` to the section `which` picks, and returns its number there.
    fn record(&mut self, which: impl FnOnce(&mut Records) -> &mut Spool, b: &[u8]) -> Result<u64, Error> {
        let Some(records) = &mut self.records else { return Ok(0) };
        which(records).push(b).map_err(|e| Error::io(&self.path, e))
    }

    /// Appends slice `s`, on scope path `path`, and returns its number.
    pub(crate) fn slice(&mut self, s: &Slice, path: u32) -> Result<u64, Error> {
        if let Some(sums) = &mut self.slice_sums {
            sums.add(s).map_err(|e| Error::io(&self.path, e))?;
        }
        let mut b = [0u8; SLICE_RECORD];
        b[..SLICE_BYTES].copy_from_slice(&s.encode());
        b[SLICE_BYTES..].copy_from_slice(&path.to_le_bytes());
        self.record(|r| &mut r.slices, &b)
    }

    pub(crate) fn point(&mut self, b: &[u8; POINT_BYTES]) -> Result<u64, Error> {
        self.record(|r| &mut r.points, b)
    }

    pub(crate) fn sample(&mut self, b: &[u8; SAMPLE_BYTES]) -> Result<u64, Error> {
        if let Some(sums) = &mut self.sample_sums {
            sums.add(&Sample::decode(b)).map_err(|e| Error::io(&self.path, e))?;
        }
        self.record(|r| &mut r.samples, b)
    }

    /// Appends a flow member (they come by name, id and time), and returns its number.
    pub(crate) fn flow(&mut self, m: &FlowMember) -> Result<u64, Error> {
        self.record(|r| &mut r.flows, &m.encode())
    }

    /// Appends that flow member `member` was recorded at `event` (they come by event).
    pub(crate) fn flow_event(&mut self, event: u64, member: u64) -> Result<(), Error> {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&event.to_le_bytes());
        b[8..].copy_from_slice(&member.to_le_bytes());
        self.record(|r| &mut r.flow_events, &b).map(|_| ())
    }

    /// Writes the scope paths, by number: each one's parent and last label (name and type).
    pub(crate) fn paths(
        &mut self,
        paths: impl Iterator<Item = (u32, crate::slices::PathLabel)>,
    ) -> Result<(), Error> {
        let Some(out) = &mut self.paths else { return Ok(()) };
        for (parent, (name, ty)) in paths {
            let mut b = [0u8; PATH_BYTES];
            b[0..4].copy_from_slice(&parent.to_le_bytes());
            b[4..8].copy_from_slice(&name.to_le_bytes());
            b[8] = ty;
            out.write_all(&b).map_err(|e| Error::io(&self.path, e))?;
        }
        Ok(())
    }

    /// Appends a spooled file's bytes as a section.
    fn copy_section(&mut self, spooled: BufWriter<File>) -> Result<(), Error> {
        let mut f = spooled.into_inner().map_err(|e| Error::io(&self.path, e.into_error()))?;
        f.seek(SeekFrom::Start(0)).map_err(|e| Error::io(&self.path, e))?;
        let start = self.at;
        let n = std::io::copy(&mut f, &mut self.out).map_err(|e| Error::io(&self.path, e))?;
        self.at += n;
        self.sections.push((start, n));
        Ok(())
    }

    /// Writes the tables and the footer, and marks the index complete.
    pub(crate) fn finish(
        mut self,
        names: &crate::build::Names,
        (threads, thread_levels): (&[ThreadEntry], &[(u64, u64)]),
        (asyncs, async_levels): (&[ThreadEntry], &[(u64, u64)]),
        counters: Vec<(u32, (u64, u64))>,
        chunks: &[u64],
        meta: &Meta,
    ) -> Result<(), Error> {
        // The record sections first, their tables kept for the end.
        let (tables, flow_sections) = self.record_sections()?;
        self.section(|w| w.names(names))?;
        self.section(|w| w.entries(threads, 0))?;
        // The threads' levels, then the async tracks' (lanes), each track's in a row.
        self.section(|w| {
            let all = threads
                .iter()
                .map(|t| t.levels(thread_levels))
                .chain(asyncs.iter().map(|t| t.levels(async_levels)));
            for &(first, count) in all.flatten() {
                w.write(&first.to_le_bytes())?;
                w.write(&count.to_le_bytes())?;
            }
            Ok(())
        })?;
        self.section(|w| {
            for (name, (first, count)) in counters {
                let mut b = [0u8; COUNTER_BYTES];
                b[0..4].copy_from_slice(&name.to_le_bytes());
                b[8..16].copy_from_slice(&first.to_le_bytes());
                b[16..24].copy_from_slice(&count.to_le_bytes());
                w.write(&b)?;
            }
            Ok(())
        })?;
        self.section(|w| {
            let json = serde_json::to_vec(meta).map_err(|e| Error::io(&w.path, e.into()))?;
            w.write(&json)
        })?;
        self.section(|w| w.entries(asyncs, threads.iter().map(|t| t.n_levels).sum::<u32>()))?;
        self.section(|w| chunks.iter().try_for_each(|c| w.write(&c.to_le_bytes())))?;
        if let Some(sums) = self.slice_sums.take() {
            self.copy_section(sums.finish::<Slice>().map_err(|e| Error::io(&self.path, e))?)?;
        }
        if let Some(sums) = self.sample_sums.take() {
            self.copy_section(sums.finish::<Sample>().map_err(|e| Error::io(&self.path, e))?)?;
        }
        self.sections.extend(flow_sections);
        if let Some(paths) = self.paths.take() {
            self.copy_section(paths)?;
        }
        for table in tables {
            self.section(|w| w.write(&table.encode()))?;
        }
        self.footer()
    }

    /// Writes what `f` writes as a section.
    fn section(&mut self, f: impl FnOnce(&mut IndexWriter) -> Result<(), Error>) -> Result<(), Error> {
        let start = self.at;
        f(self)?;
        self.sections.push((start, self.at - start));
        Ok(())
    }

    /// Appends the record sections (all but the flows' listed as sections now), and returns their
    /// block tables and the flows' two sections (which come later in the footer's list).
    fn record_sections(&mut self) -> Result<RecordSections, Error> {
        let mut tables = Vec::new();
        let mut flow_sections = Vec::new();
        if let Some(r) = self.records.take() {
            let path = self.path.clone();
            let io = |e| Error::io(&path, e);
            let [slices, points, samples, flows, flow_events] =
                [r.slices, r.points, r.samples, r.flows, r.flow_events].map(|w| w.finish());
            for (k, done) in [slices, points, samples, flows, flow_events].into_iter().enumerate() {
                let (spool, table) = done.map_err(io)?;
                self.copy_section(spool)?;
                if k >= 3 {
                    flow_sections.push(self.sections.pop().unwrap_or_default());
                }
                tables.push(table);
            }
        }
        Ok((tables, flow_sections))
    }

    /// The names: their count, the end of each in the text, then the text.
    fn names(&mut self, names: &crate::build::Names) -> Result<(), Error> {
        self.write(&u64::from(names.len()).to_le_bytes())?;
        let mut end = 0u64;
        for n in 0..names.len() {
            end += names.get(n).len() as u64;
            self.write(&end.to_le_bytes())?;
        }
        for n in 0..names.len() {
            self.write(names.get(n).as_bytes())?;
        }
        Ok(())
    }

    /// The tracks' entries, their levels numbered from `first` in the levels section, a track's
    /// in a row.
    fn entries(&mut self, tracks: &[ThreadEntry], mut first: u32) -> Result<(), Error> {
        for t in tracks {
            let mut b = [0u8; THREAD_BYTES];
            b[0..4].copy_from_slice(&t.tid.to_le_bytes());
            b[4..8].copy_from_slice(&t.name.unwrap_or(NO_NAME).to_le_bytes());
            b[8..12].copy_from_slice(&first.to_le_bytes());
            b[12..16].copy_from_slice(&t.n_levels.to_le_bytes());
            b[16..24].copy_from_slice(&t.points.0.to_le_bytes());
            b[24..32].copy_from_slice(&t.points.1.to_le_bytes());
            self.write(&b)?;
            first += t.n_levels;
        }
        Ok(())
    }

    /// Writes the footer (the sections' list), then its offset in the header: the index is
    /// complete.
    fn footer(mut self) -> Result<(), Error> {
        let footer = self.at;
        let sections = std::mem::take(&mut self.sections);
        for (offset, len) in sections {
            self.write(&offset.to_le_bytes())?;
            self.write(&len.to_le_bytes())?;
        }
        self.write(FOOTER_MAGIC)?;
        let path = self.path.clone();
        let mut file = self.out.into_inner().map_err(|e| Error::io(&path, e.into_error()))?;
        file.seek(SeekFrom::Start(32)).map_err(|e| Error::io(&path, e))?;
        file.write_all(&footer.to_le_bytes()).map_err(|e| Error::io(&path, e))?;
        file.sync_all().map_err(|e| Error::io(&path, e))?;
        Ok(())
    }
}
