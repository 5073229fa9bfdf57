//! The system block (kind 8, format 1.6): one [`SystemBatch`] (context switches, CPU samples,
//! mappings, heap totals, the sources' status), compactly encoded.
//!
//! ```text
//! section*   tag varint, len varint, body [u8; len]   (an unknown tag is skipped)
//!   1 status    3 × availability (code u8: 0 off, 1 on, 2 unavailable + reason str),
//!               sample_hz, kernel_lost, dropped, threads_missed (varints)
//!   2 mappings  count, then count × (start, end - start, file_offset, path str, build id bytes)
//!   3 switches  count, then count × (tid, time delta, cpu + 1 (0: unknown), kind u8)
//!   4 samples   count, then count × (tid, time delta, cpu + 1, kind u8 (0 cpu, 1 allocation
//!               + bytes), frames n, then the first frame and n - 1 zigzag frame deltas)
//!   5 heap      count, then count × (time delta, allocs, frees, alloc_bytes, freed_bytes deltas)
//! ```
//!
//! Integers are LEB128 varints; a "time delta" or "delta" is the zigzag varint of the difference
//! from the previous entry's value in the same section (the first from 0). A `str` is a varint
//! length and UTF-8; "bytes" a varint length and bytes. Deltas keep a sample's frames (addresses
//! near each other) at two or three bytes each.
//!
//! Decoding checks every count against the bytes left (each entry takes at least a known number
//! of bytes), and the hard caps: [`MAX_SYSTEM_ENTRIES`] per section, [`MAX_FRAMES`] per sample,
//! [`MAX_SYSTEM_FRAMES`] per block, [`MAX_PATH_BYTES`] and [`MAX_BUILD_ID_BYTES`]. So a hostile
//! block costs memory and time in proportion to its length, never more; the writer splits a large
//! batch over several blocks to stay within them.

use super::bytes::Body;
use super::error::Error;
use crate::system::{
    Availability, HeapCounter, Mapping, Sample, SampleKind, Switch, SwitchKind, SystemBatch, SystemStatus,
    MAX_FRAMES, UNKNOWN_CPU,
};

/// The most entries of one kind (mappings, switches, samples, heap totals) in one block.
pub const MAX_SYSTEM_ENTRIES: usize = 1 << 16;
/// The most frames, over all its samples, in one block.
pub const MAX_SYSTEM_FRAMES: usize = 1 << 20;
/// The longest mapping path (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// The longest build id (a GNU build id is 20 bytes; other linkers' up to 32).
pub const MAX_BUILD_ID_BYTES: usize = 64;
/// The longest reason in an [`Availability::Unavailable`].
const MAX_REASON_BYTES: usize = 4096;

const TAG_STATUS: u64 = 1;
const TAG_MAPPINGS: u64 = 2;
const TAG_SWITCHES: u64 = 3;
const TAG_SAMPLES: u64 = 4;
const TAG_HEAP: u64 = 5;

const WHAT: &str = "system block";

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// The zigzag varint of `new - old`, wrapping (so any two `u64`s have a delta).
fn put_delta(out: &mut Vec<u8>, old: u64, new: u64) {
    put_varint(out, zigzag(new.wrapping_sub(old) as i64));
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn cpu_code(cpu: u32) -> u64 {
    if cpu == UNKNOWN_CPU {
        0
    } else {
        u64::from(cpu) + 1
    }
}

/// Appends one section: its tag, the length of what `body` writes, and that.
fn section(out: &mut Vec<u8>, tag: u64, scratch: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    scratch.clear();
    body(scratch);
    put_varint(out, tag);
    put_varint(out, scratch.len() as u64);
    out.extend_from_slice(scratch);
}

/// Why a batch cannot be encoded (a field over its cap), for the writer's error.
pub(crate) fn check(batch: &SystemBatch) -> Result<(), String> {
    if let Some(m) = batch.mappings.iter().find(|m| m.path.len() > MAX_PATH_BYTES) {
        return Err(format!("mapping path of {} bytes (at most {MAX_PATH_BYTES})", m.path.len()));
    }
    if let Some(m) = batch.mappings.iter().find(|m| m.build_id.len() > MAX_BUILD_ID_BYTES) {
        return Err(format!("build id of {} bytes (at most {MAX_BUILD_ID_BYTES})", m.build_id.len()));
    }
    if let Some(m) = batch.mappings.iter().find(|m| m.end < m.start) {
        return Err(format!("mapping ends at {:#x} before its start {:#x}", m.end, m.start));
    }
    if let Some(s) = batch.samples.iter().find(|s| s.frames.len() > MAX_FRAMES) {
        return Err(format!("sample of {} frames (at most {MAX_FRAMES})", s.frames.len()));
    }
    let reason = |a: &Availability| matches!(a, Availability::Unavailable(r) if r.len() > MAX_REASON_BYTES);
    if let Some(s) = &batch.status {
        if [&s.switches, &s.samples, &s.allocations].into_iter().any(reason) {
            return Err(format!("unavailability reason over {MAX_REASON_BYTES} bytes"));
        }
    }
    Ok(())
}

/// Appends the body of a system block for `batch` (checked by [`check`], and within the per-block
/// caps) to `out`.
pub(crate) fn encode(batch: &SystemBatch, out: &mut Vec<u8>) {
    let mut s = Vec::new();
    if let Some(st) = &batch.status {
        section(out, TAG_STATUS, &mut s, |o| {
            for a in [&st.switches, &st.samples, &st.allocations] {
                match a {
                    Availability::Off => o.push(0),
                    Availability::On => o.push(1),
                    Availability::Unavailable(why) => {
                        o.push(2);
                        put_bytes(o, why.as_bytes());
                    }
                }
            }
            for v in [u64::from(st.sample_hz), st.kernel_lost, st.dropped, u64::from(st.threads_missed)] {
                put_varint(o, v);
            }
        });
    }
    if !batch.mappings.is_empty() {
        section(out, TAG_MAPPINGS, &mut s, |o| {
            put_varint(o, batch.mappings.len() as u64);
            for m in &batch.mappings {
                put_varint(o, m.start);
                put_varint(o, m.end - m.start);
                put_varint(o, m.file_offset);
                put_bytes(o, m.path.as_bytes());
                put_bytes(o, &m.build_id);
            }
        });
    }
    if !batch.switches.is_empty() {
        section(out, TAG_SWITCHES, &mut s, |o| {
            put_varint(o, batch.switches.len() as u64);
            let mut t = 0;
            for w in &batch.switches {
                put_varint(o, u64::from(w.tid));
                put_delta(o, t, w.time_ns);
                t = w.time_ns;
                put_varint(o, cpu_code(w.cpu));
                o.push(match w.kind {
                    SwitchKind::Out => 0,
                    SwitchKind::Preempted => 1,
                    SwitchKind::In => 2,
                });
            }
        });
    }
    if !batch.samples.is_empty() {
        section(out, TAG_SAMPLES, &mut s, |o| {
            put_varint(o, batch.samples.len() as u64);
            let mut t = 0;
            for p in &batch.samples {
                put_varint(o, u64::from(p.tid));
                put_delta(o, t, p.time_ns);
                t = p.time_ns;
                put_varint(o, cpu_code(p.cpu));
                match p.kind {
                    SampleKind::Cpu => o.push(0),
                    SampleKind::Allocation { bytes } => {
                        o.push(1);
                        put_varint(o, bytes);
                    }
                }
                put_varint(o, p.frames.len() as u64);
                let mut prev = 0;
                for &f in &p.frames {
                    put_delta(o, prev, f);
                    prev = f;
                }
            }
        });
    }
    if !batch.heap.is_empty() {
        section(out, TAG_HEAP, &mut s, |o| {
            put_varint(o, batch.heap.len() as u64);
            let mut prev = HeapCounter::default();
            for h in &batch.heap {
                put_delta(o, prev.time_ns, h.time_ns);
                put_delta(o, prev.allocs, h.allocs);
                put_delta(o, prev.frees, h.frees);
                put_delta(o, prev.alloc_bytes, h.alloc_bytes);
                put_delta(o, prev.freed_bytes, h.freed_bytes);
                prev = *h;
            }
        });
    }
}

/// Splits `batch` into pieces that each fit the per-block caps (the status in the last), and
/// calls `f` with each. A batch within the caps is passed whole.
pub(crate) fn split<E>(
    batch: &SystemBatch,
    mut f: impl FnMut(&SystemBatch) -> Result<(), E>,
) -> Result<(), E> {
    let frames: usize = batch.samples.iter().map(|s| s.frames.len()).sum();
    let fits = [batch.mappings.len(), batch.switches.len(), batch.samples.len(), batch.heap.len()]
        .iter()
        .all(|&n| n <= MAX_SYSTEM_ENTRIES)
        && frames <= MAX_SYSTEM_FRAMES;
    if fits {
        return f(batch);
    }
    let mut piece = SystemBatch::default();
    for m in batch.mappings.chunks(MAX_SYSTEM_ENTRIES) {
        piece.mappings = m.to_vec();
        f(&piece)?;
    }
    piece.mappings.clear();
    for w in batch.switches.chunks(MAX_SYSTEM_ENTRIES) {
        piece.switches = w.to_vec();
        f(&piece)?;
    }
    piece.switches.clear();
    for h in batch.heap.chunks(MAX_SYSTEM_ENTRIES) {
        piece.heap = h.to_vec();
        f(&piece)?;
    }
    piece.heap.clear();
    let mut frames = 0;
    for s in &batch.samples {
        if piece.samples.len() == MAX_SYSTEM_ENTRIES || frames + s.frames.len() > MAX_SYSTEM_FRAMES {
            f(&piece)?;
            piece.samples.clear();
            frames = 0;
        }
        frames += s.frames.len();
        piece.samples.push(s.clone());
    }
    piece.status = batch.status.clone();
    if !piece.is_empty() {
        f(&piece)?;
    }
    Ok(())
}

impl Body<'_> {
    /// A LEB128 varint of at most 10 bytes that fits a `u64`.
    fn varint(&mut self) -> Result<u64, Error> {
        let at = self.offset();
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.u8()?;
            let bits = u64::from(b & 0x7f);
            if i == 9 && bits > 1 {
                break;
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Error::malformed(WHAT, "varint over 64 bits", at))
    }

    fn varint_u32(&mut self, field: &str) -> Result<u32, Error> {
        let at = self.offset();
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| Error::malformed(WHAT, format!("{field} {v} over 32 bits"), at))
    }

    fn delta(&mut self, prev: u64) -> Result<u64, Error> {
        Ok(prev.wrapping_add(unzigzag(self.varint()?) as u64))
    }

    fn cpu(&mut self) -> Result<u32, Error> {
        let at = self.offset();
        match self.varint()? {
            0 => Ok(UNKNOWN_CPU),
            c if c <= u64::from(u32::MAX) => Ok((c - 1) as u32),
            c => Err(Error::malformed(WHAT, format!("cpu code {c} over 32 bits"), at)),
        }
    }

    /// A varint length of at most `max` and that many bytes.
    fn bytes_max(&mut self, max: usize, field: &str) -> Result<&[u8], Error> {
        let at = self.offset();
        let len = self.varint()?;
        if len > max as u64 {
            return Err(Error::malformed(WHAT, format!("{field} of {len} bytes (at most {max})"), at));
        }
        self.take(len as usize)
    }

    fn str_max(&mut self, max: usize, field: &str) -> Result<String, Error> {
        let at = self.offset();
        let b = self.bytes_max(max, field)?;
        std::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|e| Error::malformed(WHAT, format!("{field}: {e}"), at))
    }

    /// An entry count, checked against the cap and against the bytes left (each entry takes at
    /// least `min_bytes`), so no count makes the decoder reserve or loop past what the block holds.
    fn count(&mut self, min_bytes: usize, what: &str) -> Result<usize, Error> {
        let at = self.offset();
        let n = self.varint()?;
        if n > MAX_SYSTEM_ENTRIES as u64 {
            return Err(Error::malformed(WHAT, format!("{n} {what} (at most {MAX_SYSTEM_ENTRIES})"), at));
        }
        if n as usize * min_bytes > self.remaining() {
            return Err(Error::malformed(
                WHAT,
                format!("{n} {what} cannot fit in the {} bytes left", self.remaining()),
                at,
            ));
        }
        Ok(n as usize)
    }
}

/// Decodes a system block's body (at file offset `base`) into `batch`, which is cleared first.
pub(crate) fn decode(body: &[u8], base: u64, batch: &mut SystemBatch) -> Result<(), Error> {
    batch.status = None;
    batch.mappings.clear();
    batch.switches.clear();
    batch.samples.clear();
    batch.heap.clear();
    let mut b = Body::new(body, base, WHAT);
    let mut frames_total = 0usize;
    while b.remaining() > 0 {
        let tag = b.varint()?;
        let at = b.offset();
        let len = b.varint()?;
        if len > b.remaining() as u64 {
            return Err(Error::malformed(
                WHAT,
                format!("section of {len} bytes, the block has {} left", b.remaining()),
                at,
            ));
        }
        let start = b.offset();
        let mut s = Body::new(b.take(len as usize)?, start, WHAT);
        match tag {
            TAG_STATUS => batch.status = Some(status(&mut s)?),
            TAG_MAPPINGS => mappings(&mut s, &mut batch.mappings)?,
            TAG_SWITCHES => switches(&mut s, &mut batch.switches)?,
            TAG_SAMPLES => samples(&mut s, &mut batch.samples, &mut frames_total)?,
            TAG_HEAP => heap(&mut s, &mut batch.heap)?,
            // A section of a later minor version.
            _ => continue,
        }
        s.finish()?;
    }
    Ok(())
}

fn status(s: &mut Body<'_>) -> Result<SystemStatus, Error> {
    let mut avail = || -> Result<Availability, Error> {
        let at = s.offset();
        Ok(match s.u8()? {
            0 => Availability::Off,
            1 => Availability::On,
            2 => Availability::Unavailable(s.str_max(MAX_REASON_BYTES, "reason")?),
            c => return Err(Error::malformed(WHAT, format!("availability code {c}"), at)),
        })
    };
    let (switches, samples, allocations) = (avail()?, avail()?, avail()?);
    Ok(SystemStatus {
        switches,
        samples,
        allocations,
        sample_hz: s.varint_u32("sample_hz")?,
        kernel_lost: s.varint()?,
        dropped: s.varint()?,
        threads_missed: s.varint_u32("threads_missed")?,
    })
}

fn mappings(s: &mut Body<'_>, out: &mut Vec<Mapping>) -> Result<(), Error> {
    let n = s.count(5, "mappings")?;
    out.reserve(n);
    for _ in 0..n {
        let start = s.varint()?;
        let at = s.offset();
        let len = s.varint()?;
        let end = start
            .checked_add(len)
            .ok_or_else(|| Error::malformed(WHAT, "mapping past the end of the address space", at))?;
        let file_offset = s.varint()?;
        let path = s.str_max(MAX_PATH_BYTES, "mapping path")?;
        let build_id = s.bytes_max(MAX_BUILD_ID_BYTES, "build id")?.to_vec();
        out.push(Mapping { start, end, file_offset, path, build_id });
    }
    Ok(())
}

fn switches(s: &mut Body<'_>, out: &mut Vec<Switch>) -> Result<(), Error> {
    let n = s.count(4, "switches")?;
    out.reserve(n);
    let mut t = 0;
    for _ in 0..n {
        let tid = s.varint_u32("tid")?;
        t = s.delta(t)?;
        let cpu = s.cpu()?;
        let at = s.offset();
        let kind = match s.u8()? {
            0 => SwitchKind::Out,
            1 => SwitchKind::Preempted,
            2 => SwitchKind::In,
            k => return Err(Error::malformed(WHAT, format!("switch kind {k}"), at)),
        };
        out.push(Switch { tid, time_ns: t, cpu, kind });
    }
    Ok(())
}

fn samples(s: &mut Body<'_>, out: &mut Vec<Sample>, frames_total: &mut usize) -> Result<(), Error> {
    let n = s.count(5, "samples")?;
    out.reserve(n);
    let mut t = 0;
    for _ in 0..n {
        let tid = s.varint_u32("tid")?;
        t = s.delta(t)?;
        let cpu = s.cpu()?;
        let at = s.offset();
        let kind = match s.u8()? {
            0 => SampleKind::Cpu,
            1 => SampleKind::Allocation { bytes: s.varint()? },
            k => return Err(Error::malformed(WHAT, format!("sample kind {k}"), at)),
        };
        let at = s.offset();
        let nf = s.varint()?;
        if nf > MAX_FRAMES as u64 || nf as usize > s.remaining() {
            return Err(Error::malformed(
                WHAT,
                format!("sample of {nf} frames (at most {MAX_FRAMES}, one byte each at least)"),
                at,
            ));
        }
        *frames_total += nf as usize;
        if *frames_total > MAX_SYSTEM_FRAMES {
            return Err(Error::malformed(WHAT, format!("over {MAX_SYSTEM_FRAMES} frames in the block"), at));
        }
        let mut frames = Vec::with_capacity(nf as usize);
        let mut prev = 0;
        for _ in 0..nf {
            prev = s.delta(prev)?;
            frames.push(prev);
        }
        out.push(Sample { tid, time_ns: t, cpu, kind, frames });
    }
    Ok(())
}

fn heap(s: &mut Body<'_>, out: &mut Vec<HeapCounter>) -> Result<(), Error> {
    let n = s.count(5, "heap totals")?;
    out.reserve(n);
    let mut p = HeapCounter::default();
    for _ in 0..n {
        p = HeapCounter {
            time_ns: s.delta(p.time_ns)?,
            allocs: s.delta(p.allocs)?,
            frees: s.delta(p.frees)?,
            alloc_bytes: s.delta(p.alloc_bytes)?,
            freed_bytes: s.delta(p.freed_bytes)?,
        };
        out.push(p);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_zigzag_round_trip_at_the_extremes() {
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX - 1, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(Body::new(&out, 0, WHAT).varint().unwrap(), v);
        }
        for d in [0, 1, -1, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
    }

    #[test]
    fn a_varint_past_64_bits_is_an_error_at_its_offset() {
        let bytes = [0xff; 10];
        let e = Body::new(&bytes, 100, WHAT).varint().unwrap_err();
        assert_eq!(e.offset(), 100);
        let bytes = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(Body::new(&bytes, 0, WHAT).varint().is_err());
    }
}
