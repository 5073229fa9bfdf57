//! Perfetto's own compression: packets bundled into `TracePacket.compressed_packets`.
//!
//! [`CompressedPackets`] sits between an exporter and its output. It takes the bytes of a
//! `perfetto.protos.Trace` (a run of `packet` fields), cuts them at packet boundaries into bundles
//! of about [`PacketCompression::bundle_bytes`], and writes each bundle as one packet holding only
//! field 50, `compressed_packets`: the bundle, which is itself a serialized `Trace`, compressed
//! with zlib (RFC 1950: the deflate stream with its two-byte header and Adler-32 trailer, as
//! Perfetto's own service writes it with `deflateInit` and trace processor reads it with
//! `inflateInit`). Trace processor inflates such a packet and reads the packets inside in its
//! place, so the order of every packet (interned data, clock snapshots and defaults before the
//! packets that use them) is exactly the order written, and nothing else of the trace changes.
//!
//! The compression runs on a second thread when [`PacketCompression::thread`] is set: bundles go
//! to it through a channel and come back compressed, at most [`IN_FLIGHT`] at once (so memory
//! stays at a few bundles), and are written in order by the thread that writes the trace, so the
//! output needs not be `Send`. Exporting and compressing then overlap on two cores.

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use flate2::write::ZlibEncoder;

use super::pb;
use super::proto::TRACE_PACKET;

/// `TracePacket.compressed_packets`, from the official `trace_packet.proto`.
const PACKET_COMPRESSED_PACKETS: u32 = 50;

/// Bundles handed to the compression thread and not yet written: the one being compressed and
/// one waiting, so the exporter can fill a third while the thread works.
pub const IN_FLIGHT: usize = 2;

/// How [`CompressedPackets`] compresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketCompression {
    /// The zlib level, 0 (stored) to 9 (smallest).
    pub level: u32,
    /// A bundle is cut at the first packet boundary past this many bytes (a packet larger than
    /// this makes a bundle of its own).
    pub bundle_bytes: usize,
    /// Whether to compress on a second thread (if one cannot be started, compression runs inline).
    pub thread: bool,
}

impl Default for PacketCompression {
    /// Level 1 in bundles of 256 KiB on a second thread (BENCHMARKS.md: 28.8 → 8.0 bytes per
    /// event on the demo for 0.14 s more CPU time per million events; higher levels not measured).
    fn default() -> Self {
        PacketCompression { level: 1, bundle_bytes: 256 * 1024, thread: true }
    }
}

/// A [`Write`] that turns a Perfetto `Trace` into one of compressed packets: bundles of whole
/// packets of about [`PacketCompression::bundle_bytes`], each written as one packet of zlib
/// `compressed_packets`, in order (see the [Perfetto module docs](super#compression)). Call [`finish`](Self::finish) at the end: it writes the last bundle and
/// reports errors. Dropped unfinished, it writes what it holds and ignores errors, as a
/// `BufWriter` does.
///
/// The bytes written to it must be whole `packet` fields (tag `0x0a`) once all are written;
/// anything else is an [`io::ErrorKind::InvalidData`] error.
pub struct CompressedPackets<W: Write> {
    /// `None` once finished.
    out: Option<W>,
    options: PacketCompression,
    /// Bytes not yet bundled; `pending[..scanned]` are whole packets.
    pending: Vec<u8>,
    scanned: usize,
    worker: Option<Worker>,
}

/// The compression thread's ends.
struct Worker {
    /// Bundles to compress; `None` once finishing.
    jobs: Option<SyncSender<Vec<u8>>>,
    /// Compressed bundles, in the order sent, with the bundle's buffer to reuse.
    done: Receiver<(Vec<u8>, Vec<u8>)>,
    in_flight: usize,
    handle: Option<JoinHandle<()>>,
    /// Emptied bundle buffers, reused for the next bundles.
    spare: Vec<Vec<u8>>,
}

impl<W: Write> CompressedPackets<W> {
    /// Compresses the trace written to it into `out`.
    pub fn new(out: W, options: PacketCompression) -> Self {
        let worker = if options.thread { Worker::start(options.level) } else { None };
        CompressedPackets {
            out: Some(out),
            options,
            pending: Vec::with_capacity(options.bundle_bytes + options.bundle_bytes / 4),
            scanned: 0,
            worker,
        }
    }

    /// Writes what is left, waits for the compression thread, flushes and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.finish_inner()?;
        Ok(self.out.take().expect("finish_inner keeps the output"))
    }

    fn finish_inner(&mut self) -> io::Result<()> {
        self.scan(usize::MAX)?;
        if self.scanned != self.pending.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the Perfetto trace ends inside a packet ({} bytes of it written)",
                    self.pending.len() - self.scanned
                ),
            ));
        }
        self.ship()?;
        self.drain(0)?;
        if let Some(w) = &mut self.worker {
            w.jobs = None;
            if let Some(h) = w.handle.take() {
                h.join().map_err(|_| io::Error::other("the compression thread panicked"))?;
            }
        }
        self.out_mut().flush()
    }

    fn out_mut(&mut self) -> &mut W {
        self.out.as_mut().expect("written to after finish")
    }

    /// Moves `scanned` past the whole packets of `pending`, stopping once past `limit`.
    fn scan(&mut self, limit: usize) -> io::Result<()> {
        const KEY: u8 = (TRACE_PACKET << 3 | pb::LEN) as u8;
        while self.scanned < limit {
            let rest = &self.pending[self.scanned..];
            let Some(&key) = rest.first() else { return Ok(()) };
            if key != KEY {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("not a Perfetto trace packet: field key {key:#04x} at byte {}", self.scanned),
                ));
            }
            let (mut len, mut shift, mut at) = (0u64, 0u32, 1);
            loop {
                let Some(&b) = rest.get(at) else { return Ok(()) };
                if shift > 63 {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "a packet length over 64 bits"));
                }
                len |= u64::from(b & 0x7f) << shift;
                shift += 7;
                at += 1;
                if b < 0x80 {
                    break;
                }
            }
            match usize::try_from(len).ok().and_then(|l| l.checked_add(at)) {
                Some(end) if end <= rest.len() => self.scanned += end,
                _ => return Ok(()),
            }
        }
        Ok(())
    }

    /// Compresses the whole packets of `pending` as one bundle (nothing if there are none).
    fn ship(&mut self) -> io::Result<()> {
        if self.scanned == 0 {
            return Ok(());
        }
        let level = self.options.level;
        let Some(w) = &mut self.worker else {
            let z = compress(&self.pending[..self.scanned], level, Vec::new())?;
            self.pending.drain(..self.scanned);
            self.scanned = 0;
            let out = self.out.as_mut().expect("written to after finish");
            return write_compressed(out, &z);
        };
        let mut next = w.spare.pop().unwrap_or_default();
        next.clear();
        next.extend_from_slice(&self.pending[self.scanned..]);
        let bundle = std::mem::replace(&mut self.pending, next);
        let mut bundle = bundle;
        bundle.truncate(self.scanned);
        self.scanned = 0;
        self.drain(IN_FLIGHT - 1)?;
        let w = self.worker.as_mut().expect("checked above");
        let jobs = w.jobs.as_ref().expect("not finishing");
        jobs.send(bundle).map_err(|_| io::Error::other("the compression thread stopped"))?;
        w.in_flight += 1;
        Ok(())
    }

    /// Writes compressed bundles until at most `keep` are in flight.
    fn drain(&mut self, keep: usize) -> io::Result<()> {
        let Some(w) = &mut self.worker else { return Ok(()) };
        while w.in_flight > keep {
            let (z, bundle) =
                w.done.recv().map_err(|_| io::Error::other("the compression thread stopped"))?;
            w.in_flight -= 1;
            w.spare.push(bundle);
            write_compressed(self.out.as_mut().expect("written to after finish"), &z)?;
        }
        Ok(())
    }
}

impl<W: Write> Write for CompressedPackets<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        loop {
            self.scan(self.options.bundle_bytes)?;
            if self.scanned < self.options.bundle_bytes {
                return Ok(buf.len());
            }
            self.ship()?;
        }
    }

    /// Compresses the whole packets held so far as a bundle, waits for the compression thread
    /// and flushes the output. The exporters flush once, at their end.
    fn flush(&mut self) -> io::Result<()> {
        self.ship()?;
        self.drain(0)?;
        self.out_mut().flush()
    }
}

impl<W: Write> Drop for CompressedPackets<W> {
    fn drop(&mut self) {
        if self.out.is_some() && !std::thread::panicking() {
            let _ = self.finish_inner();
        }
    }
}

impl Worker {
    /// Starts the compression thread; `None` if the system refuses a thread.
    fn start(level: u32) -> Option<Worker> {
        let (jobs, todo) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
        let (give, done) = mpsc::sync_channel(IN_FLIGHT);
        let handle = std::thread::Builder::new()
            .name("pftrace-zlib".into())
            .spawn(move || {
                for bundle in todo {
                    // Compressing into a Vec cannot fail.
                    let Ok(z) = compress(&bundle, level, Vec::new()) else { return };
                    if give.send((z, bundle)).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(Worker { jobs: Some(jobs), done, in_flight: 0, handle: Some(handle), spare: Vec::new() })
    }
}

/// `bundle` compressed with zlib at `level`, into `into` (cleared first).
fn compress(bundle: &[u8], level: u32, mut into: Vec<u8>) -> io::Result<Vec<u8>> {
    into.clear();
    into.reserve(bundle.len() / 3);
    let mut e = ZlibEncoder::new(into, flate2::Compression::new(level.min(9)));
    e.write_all(bundle)?;
    e.finish()
}

/// Writes one packet holding `z` as its `compressed_packets`.
fn write_compressed(out: &mut impl Write, z: &[u8]) -> io::Result<()> {
    let mut head = [0u8; 24];
    let mut field = [0u8; 12];
    let f = pb::write_varint(&mut field, u64::from(PACKET_COMPRESSED_PACKETS << 3 | pb::LEN));
    let f = f + pb::write_varint(&mut field[f..], z.len() as u64);
    head[0] = (TRACE_PACKET << 3 | pb::LEN) as u8;
    let h = 1 + pb::write_varint(&mut head[1..], (f + z.len()) as u64);
    head[h..h + f].copy_from_slice(&field[..f]);
    out.write_all(&head[..h + f])?;
    out.write_all(z)
}

impl<W: Write> std::fmt::Debug for CompressedPackets<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompressedPackets")
            .field("options", &self.options)
            .field("pending", &self.pending.len())
            .field("in_flight", &self.worker.as_ref().map_or(0, |w| w.in_flight))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
#[path = "compress_tests.rs"]
mod tests;
