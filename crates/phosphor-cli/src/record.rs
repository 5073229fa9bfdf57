//! `phosphor record --listen ADDR --out DIR`: the recording server. Traced programs stream their
//! trace to it (a datastream with `Sink::Tcp`); it writes one trace file per connection, named by
//! process name, pid and time.
//!
//! The server copies the byte stream block by block (`docs/FORMAT.md` framing), writing only whole
//! blocks: a client that disconnects mid-chunk leaves a file that holds every complete block
//! before it, which the tools read as a trace without a trailer. After each flush to the file it
//! acknowledges: it sends the number of bytes the file holds (8 bytes, little-endian), so the
//! client counts exactly what a dying server took with it. Each connection has a thread of its
//! own, so many programs record at once. It listens on loopback unless `--any-address`.
//!
//! A compressed stream (format 1.7) is stored as it comes: each compressed group is one block,
//! copied without being decoded, so recording costs the same whatever the codec. Its framing is
//! checked like any block's, and more tightly: a group's block may hold no more than the format's
//! largest group compressed ([`MAX_GROUP_BLOCK_BYTES`]), and must declare a decoded length within
//! the format's cap, so a hostile peer cannot make the server hold, or a reader later decode, more.
//!
//! A hostile or broken client costs little: buffers grow as bytes arrive (a frame that declares a
//! 64 MiB block costs nothing until the bytes come), the bytes that all connections' unfinished
//! blocks hold together are capped (`--max-buffered`), so are the connections (`--max-connections`),
//! a peer must send its header within `HEADER_TIMEOUT` and then something at least every
//! `--idle-timeout` seconds, and the file name is bounded and sanitised. A connection the server
//! refuses (one over `--max-connections`) or ends (a limit passed, an idle peer, a bad header) is
//! told why with an `end` message (`phosphor_format::file::ack`) before it is closed, so the
//! client counts a refusal apart from a broken connection and waits before it tries again.
//!
//! With `--view ADDR`, the viewer's server (`phosphor-view`) runs in the same process and shows
//! each connection as it is recorded: a live model per connection reads its file as it grows
//! (`phosphor_view::live`), so the recording itself never waits for the viewer; once a
//! connection ends, its trace is indexed beside the file and served like `phosphor view`'s.

use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use phosphor::format::file::ack::{encode_ack, encode_end};
use phosphor::format::file::{
    kind, Reader, BLOCK_HEADER_BYTES, MAGIC, MAX_BLOCK_BYTES, MAX_GROUP_BYTES, PREAMBLE_BYTES,
};
use phosphor_otlp::export::{ExportHandle, Exporter, Tally};
use phosphor_otlp::forward::{ForwardOptions, ForwardStats, Forwarder};
use phosphor_otlp::select::Selection;
use phosphor_view::server::{serve, Traces};
use phosphor_view::LiveOptions;

mod otlp;

/// The most bytes written to a file before it is flushed and acknowledged.
const ACK_EVERY: u64 = 256 << 10;

/// The longest compressed group block: the fields (8 bytes) and the largest group
/// ([`MAX_GROUP_BYTES`] decoded) as the worst input grows under either codec (LZ4: by n/255 + 16
/// bytes; zstd: by about n/256 + 64), with room to spare.
pub const MAX_GROUP_BLOCK_BYTES: u32 = MAX_GROUP_BYTES + MAX_GROUP_BYTES / 128 + 1024;

/// Bytes of a compressed group's fields: codec, transform, level, reserved, decoded length.
const GROUP_FIELDS_BYTES: usize = 8;

/// How long a new connection has to send its preamble and header block.
const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The longest process-name part of a file name, in bytes (file names are at most 255).
const NAME_MAX: usize = 64;

/// Refusals being delivered at once (each on a short-lived thread); past it, a refused connection
/// is closed without its reason.
const MAX_REFUSING: usize = 16;

/// Bytes of unfinished blocks held by every connection together, and the limit (`--max-buffered`).
static BUFFERED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Options of `phosphor record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Where to listen, e.g. 127.0.0.1:7777 (port 0 picks one; the address is printed).
    #[arg(long)]
    listen: SocketAddr,
    /// The directory of the trace files (created if needed).
    #[arg(
        short = 'o',
        long = "output",
        visible_alias = "out",
        value_name = "DIR",
        default_value = "phosphor-records"
    )]
    out: PathBuf,
    /// Allow an address other than loopback (anyone who can reach it can write files here).
    #[arg(long)]
    any_address: bool,
    /// Exit after this many connections have ended (for scripts and tests; default: never).
    #[arg(long)]
    connections: Option<u64>,
    /// The most connections at once; one more is closed at once (the client retries later).
    #[arg(long, default_value_t = 256)]
    max_connections: usize,
    /// The most bytes of unfinished blocks all connections may hold together (MiB); a connection
    /// whose block would pass it is ended, keeping every whole block it sent.
    #[arg(long, default_value_t = 256)]
    max_buffered: u64,
    /// Seconds a connection may send nothing before it is ended (its file keeps every whole block).
    #[arg(long, default_value_t = 300)]
    idle_timeout: u64,
    /// Also serve the viewer here (port 0 picks one), showing the connections live; its URL is
    /// the second line on stdout (`view http://HOST:PORT/`).
    #[arg(long, value_name = "ADDR")]
    view: Option<SocketAddr>,
    /// With --view: do not open a browser.
    #[arg(long, requires = "view")]
    no_open: bool,
    /// With --view: the most records (slices, points, samples) the live view keeps per
    /// connection; the oldest are dropped past it (counted and shown). About 32 bytes each.
    #[arg(long, requires = "view", default_value_t = 2_000_000)]
    view_records: usize,
    /// Also forward what each connection records, as OpenTelemetry spans, to the collector at
    /// this OTLP/HTTP URL (e.g. http://127.0.0.1:4318; plain http); without a URL, to
    /// OTEL_EXPORTER_OTLP_ENDPOINT (else http://localhost:4318). The other OTEL_* variables
    /// apply. The figures of each connection follow its line; the exporter's are printed on
    /// standard error at exit, and on SIGINT/SIGTERM after a drain.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    otlp: Option<String>,
    /// With --otlp: a header added to every request (`NAME=VALUE`: authentication, tenant);
    /// repeatable.
    #[arg(long, value_name = "NAME=VALUE", requires = "otlp", value_parser = parse_header)]
    otlp_header: Vec<(String, String)>,
    /// With --otlp: only spans at least this long (`500us`, `2ms`, `1s`, or ns).
    #[arg(long, value_name = "DURATION", requires = "otlp", value_parser = crate::convert::otlp::parse_duration)]
    otlp_min_duration: Option<u64>,
    /// With --otlp: only root spans.
    #[arg(long, requires = "otlp")]
    otlp_roots_only: bool,
    /// With --otlp: only spans whose scope path (`frame/update`) matches this glob; repeatable.
    #[arg(long = "otlp-path", value_name = "GLOB", requires = "otlp")]
    otlp_paths: Vec<String>,
    #[command(flatten)]
    otlp_sampling: crate::convert::otlp::RecordOtlpArgs,
    /// With --otlp: `service.name` (default: the traced process's name).
    #[arg(long, value_name = "NAME", requires = "otlp")]
    otlp_service_name: Option<String>,
    /// With --otlp: how long (trace time) a finished span waits for an enclosing scope before it
    /// is sent as a root.
    #[arg(long, value_name = "DURATION", requires = "otlp", default_value = "2s", value_parser = crate::convert::otlp::parse_duration)]
    otlp_hold: u64,
    #[command(flatten)]
    otlp_export: otlp::OtlpExportArgs,
}

/// Parses `NAME=VALUE`.
fn parse_header(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_owned(), value.to_owned())),
        _ => Err(format!("{text:?} is not NAME=VALUE")),
    }
}

impl RecordArgs {
    /// How each connection's spans are made and sent, with `--otlp`.
    fn forward_options(&self) -> ForwardOptions {
        ForwardOptions {
            selection: Selection {
                min_duration_ns: self.otlp_min_duration,
                roots_only: self.otlp_roots_only,
                paths: self.otlp_paths.clone(),
                slowest_roots: None,
                sampling: self.otlp_sampling.sampling(),
                tail: self.otlp_sampling.tail_rules(),
            },
            group_roots: self.otlp_sampling.group_roots(),
            hold: std::time::Duration::from_nanos(self.otlp_hold),
            service_name: self.otlp_service_name.clone(),
            ..ForwardOptions::default()
        }
    }
}

/// The limits a connection's thread applies.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Bytes of unfinished blocks all connections may hold together.
    pub max_buffered: u64,
    /// How long a connection may send nothing.
    pub idle: std::time::Duration,
}

/// Runs the server: prints `listening on ADDR`, with `--view` then `view URL`, then a line per
/// ended connection.
pub fn run(args: &RecordArgs) -> anyhow::Result<()> {
    if !args.listen.ip().is_loopback() && !args.any_address {
        bail!("{} is not a loopback address; pass --any-address to listen there", args.listen);
    }
    if let Some(view) = args.view.filter(|v| !v.ip().is_loopback() && !args.any_address) {
        bail!("{view} is not a loopback address; pass --any-address to serve the viewer there");
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("{}: cannot create", args.out.display()))?;
    let listener =
        TcpListener::bind(args.listen).with_context(|| format!("cannot listen on {}", args.listen))?;
    let viewer = match args.view {
        Some(addr) => {
            Some(TcpListener::bind(addr).with_context(|| format!("cannot serve the viewer on {addr}"))?)
        }
        None => None,
    };
    let mut forward_options = args.forward_options();
    let exporter = match &args.otlp {
        Some(url) => {
            let (options, service) = otlp::export_options(url, &args.otlp_header, &args.otlp_export)?;
            forward_options.service_name = forward_options.service_name.or(service);
            Some(Exporter::start(options).context("--otlp")?)
        }
        None => None,
    };
    let export = exporter.as_ref().map(|e| (e.handle(), forward_options));
    let exporter = otlp::ExportSlot::new(exporter);
    let open_conns = otlp::Open::default();
    if args.otlp.is_some() {
        otlp::drain_on_signals(open_conns.clone(), exporter.clone())?;
    }
    println!("listening on {}", listener.local_addr()?);
    let traces = match viewer {
        Some(viewer) => Some(start_viewer(viewer, args, listener.local_addr()?)?),
        None => None,
    };
    std::io::stdout().flush()?;
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    if let Some(n) = args.connections {
        // Exit once `n` connections have ended.
        let exporter = exporter.clone();
        std::thread::spawn(move || {
            for _ in 0..n {
                if done_rx.recv().is_err() {
                    return;
                }
            }
            // The spans handed to the exporter are sent (within its deadline) before the exit.
            exporter.finish();
            std::process::exit(0);
        });
    }
    let limits = Limits {
        max_buffered: args.max_buffered.saturating_mul(1 << 20),
        idle: std::time::Duration::from_secs(args.idle_timeout.max(1)),
    };
    let open = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let refusing = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let peer = conn.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        // Relaxed: a count; only this thread increments it.
        if open.load(std::sync::atomic::Ordering::Relaxed) >= args.max_connections {
            let why = format!("refused: {} connections already (--max-connections)", args.max_connections);
            eprintln!("phosphor record: {peer}: {why}");
            refuse(conn, why, &refusing);
            continue;
        }
        // Relaxed: as above.
        open.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (dir, done, open) = (args.out.clone(), done_tx.clone(), open.clone());
        let view = traces.clone();
        // The connection's own share of the exporter's figures, for its line.
        let export = export.as_ref().map(|(h, o)| (h.tallied(), o.clone()));
        let open_conns = open_conns.clone();
        std::thread::spawn(move || {
            let ender = conn.try_clone().ok();
            let key = open_conns.add(&conn);
            let received = receive(conn, &dir, limits, view.as_ref(), export.as_ref().map(|(h, o)| (h, o)));
            open_conns.remove(key);
            match received {
                Ok(mut r) => {
                    r.delivered = export.as_ref().map(|(h, _)| otlp::settled(h));
                    if let (Some(why), Some(c)) = (&r.ended, ender) {
                        end_connection(c, why);
                    }
                    println!("{}", r.describe(&peer));
                }
                Err(e) => {
                    if let Some(c) = ender {
                        end_connection(c, &format!("{e:#}"));
                    }
                    eprintln!("phosphor record: {peer}: {e:#}");
                }
            }
            let _ = std::io::stdout().flush();
            // Relaxed: a count.
            open.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            let _ = done.send(());
        });
    }
    Ok(())
}

/// Serves the viewer on `listener` (on threads of its own) for the connections to come to the
/// recorder at `recorder`, prints its URL, and opens a browser unless `--no-open`.
fn start_viewer(
    listener: TcpListener,
    args: &RecordArgs,
    recorder: std::net::SocketAddr,
) -> anyhow::Result<Arc<Traces>> {
    let options = LiveOptions { max_records: args.view_records.max(1), ..LiveOptions::default() };
    let traces = Arc::new(Traces::live(options));
    // The page says where programs are to connect until one does.
    traces.set_listening(recorder.to_string());
    let url = format!("http://{}/", listener.local_addr()?);
    println!("view {url}");
    let serving = traces.clone();
    std::thread::Builder::new().name("phosphor-view".into()).spawn(move || {
        if let Err(e) = serve(serving, listener) {
            eprintln!("phosphor record: the viewer stopped: {e}");
        }
    })?;
    if !args.no_open {
        if let Err(e) = webbrowser::open(&url) {
            eprintln!("could not open a browser ({e}); open {url}");
        }
    }
    Ok(traces)
}

/// Tells a refused connection why on a thread of its own (at most `MAX_REFUSING` at once), so the
/// accept loop goes on at once.
fn refuse(conn: TcpStream, why: String, refusing: &std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering::Relaxed;
    // Relaxed: a count; the compare-and-swap keeps it within the limit.
    if refusing.fetch_update(Relaxed, Relaxed, |n| (n < MAX_REFUSING).then_some(n + 1)).is_err() {
        return;
    }
    let count = refusing.clone();
    let spawned = std::thread::Builder::new().name("refuse".into()).spawn(move || {
        end_connection(conn, &why);
        // Relaxed: as above.
        count.fetch_sub(1, Relaxed);
    });
    if spawned.is_err() {
        // Relaxed: as above.
        refusing.fetch_sub(1, Relaxed);
    }
}

/// Sends the `end` message saying `why`, then closes the connection once the client has closed
/// its side (or after a second): closing with the client's bytes unread would reset the
/// connection, which can lose the message before the client reads it.
fn end_connection(conn: TcpStream, why: &str) {
    let _ = conn.set_write_timeout(Some(std::time::Duration::from_secs(1)));
    if (&conn).write_all(&encode_end(why)).is_err() {
        return;
    }
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    let mut sink = [0u8; 16 << 10];
    let mut drained = 0usize;
    while drained < 16 << 20 {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() || conn.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match (&conn).read(&mut sink) {
            Ok(0) => break,
            Ok(n) => drained += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Bytes of an unfinished block that one connection holds, counted against
/// `Limits::max_buffered` as they arrive (not as a peer declares them: a peer that declares a
/// large block and sends little holds little), and given back when dropped.
#[derive(Default)]
struct Reserved(u64);

impl Reserved {
    /// Counts `n` more bytes, unless all connections together would then hold more than `max`.
    fn grow(&mut self, n: u64, max: u64) -> bool {
        // Relaxed: a counter; the compare-and-swap keeps the sum exact.
        let ok = BUFFERED
            .fetch_update(std::sync::atomic::Ordering::Relaxed, std::sync::atomic::Ordering::Relaxed, |b| {
                (b + n <= max).then_some(b + n)
            })
            .is_ok();
        if ok {
            self.0 += n;
        }
        ok
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        // Relaxed: as in `take`.
        BUFFERED.fetch_sub(self.0, std::sync::atomic::Ordering::Relaxed);
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
fn read_block(r: &mut impl Read, buf: &mut Vec<u8>, len: usize, held: &mut Reserved, max: u64) -> Block {
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
    /// With `--otlp`: what the connection's forwarder did.
    pub otlp: Option<ForwardStats>,
    /// With `--otlp`: what became of the spans it handed to the exporter.
    pub delivered: Option<Tally>,
}

impl Received {
    fn describe(&self, peer: &str) -> String {
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
                line.push_str(&format!(": {}", otlp::describe_tally(t)));
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

/// Copies one connection's trace into a new file in `dir`, whole blocks only, within `limits`;
/// shown live by `view` if given, and forwarded as OTLP spans to `otlp` (the exporter, and how
/// spans are made) if given.
pub fn receive(
    conn: TcpStream,
    dir: &Path,
    limits: Limits,
    view: Option<&Arc<Traces>>,
    otlp: Option<(&ExportHandle, &ForwardOptions)>,
) -> anyhow::Result<Received> {
    let mut acks = conn.try_clone()?;
    // The header must come soon; after it, the idle timeout applies.
    conn.set_read_timeout(Some(HEADER_TIMEOUT))?;
    let timeouts = conn.try_clone()?;
    let mut input = BufReader::with_capacity(64 << 10, conn);
    // The preamble and the header block name the file.
    let mut head = vec![0u8; PREAMBLE_BYTES + BLOCK_HEADER_BYTES];
    if read_full(&mut input, &mut head).0 < head.len() || head[..MAGIC.len()] != MAGIC {
        bail!("not a Phosphor trace stream (or no header within {HEADER_TIMEOUT:?})");
    }
    let header_len = u32::from_le_bytes(head[PREAMBLE_BYTES + 4..].try_into().expect("4 bytes"));
    if header_len > MAX_BLOCK_BYTES {
        bail!("a header block of {header_len} bytes");
    }
    let mut rest = Vec::new();
    match read_block(
        &mut input,
        &mut rest,
        header_len as usize,
        &mut Reserved::default(),
        limits.max_buffered,
    ) {
        Block::Whole => head.extend_from_slice(&rest),
        Block::Cut(_) => bail!("the stream ended inside its header"),
        Block::Idle(_) => bail!("no header within {HEADER_TIMEOUT:?}"),
        Block::OverLimit => {
            bail!("its header passed the server's limit of unfinished blocks (--max-buffered)")
        }
    }
    timeouts.set_read_timeout(Some(limits.idle))?;
    let header = Reader::new(&head[..]).context("a bad header")?.header().clone();
    let (path, file) = create(dir, &header.process_name, header.pid)?;
    // Declared before `out`, so dropped after it: the file is flushed before the viewer is told
    // that it is complete, on every path out of here.
    let _live = view.and_then(|v| {
        let live = v.add_live(path.clone(), &header);
        if live.is_none() {
            eprintln!("phosphor record: {}: recorded, but not shown: the viewer is full", path.display());
        }
        live
    });
    // The forwarder gets the same whole blocks as the file (its pipe is bounded: a collector side
    // that cannot keep up slows this connection, as a slow disk would).
    let mut forward = match otlp {
        Some((h, options)) => Some(
            Forwarder::new(path.display().to_string(), options.clone(), h.clone())
                .context("cannot start the OTLP forwarder")?,
        ),
        None => None,
    };
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
    let idle = || format!("nothing came for {} s (--idle-timeout)", limits.idle.as_secs());
    let mut body = Vec::new();
    let mut flushed = 0;
    loop {
        let mut frame = [0u8; BLOCK_HEADER_BYTES];
        let (n, timed_out) = read_full(&mut input, &mut frame);
        if n < frame.len() {
            got.cut = n as u64;
            got.ended = timed_out.then(idle);
            break;
        }
        let block_kind = u32::from_le_bytes(frame[..4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(frame[4..].try_into().expect("4 bytes"));
        if len > MAX_BLOCK_BYTES {
            got.ended = Some(format!(
                "a block of {len} bytes at byte {}, over the format's {MAX_BLOCK_BYTES}",
                got.bytes
            ));
            break;
        }
        if block_kind == kind::COMPRESSED
            && !(GROUP_FIELDS_BYTES as u32..=MAX_GROUP_BLOCK_BYTES).contains(&len)
        {
            got.ended = Some(format!(
                "a compressed group of {len} bytes at byte {}, not within {GROUP_FIELDS_BYTES} to \
                 {MAX_GROUP_BLOCK_BYTES}",
                got.bytes
            ));
            break;
        }
        let mut held = Reserved::default();
        match read_block(&mut input, &mut body, len as usize, &mut held, limits.max_buffered) {
            Block::Whole => {}
            Block::Cut(n) => {
                got.cut = (frame.len() + n) as u64;
                break;
            }
            Block::Idle(n) => {
                got.cut = (frame.len() + n) as u64;
                got.ended = Some(idle());
                break;
            }
            Block::OverLimit => {
                got.cut = (frame.len() + body.len()) as u64;
                got.ended = Some(format!(
                    "a block of {len} bytes at byte {} passed the server's limit of unfinished \
                     blocks (--max-buffered, {} MiB for all connections)",
                    got.bytes,
                    limits.max_buffered >> 20
                ));
                break;
            }
        }
        if block_kind == kind::COMPRESSED {
            let decoded = u32::from_le_bytes(body[4..GROUP_FIELDS_BYTES].try_into().expect("4 bytes"));
            if decoded > MAX_GROUP_BYTES {
                got.cut = (frame.len() + body.len()) as u64;
                got.ended = Some(format!(
                    "a compressed group at byte {} declares {decoded} bytes decoded, over the \
                     format's {MAX_GROUP_BYTES}",
                    got.bytes
                ));
                break;
            }
        }
        out.write_all(&frame)?;
        out.write_all(&body)?;
        drop(held);
        // A large block's buffer is not kept for the smaller ones that follow.
        if body.capacity() > 1 << 20 {
            body = Vec::new();
        }
        got.blocks += 1;
        got.bytes += (frame.len() + body.len()) as u64;
        if block_kind == kind::TRAILER {
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
    out.flush()?;
    let _ = acks.write_all(&encode_ack(got.bytes));
    drop(out);
    got.otlp = forward.map(Forwarder::finish);
    Ok(got)
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
