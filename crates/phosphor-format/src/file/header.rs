//! The file's preamble, its block framing, the header block and the trailer block.
//!
//! The preamble is 16 bytes: the magic, the major and minor format version, and four reserved
//! bytes. Every block after it is framed as `kind: u32, len: u32, body: [u8; len]`. The header
//! block comes first and says how to read the clock and which process recorded the trace; the
//! trailer comes last and holds the counters of what was recorded and dropped. Both bodies may grow
//! at their end in a later minor version: readers ignore bytes past the fields they know.

use super::bytes::{put_str, Body};
use super::error::Error;
use crate::clock::{ClockInfo, ClockKind};

/// The first eight bytes of every trace file.
pub const MAGIC: [u8; 8] = *b"PHOSPHOR";

/// The major format version this crate writes and reads. A reader rejects a newer major version.
pub const FORMAT_MAJOR: u16 = 1;

/// The minor format version this crate writes. Minor versions only add what older readers can
/// skip (new non-critical block kinds, fields appended to a body).
pub const FORMAT_MINOR: u16 = 8;

/// Bytes of the preamble: magic, major, minor, reserved.
pub const PREAMBLE_BYTES: usize = 16;

/// Bytes of a block's framing: kind and length.
pub const BLOCK_HEADER_BYTES: usize = 8;

/// The largest block body a reader accepts (64 MiB), so memory stays bounded whatever the input.
pub const MAX_BLOCK_BYTES: u32 = 64 << 20;

/// Block kinds. A kind with [`kind::CRITICAL`] set must be understood: a reader that does not know
/// it stops with an error instead of skipping it.
pub mod kind {
    /// Clock and process: [`Header`](super::Header). Always the first block.
    pub const HEADER: u32 = 1;
    /// Interned strings, appended to the string table.
    pub const STRINGS: u32 = 2;
    /// Callsite definitions.
    pub const CALLSITES: u32 = 3;
    /// Thread names.
    pub const THREADS: u32 = 4;
    /// One chunk: extents, then records.
    pub const CHUNK: u32 = 5;
    /// Counters: [`Trailer`](super::Trailer). Always the last block.
    pub const TRAILER: u32 = 6;
    /// Snapshots of aggregate points (format 1.2): [`Aggregate`](crate::file::Aggregate).
    pub const AGGREGATES: u32 = 7;
    /// System context (format 1.6): [`SystemBatch`](crate::system::SystemBatch).
    pub const SYSTEM: u32 = 8;
    /// A compressed group of blocks (format 1.7): see `compress.rs` and `docs/FORMAT.md`.
    pub const COMPRESSED: u32 = CRITICAL | 9;
    /// Set on kinds a reader must understand.
    pub const CRITICAL: u32 = 1 << 31;

    /// A name for messages.
    pub(crate) fn name(kind: u32) -> &'static str {
        match kind {
            HEADER => "header block",
            STRINGS => "string block",
            CALLSITES => "callsite block",
            THREADS => "thread block",
            CHUNK => "chunk block",
            TRAILER => "trailer block",
            AGGREGATES => "aggregates block",
            SYSTEM => "system block",
            COMPRESSED => "compressed group",
            _ => "unknown block",
        }
    }
}

/// The header block: clock and process.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The trace's clock.
    pub clock: ClockInfo,
    /// The recording process's id.
    pub pid: u32,
    /// The recording process's name.
    pub process_name: String,
    /// The id of the boot the trace was recorded in (Linux: `/proc/sys/kernel/random/boot_id`),
    /// which says whether two files' `CLOCK_MONOTONIC` times compare (format 1.5; `None` in older
    /// files and where the system has none).
    pub boot_id: Option<BootId>,
    /// The recording machine's host name (format 1.5; `None` in older files or if unknown).
    pub host_name: Option<String>,
}

/// A boot's id: 16 bytes, never all zero (zeros are written for "unknown").
pub type BootId = [u8; 16];

/// Parses the text form of a boot id (`/proc/sys/kernel/random/boot_id`: 32 hex digits, dashes
/// anywhere ignored, surrounding white space ignored); `None` if it is not one, or all zero.
pub fn parse_boot_id(text: &str) -> Option<BootId> {
    let mut id = [0u8; 16];
    let mut digits = text.trim().bytes().filter(|&b| b != b'-');
    for byte in &mut id {
        let hi = (digits.next()? as char).to_digit(16)?;
        let lo = (digits.next()? as char).to_digit(16)?;
        *byte = (hi << 4 | lo) as u8;
    }
    (digits.next().is_none() && id != [0; 16]).then_some(id)
}

/// A boot id in its usual text form (`8-4-4-4-12` hex digits).
pub fn format_boot_id(id: &BootId) -> String {
    let mut s = String::with_capacity(36);
    for (i, b) in id.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{b:02x}"));
    }
    s
}

impl Header {
    const HAS_FALLBACK: u8 = 1;

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.clock.kind as u8);
        out.push(if self.clock.fallback_reason.is_some() { Self::HAS_FALLBACK } else { 0 });
        out.extend_from_slice(&[0; 6]);
        out.extend_from_slice(&self.clock.ns_per_tick.to_bits().to_le_bytes());
        out.extend_from_slice(&self.clock.origin_ticks.to_le_bytes());
        out.extend_from_slice(&self.clock.origin_monotonic_ns.to_le_bytes());
        out.extend_from_slice(&self.clock.origin_wall_ns.to_le_bytes());
        out.extend_from_slice(&self.pid.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        put_str(out, &self.process_name);
        put_str(out, self.clock.fallback_reason.as_deref().unwrap_or(""));
        // 1.5: the boot id (zeros: unknown) and the host name (empty: unknown).
        out.extend_from_slice(&self.boot_id.unwrap_or([0; 16]));
        put_str(out, self.host_name.as_deref().unwrap_or(""));
    }

    pub(crate) fn decode(body: &[u8], base: u64) -> Result<Header, Error> {
        let mut b = Body::new(body, base, "header block");
        let at = b.offset();
        let code = b.u8()?;
        let kind = ClockKind::from_code(code)
            .ok_or_else(|| Error::malformed("header block", format!("unknown clock kind {code}"), at))?;
        let flags = b.u8()?;
        b.take(6)?;
        let ns_per_tick = f64::from_bits(b.u64()?);
        let origin_ticks = b.u64()?;
        let origin_monotonic_ns = b.u64()?;
        let origin_wall_ns = b.u64()?;
        let pid = b.u32()?;
        b.u32()?;
        let process_name = b.str()?.to_owned();
        let reason = b.str()?;
        let fallback_reason = (flags & Self::HAS_FALLBACK != 0).then(|| reason.to_owned());
        // 1.5 appended the boot id and the host name; an older header ends before them.
        let mut boot_id = None;
        let mut host_name = None;
        if b.remaining() >= 16 {
            let mut id = [0u8; 16];
            id.copy_from_slice(b.take(16)?);
            boot_id = (id != [0; 16]).then_some(id);
            let name = b.str()?;
            host_name = (!name.is_empty()).then(|| name.to_owned());
        }
        // Later minor versions may append fields: the rest of the body is ignored.
        Ok(Header {
            clock: ClockInfo {
                kind,
                ns_per_tick,
                origin_ticks,
                origin_monotonic_ns,
                origin_wall_ns,
                fallback_reason,
            },
            pid,
            process_name,
            boot_id,
            host_name,
        })
    }
}

/// Events dropped, by reason (the runtime's drop reasons, in their fixed order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DropCounts {
    /// A Fixed buffer ran out of chunks.
    pub buffer_full: u64,
    /// Every chunk of a Ring buffer was held.
    pub no_chunk: u64,
    /// A pool tenant was busy.
    pub contended: u64,
    /// Tracing was stopping.
    pub stopping: u64,
    /// Re-entered from a signal handler.
    pub reentrant: u64,
    /// The thread was exiting.
    pub thread_exited: u64,
    /// Overwritten by a Ring buffer.
    pub overwritten: u64,
    /// Lost while its records were being written: the writing unwound (a panic inside the
    /// recorder's critical section), so the event was neither committed nor kept (1.8; 0 in older
    /// files).
    pub unwound: u64,
    /// The sum of reasons this reader does not know (written by a later minor version).
    pub other: u64,
}

impl DropCounts {
    /// All drops.
    pub fn total(&self) -> u64 {
        self.as_array().iter().fold(self.other, |a, b| a.saturating_add(*b))
    }

    /// `(name, count)` for every reason in a fixed order, `other` last.
    pub fn by_reason(&self) -> [(&'static str, u64); 9] {
        [
            ("buffer_full", self.buffer_full),
            ("no_chunk", self.no_chunk),
            ("contended", self.contended),
            ("stopping", self.stopping),
            ("reentrant", self.reentrant),
            ("thread_exited", self.thread_exited),
            ("overwritten", self.overwritten),
            ("unwound", self.unwound),
            ("other", self.other),
        ]
    }

    /// Field-wise `self - earlier`, for counters that only grow.
    pub fn since(&self, earlier: &DropCounts) -> DropCounts {
        self.zip(earlier, u64::saturating_sub)
    }

    /// Field-wise sum (saturating).
    pub fn plus(&self, other: &DropCounts) -> DropCounts {
        self.zip(other, u64::saturating_add)
    }

    fn zip(&self, o: &DropCounts, f: impl Fn(u64, u64) -> u64) -> DropCounts {
        DropCounts {
            buffer_full: f(self.buffer_full, o.buffer_full),
            no_chunk: f(self.no_chunk, o.no_chunk),
            contended: f(self.contended, o.contended),
            stopping: f(self.stopping, o.stopping),
            reentrant: f(self.reentrant, o.reentrant),
            thread_exited: f(self.thread_exited, o.thread_exited),
            overwritten: f(self.overwritten, o.overwritten),
            unwound: f(self.unwound, o.unwound),
            other: f(self.other, o.other),
        }
    }

    fn as_array(&self) -> [u64; 8] {
        [
            self.buffer_full,
            self.no_chunk,
            self.contended,
            self.stopping,
            self.reentrant,
            self.thread_exited,
            self.overwritten,
            self.unwound,
        ]
    }
}

/// The trailer block: what the trace recorded and lost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trailer {
    /// Events recorded.
    pub recorded: u64,
    /// Events dropped, by reason.
    pub dropped: DropCounts,
    /// Chunks handed to threads.
    pub chunks_loaned: u64,
    /// Chunks reused by a Ring buffer.
    pub chunks_overwritten: u64,
    /// Chunks in the buffer.
    pub chunks_total: u64,
    /// A Fixed buffer ran out.
    pub buffer_exhausted: bool,
    /// Saturation markers among the recorded events (format 1.4; 0 in older files): events the
    /// recorder wrote itself (a streaming writer's note of how many events it dropped), so that
    /// `recorded - saturation_markers + dropped.total()` is what the program emitted.
    pub saturation_markers: u64,
}

impl Trailer {
    const EXHAUSTED: u64 = 1;

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        self.encode_with(&mut |b| out.extend_from_slice(b));
    }

    /// The trailer's body, piece by piece, to `put` (no allocation).
    pub(crate) fn encode_with(&self, put: &mut impl FnMut(&[u8])) {
        let out = put;
        for v in [
            self.recorded,
            self.chunks_loaned,
            self.chunks_overwritten,
            self.chunks_total,
            if self.buffer_exhausted { Self::EXHAUSTED } else { 0 },
        ] {
            out(&v.to_le_bytes());
        }
        let drops = self.dropped.as_array();
        let extra = usize::from(self.dropped.other != 0);
        out(&((drops.len() + extra) as u32).to_le_bytes());
        out(&[0; 4]);
        for v in drops {
            out(&v.to_le_bytes());
        }
        if extra == 1 {
            out(&self.dropped.other.to_le_bytes());
        }
        // 1.4: after the drop counters.
        out(&self.saturation_markers.to_le_bytes());
    }

    /// What the program emitted during the trace, by the trailer's counts: the recorded events
    /// that are not the recorder's own markers, plus the dropped ones.
    pub fn emitted(&self) -> u64 {
        self.recorded.saturating_sub(self.saturation_markers).saturating_add(self.dropped.total())
    }

    pub(crate) fn decode(body: &[u8], base: u64) -> Result<Trailer, Error> {
        let mut b = Body::new(body, base, "trailer block");
        let recorded = b.u64()?;
        let chunks_loaned = b.u64()?;
        let chunks_overwritten = b.u64()?;
        let chunks_total = b.u64()?;
        let flags = b.u64()?;
        let n = b.u32()? as usize;
        b.u32()?;
        let mut known = [0u64; 8];
        let mut other = 0u64;
        for i in 0..n {
            let v = b.u64()?;
            match known.get_mut(i) {
                Some(k) => *k = v,
                None => other = other.saturating_add(v),
            }
        }
        // 1.8 added `unwound`, the eighth; an older trailer has seven, and reads it as 0.
        let [buffer_full, no_chunk, contended, stopping, reentrant, thread_exited, overwritten, unwound] =
            known;
        // 1.4 appended the saturation markers; an older trailer ends before them.
        let saturation_markers = if b.remaining() >= 8 { b.u64()? } else { 0 };
        Ok(Trailer {
            recorded,
            dropped: DropCounts {
                buffer_full,
                no_chunk,
                contended,
                stopping,
                reentrant,
                thread_exited,
                overwritten,
                unwound,
                other,
            },
            chunks_loaned,
            chunks_overwritten,
            chunks_total,
            buffer_exhausted: flags & Self::EXHAUSTED != 0,
            saturation_markers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            clock: ClockInfo {
                kind: ClockKind::Monotonic,
                ns_per_tick: 1.0,
                origin_ticks: 0,
                origin_monotonic_ns: 10,
                origin_wall_ns: 20,
                fallback_reason: None,
            },
            pid: 3,
            process_name: "p".into(),
            boot_id: parse_boot_id("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"),
            host_name: Some("host".into()),
        }
    }

    #[test]
    fn a_boot_id_reads_back_from_its_text() {
        let id = parse_boot_id(" 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n").unwrap();
        assert_eq!(id[0], 0x0f);
        assert_eq!(id[15], 0xf0);
        assert_eq!(format_boot_id(&id), "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
        assert_eq!(parse_boot_id("0f1e2d3c"), None, "too short");
        assert_eq!(parse_boot_id("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0ff"), None, "too long");
        assert_eq!(parse_boot_id("zz1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"), None, "not hex");
        assert_eq!(parse_boot_id("00000000-0000-0000-0000-000000000000"), None, "zero is unknown");
    }

    #[test]
    fn the_boot_id_and_host_name_round_trip_and_unknown_ones_read_as_none() {
        let h = header();
        let mut body = Vec::new();
        h.encode(&mut body);
        assert_eq!(Header::decode(&body, 0).unwrap(), h);
        let none = Header { boot_id: None, host_name: None, ..header() };
        body.clear();
        none.encode(&mut body);
        assert_eq!(Header::decode(&body, 0).unwrap(), none);
    }

    #[test]
    fn a_header_cut_inside_the_host_name_is_an_error_at_its_offset() {
        let mut body = Vec::new();
        header().encode(&mut body);
        // Cut the last byte of the host name: its length says 4 bytes, 3 remain.
        let cut = &body[..body.len() - 1];
        let e = Header::decode(cut, 100).unwrap_err();
        assert_eq!(e.offset(), 100 + (body.len() - 4) as u64, "{e}");
        // Cut before the boot id ends: an older header's length, read as one.
        let older = &body[..body.len() - 8 - 16];
        assert_eq!(Header::decode(older, 0).unwrap().boot_id, None);
    }
}
