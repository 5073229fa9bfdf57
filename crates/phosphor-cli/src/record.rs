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

use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use phosphor::format::file::{kind, Reader, BLOCK_HEADER_BYTES, MAGIC, MAX_BLOCK_BYTES, PREAMBLE_BYTES};

/// The most bytes written to a file before it is flushed and acknowledged.
const ACK_EVERY: u64 = 256 << 10;

/// Options of `phosphor record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Where to listen, e.g. 127.0.0.1:7777 (port 0 picks one; the address is printed).
    #[arg(long)]
    listen: SocketAddr,
    /// The directory of the trace files (created if needed).
    #[arg(long, default_value = "phosphor-records")]
    out: PathBuf,
    /// Allow an address other than loopback (anyone who can reach it can write files here).
    #[arg(long)]
    any_address: bool,
    /// Exit after this many connections have ended (for scripts and tests; default: never).
    #[arg(long)]
    connections: Option<u64>,
}

/// Runs the server: prints `listening on ADDR`, then a line per ended connection.
pub fn run(args: &RecordArgs) -> anyhow::Result<()> {
    if !args.listen.ip().is_loopback() && !args.any_address {
        bail!("{} is not a loopback address; pass --any-address to listen there", args.listen);
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("{}: cannot create", args.out.display()))?;
    let listener =
        TcpListener::bind(args.listen).with_context(|| format!("cannot listen on {}", args.listen))?;
    println!("listening on {}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    if let Some(n) = args.connections {
        // Exit once `n` connections have ended.
        std::thread::spawn(move || {
            for _ in 0..n {
                if done_rx.recv().is_err() {
                    return;
                }
            }
            std::process::exit(0);
        });
    }
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let (dir, done) = (args.out.clone(), done_tx.clone());
        std::thread::spawn(move || {
            let peer = conn.peer_addr().map(|a| a.to_string()).unwrap_or_default();
            match receive(conn, &dir) {
                Ok(r) => println!("{}", r.describe(&peer)),
                Err(e) => eprintln!("phosphor record: {peer}: {e:#}"),
            }
            let _ = std::io::stdout().flush();
            let _ = done.send(());
        });
    }
    Ok(())
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
}

impl Received {
    fn describe(&self, peer: &str) -> String {
        let end = if self.complete {
            "complete".to_owned()
        } else if self.cut > 0 {
            format!("disconnected mid-block ({} bytes of it dropped); every whole block kept", self.cut)
        } else {
            "disconnected between blocks; no trailer".to_owned()
        };
        format!("{}: {} blocks, {} bytes from {peer}, {end}", self.path.display(), self.blocks, self.bytes)
    }
}

/// Reads until `buf` is full or the stream ends; returns the bytes read. A broken connection (a
/// reset, a killed client) ends the stream like a close.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    Ok(n)
}

/// A file name made of `s`'s safe characters.
fn sanitize(s: &str) -> String {
    let t: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    if t.is_empty() || t.starts_with('.') {
        format!("trace{t}")
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

/// Copies one connection's trace into a new file in `dir`, whole blocks only.
pub fn receive(conn: TcpStream, dir: &Path) -> anyhow::Result<Received> {
    let mut acks = conn.try_clone()?;
    let mut input = BufReader::with_capacity(1 << 20, conn);
    // The preamble and the header block name the file.
    let mut head = vec![0u8; PREAMBLE_BYTES + BLOCK_HEADER_BYTES];
    if read_full(&mut input, &mut head)? < head.len() || head[..MAGIC.len()] != MAGIC {
        bail!("not a Phosphor trace stream");
    }
    let header_len = u32::from_le_bytes(head[PREAMBLE_BYTES + 4..].try_into().expect("4 bytes"));
    if header_len > MAX_BLOCK_BYTES {
        bail!("a header block of {header_len} bytes");
    }
    let start = head.len();
    head.resize(start + header_len as usize, 0);
    if read_full(&mut input, &mut head[start..])? < header_len as usize {
        bail!("the stream ended inside its header");
    }
    let header = Reader::new(&head[..]).context("a bad header")?.header().clone();
    let (path, file) = create(dir, &header.process_name, header.pid)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    out.write_all(&head)?;
    let mut got = Received { path, blocks: 1, bytes: head.len() as u64, complete: false, cut: 0 };
    let mut body = Vec::new();
    let mut flushed = 0;
    loop {
        let mut frame = [0u8; BLOCK_HEADER_BYTES];
        let n = read_full(&mut input, &mut frame)?;
        if n < frame.len() {
            got.cut = n as u64;
            break;
        }
        let block_kind = u32::from_le_bytes(frame[..4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(frame[4..].try_into().expect("4 bytes"));
        if len > MAX_BLOCK_BYTES {
            bail!(
                "{}: a block of {len} bytes at byte {}; the file keeps what came before",
                got.path.display(),
                got.bytes
            );
        }
        body.resize(len as usize, 0);
        let n = read_full(&mut input, &mut body)?;
        if n < body.len() {
            got.cut = (frame.len() + n) as u64;
            break;
        }
        out.write_all(&frame)?;
        out.write_all(&body)?;
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
            let _ = acks.write_all(&got.bytes.to_le_bytes());
        }
    }
    out.flush()?;
    let _ = acks.write_all(&got.bytes.to_le_bytes());
    Ok(got)
}
