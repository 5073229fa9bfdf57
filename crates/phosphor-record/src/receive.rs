//! One connection's stream copied into its file, whole blocks only, within the limits. Its steps:
//! the preamble and header block ([`read_head`]), the outputs they name (the file, the live view,
//! the OTLP forwarder), then each block in turn ([`next_block`]: its frame checked, its body read
//! against the server's memory limit) until the trailer or the end of the stream.

use std::io::{BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use anyhow::{bail, Context};
use phosphor_format::file::ack::encode_ack;
use phosphor_format::file::{
    kind, Header, Reader, BLOCK_HEADER_BYTES, MAGIC, MAX_BLOCK_BYTES, MAX_GROUP_BYTES, PREAMBLE_BYTES,
};
use phosphor_otlp::export::Tally;
use phosphor_otlp::forward::{ForwardStats, Forwarder};
use phosphor_view::live::LiveHandle;

use crate::{Connection, Event, Limits};

/// The most bytes written to a file before it is flushed and acknowledged.
const ACK_EVERY: u64 = 256 << 10;

/// The longest compressed group block: the fields (8 bytes) and the largest group
/// ([`MAX_GROUP_BYTES`] decoded) as the worst input grows under either codec (LZ4: by n/255 + 16
/// bytes; zstd: by about n/256 + 64), with room to spare.
pub const MAX_GROUP_BLOCK_BYTES: u32 = MAX_GROUP_BYTES + MAX_GROUP_BYTES / 128 + 1024;

/// Bytes of a compressed group's fields: codec, transform, level, reserved, decoded length.
const GROUP_FIELDS_BYTES: usize = 8;

/// How long a new connection has to send its preamble and header block.
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The longest process-name part of a file name, in bytes (file names are at most 255).
const NAME_MAX: usize = 64;

/// Bytes of an unfinished block that one connection holds, counted in `pool` (every connection's
/// together) against `Limits::max_buffered` as they arrive (not as a peer declares them: a peer
/// that declares a large block and sends little holds little), and given back when dropped.
struct Reserved<'a> {
    pool: &'a AtomicU64,
    held: u64,
}

impl<'a> Reserved<'a> {
    fn new(pool: &'a AtomicU64) -> Reserved<'a> {
        Reserved { pool, held: 0 }
    }

    /// Counts `n` more bytes, unless all connections together would then hold more than `max`.
    fn grow(&mut self, n: u64, max: u64) -> bool {
        // Relaxed: a counter; the compare-and-swap keeps the sum exact.
        let ok = self.pool.fetch_update(Relaxed, Relaxed, |b| (b + n <= max).then_some(b + n)).is_ok();
        if ok {
            self.held += n;
        }
        ok
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        // Relaxed: as in `grow`.
        self.pool.fetch_sub(self.held, Relaxed);
    }
}

/// How reading a block ended.
enum Block {
    /// All of it.
    Whole,
    /// The stream ended after this many of its bytes.
    Cut(usize),
    /// The peer sent nothing for the read timeout, after this many of its bytes.
    Idle(usize),
    /// All connections together would hold more than `Limits::max_buffered`.
    OverLimit,
}

/// Reads `len` bytes into `buf` (cleared first), growing it as they arrive rather than at once,
/// each piece counted against `max` in `held`: a peer that declares a large block and sends little
/// costs little.
fn read_block(r: &mut impl Read, buf: &mut Vec<u8>, len: usize, held: &mut Reserved<'_>, max: u64) -> Block {
    buf.clear();
    let mut chunk = [0u8; 16 << 10];
    while buf.len() < len {
        let want = (len - buf.len()).min(chunk.len());
        match r.read(&mut chunk[..want]) {
            Ok(0) => return Block::Cut(buf.len()),
            Ok(k) => {
                if !held.grow(k as u64, max) {
                    return Block::OverLimit;
                }
                buf.extend_from_slice(&chunk[..k]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => return Block::Idle(buf.len()),
            Err(_) => return Block::Cut(buf.len()),
        }
    }
    Block::Whole
}

/// What one connection left.
#[derive(Debug)]
pub struct Received {
    /// The trace file.
    pub path: PathBuf,
    /// Whole blocks written.
    pub blocks: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Whether the stream ended with its trailer.
    pub complete: bool,
    /// Bytes of a block cut by the disconnection, not written.
    pub cut: u64,
    /// Why the server ended the connection (a limit), if it did.
    pub ended: Option<String>,
    /// With OTLP forwarding: what the connection's forwarder did.
    pub otlp: Option<ForwardStats>,
    /// With OTLP forwarding: what became of the spans it handed to the exporter.
    pub delivered: Option<Tally>,
}

impl Received {
    /// The connection's line, as `phosphor record` prints it: the file, its blocks and bytes,
    /// how the stream ended, and what became of its spans.
    pub fn describe(&self, peer: &str) -> String {
        let end = if let Some(why) = &self.ended {
            format!("ended by the server: {why}; every whole block kept")
        } else if self.complete {
            "complete".to_owned()
        } else if self.cut > 0 {
            format!("disconnected mid-block ({} bytes of it dropped); every whole block kept", self.cut)
        } else {
            "disconnected between blocks; no trailer".to_owned()
        };
        let mut line = format!(
            "{}: {} blocks, {} bytes from {peer}, {end}",
            self.path.display(),
            self.blocks,
            self.bytes
        );
        if let Some(o) = &self.otlp {
            line.push_str(&format!(
                "; OTLP: {} spans made, {} left out by the selection, {} handed to the exporter",
                o.spans_made, o.spans_unselected, o.spans_sent
            ));
            if let Some(t) = &self.delivered {
                line.push_str(&format!(": {}", crate::describe_tally(t)));
            }
            if o.spans_sampled_out + o.spans_tail_dropped > 0 {
                line.push_str(&format!(
                    ", {} left out by head sampling, {} by the tail rules",
                    o.spans_sampled_out, o.spans_tail_dropped
                ));
            }
            if let Some(e) = &o.error {
                line.push_str(&format!(", not forwarded past an error: {e}"));
            }
        }
        line
    }
}

/// Whether a read failed for the socket's read timeout.
fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
}

/// Reads until `buf` is full or the stream ends; returns the bytes read, and whether the read
/// timeout ended it. A broken connection (a reset, a killed client) ends the stream like a close.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> (usize, bool) {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (n, is_timeout(&e)),
        }
    }
    (n, false)
}

/// A file name part made of `s`'s safe characters, at most `NAME_MAX` bytes, never starting with
/// `.` or `-` (a hidden file, or one a shell command would take for an option).
fn sanitize(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' })
        .take(NAME_MAX)
        .collect();
    if t.is_empty() || t.starts_with('.') || t.starts_with('-') {
        format!("trace{}", &t[..t.len().min(NAME_MAX - 5)])
    } else {
        t
    }
}

/// A new file in `dir` named after the process, not overwriting an existing one.
fn create(dir: &Path, name: &str, pid: u32) -> anyhow::Result<(PathBuf, std::fs::File)> {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    for n in 0..1000 {
        let suffix = if n == 0 { String::new() } else { format!("-{n}") };
        let path = dir.join(format!("{}-{pid}-{secs}{suffix}.phos", sanitize(name)));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("{}: cannot create", path.display())),
        }
    }
    bail!("too many files named after {name}-{pid}-{secs} in {}", dir.display())
}

/// Step 1: the preamble and the header block (which name the file), within `HEADER_TIMEOUT`.
fn read_head(input: &mut impl Read, pool: &AtomicU64, limits: Limits) -> anyhow::Result<Vec<u8>> {
    let mut head = vec![0u8; PREAMBLE_BYTES + BLOCK_HEADER_BYTES];
    if read_full(input, &mut head).0 < head.len() || head[..MAGIC.len()] != MAGIC {
        bail!("not a Phosphor trace stream (or no header within {HEADER_TIMEOUT:?})");
    }
    let header_len = u32::from_le_bytes(head[PREAMBLE_BYTES + 4..].try_into().expect("4 bytes"));
    if header_len > MAX_BLOCK_BYTES {
        bail!("a header block of {header_len} bytes");
    }
    let mut rest = Vec::new();
    match read_block(input, &mut rest, header_len as usize, &mut Reserved::new(pool), limits.max_buffered) {
        Block::Whole => head.extend_from_slice(&rest),
        Block::Cut(_) => bail!("the stream ended inside its header"),
        Block::Idle(_) => bail!("no header within {HEADER_TIMEOUT:?}"),
        Block::OverLimit => {
            bail!("its header passed the server's limit of unfinished blocks (--max-buffered)")
        }
    }
    Ok(head)
}

/// Step 2a: the connection shown live, if there is a viewer with room for it.
fn show_live(c: &Connection, path: &Path, header: &Header, report: &dyn Fn(Event<'_>)) -> Option<LiveHandle> {
    let live = c.view.as_ref()?.add_live(path.to_owned(), header);
    if live.is_none() {
        report(Event::NotShown { path });
    }
    live
}

/// Step 2b: the OTLP forwarder, if the connection's spans are forwarded. It gets the same whole
/// blocks as the file (its pipe is bounded: a collector side that cannot keep up slows this
/// connection, as a slow disk would).
fn start_forwarder(c: &Connection, path: &Path) -> anyhow::Result<Option<Forwarder>> {
    let Some((handle, options)) = &c.otlp else { return Ok(None) };
    let forwarder = Forwarder::new(path.display().to_string(), options.clone(), handle.clone())
        .context("cannot start the OTLP forwarder")?;
    Ok(Some(forwarder))
}

/// Copies one connection's trace into a new file in the connection's directory, whole blocks
/// only, within its limits; shown live and forwarded as OTLP spans if the connection says so.
pub(crate) fn receive(
    conn: TcpStream,
    c: &Connection,
    report: &dyn Fn(Event<'_>),
) -> anyhow::Result<Received> {
    let mut acks = conn.try_clone()?;
    // The header must come soon; after it, the idle timeout applies.
    conn.set_read_timeout(Some(HEADER_TIMEOUT))?;
    let timeouts = conn.try_clone()?;
    let mut input = BufReader::with_capacity(64 << 10, conn);
    let head = read_head(&mut input, &c.shared.buffered, c.limits)?;
    timeouts.set_read_timeout(Some(c.limits.idle))?;
    let header = Reader::new(&head[..]).context("a bad header")?.header().clone();
    let (path, file) = create(&c.dir, &header.process_name, header.pid)?;
    // Declared before `out`, so dropped after it: the file is flushed before the viewer is told
    // that it is complete, on every path out of here.
    let _live = show_live(c, &path, &header, report);
    let mut forward = start_forwarder(c, &path)?;
    let mut out = Tee { file: BufWriter::with_capacity(1 << 20, file), forward: forward.as_mut() };
    out.write_all(&head)?;
    let mut got = Received {
        path,
        blocks: 1,
        bytes: head.len() as u64,
        complete: false,
        cut: 0,
        ended: None,
        otlp: None,
        delivered: None,
    };
    copy_blocks(&mut input, &mut out, &mut acks, c, &mut got)?;
    out.flush()?;
    let _ = acks.write_all(&encode_ack(got.bytes));
    drop(out);
    got.otlp = forward.map(Forwarder::finish);
    Ok(got)
}

/// Step 3: every block after the header, written whole, until the trailer or the end of the
/// stream (`got` says which, and how far it got).
fn copy_blocks(
    input: &mut BufReader<TcpStream>,
    out: &mut Tee<'_>,
    acks: &mut TcpStream,
    c: &Connection,
    got: &mut Received,
) -> std::io::Result<()> {
    let mut body = Vec::new();
    let mut flushed = 0;
    while let Some((frame, held)) = next_block(input, &mut body, &c.shared.buffered, c.limits, got) {
        out.write_all(&frame)?;
        out.write_all(&body)?;
        drop(held);
        // A large block's buffer is not kept for the smaller ones that follow.
        if body.capacity() > 1 << 20 {
            body = Vec::new();
        }
        got.blocks += 1;
        got.bytes += (frame.len() + body.len()) as u64;
        if u32::from_le_bytes(frame[..4].try_into().expect("4 bytes")) == kind::TRAILER {
            got.complete = true;
            break;
        }
        // Whole blocks reach the file as soon as the client pauses, or every 256 KiB under a
        // steady stream: readable while recording, and acknowledged. What the file holds beyond
        // the last acknowledgement is what a killed server leaves counted as lost as well.
        if input.buffer().is_empty() || got.bytes - flushed >= ACK_EVERY {
            out.flush()?;
            flushed = got.bytes;
            // The client may be gone already; its next connection is another file.
            let _ = acks.write_all(&encode_ack(got.bytes));
        }
    }
    Ok(())
}

/// The next block: its frame, with its body read into `body` and the bytes it holds counted in
/// `pool`; `None` once the stream ends or the server ends it (`got.cut` and `got.ended` say how).
fn next_block<'p>(
    input: &mut impl Read,
    body: &mut Vec<u8>,
    pool: &'p AtomicU64,
    limits: Limits,
    got: &mut Received,
) -> Option<([u8; BLOCK_HEADER_BYTES], Reserved<'p>)> {
    let idle = || format!("nothing came for {} s (--idle-timeout)", limits.idle.as_secs());
    let mut frame = [0u8; BLOCK_HEADER_BYTES];
    let (n, timed_out) = read_full(input, &mut frame);
    if n < frame.len() {
        got.cut = n as u64;
        got.ended = timed_out.then(idle);
        return None;
    }
    let block_kind = u32::from_le_bytes(frame[..4].try_into().expect("4 bytes"));
    let len = u32::from_le_bytes(frame[4..].try_into().expect("4 bytes"));
    if let Some(why) = frame_fault(block_kind, len, got.bytes) {
        got.ended = Some(why);
        return None;
    }
    let mut held = Reserved::new(pool);
    let cut = match read_block(input, body, len as usize, &mut held, limits.max_buffered) {
        Block::Whole => None,
        Block::Cut(n) => Some((n, None)),
        Block::Idle(n) => Some((n, Some(idle()))),
        Block::OverLimit => Some((
            body.len(),
            Some(format!(
                "a block of {len} bytes at byte {} passed the server's limit of unfinished \
                 blocks (--max-buffered, {} MiB for all connections)",
                got.bytes,
                limits.max_buffered >> 20
            )),
        )),
    };
    let cut = cut.or_else(|| group_fault(block_kind, body, got.bytes).map(|why| (body.len(), Some(why))));
    if let Some((n, why)) = cut {
        got.cut = (frame.len() + n) as u64;
        got.ended = why;
        return None;
    }
    Some((frame, held))
}

/// Why a block's frame (its kind and length, at byte `at`) ends the connection, if it does: a
/// length over the format's, or a compressed group's outside its bounds.
fn frame_fault(block_kind: u32, len: u32, at: u64) -> Option<String> {
    if len > MAX_BLOCK_BYTES {
        return Some(format!("a block of {len} bytes at byte {at}, over the format's {MAX_BLOCK_BYTES}"));
    }
    if block_kind == kind::COMPRESSED && !(GROUP_FIELDS_BYTES as u32..=MAX_GROUP_BLOCK_BYTES).contains(&len) {
        return Some(format!(
            "a compressed group of {len} bytes at byte {at}, not within {GROUP_FIELDS_BYTES} to \
             {MAX_GROUP_BLOCK_BYTES}"
        ));
    }
    None
}

/// Why a whole block's body (at byte `at`) ends the connection, if it does: a compressed group
/// that declares more decoded bytes than the format's cap.
fn group_fault(block_kind: u32, body: &[u8], at: u64) -> Option<String> {
    if block_kind != kind::COMPRESSED {
        return None;
    }
    let decoded = u32::from_le_bytes(body[4..GROUP_FIELDS_BYTES].try_into().expect("4 bytes"));
    (decoded > MAX_GROUP_BYTES).then(|| {
        format!(
            "a compressed group at byte {at} declares {decoded} bytes decoded, over the format's \
             {MAX_GROUP_BYTES}"
        )
    })
}

/// The file, and the forwarder if any: both get every whole block.
struct Tee<'a> {
    file: BufWriter<std::fs::File>,
    forward: Option<&'a mut Forwarder>,
}

impl Tee<'_> {
    fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.file.write_all(data)?;
        if let Some(f) = self.forward.as_mut() {
            f.write_all(data)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_part_is_bounded_and_never_an_option_or_hidden() {
        assert_eq!(sanitize("my app/v2"), "my_app_v2");
        assert_eq!(sanitize("-rf"), "trace-rf");
        assert_eq!(sanitize(".hidden"), "trace.hidden");
        assert_eq!(sanitize(""), "trace");
        let long = sanitize(&"x".repeat(300));
        assert_eq!(long.len(), NAME_MAX);
        assert!(sanitize(&format!("-{}", "y".repeat(300))).len() <= NAME_MAX);
        // Multi-byte characters become one `_` each: the bound is in bytes.
        assert_eq!(sanitize("é"), "_");
    }
}
