//! Phosphor's recording server. Traced programs stream their trace to it (a datastream with
//! `Sink::Tcp`); it writes one trace file per connection, named by process name, pid and time.
//! `phosphor record` is this crate with its flags turned into [`Options`].
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use phosphor_record::{Event, Options, RecordServer};
//! let server = RecordServer::bind("127.0.0.1:7777".parse()?, "traces".as_ref())?;
//! println!("listening on {}", server.local_addr()?);
//! server.run(Options::default(), |event| {
//!     if let Event::Ended { peer, received } = event {
//!         println!("{}", received.describe(peer));
//!     }
//! })
//! # }
//! ```
//!
//! The server copies the byte stream block by block (`docs/FORMAT.md` framing), writing only whole
//! blocks: a client that disconnects mid-chunk leaves a file that holds every complete block
//! before it, which the tools read as a trace without a trailer. After each flush to the file it
//! acknowledges: it sends the number of bytes the file holds (8 bytes, little-endian), so the
//! client counts exactly what a dying server took with it. Each connection has a thread of its
//! own, so many programs record at once.
//!
//! A compressed stream (format 1.7) is stored as it comes: each compressed group is one block,
//! copied without being decoded, so recording costs the same whatever the codec. Its framing is
//! checked like any block's, and more tightly: a group's block may hold no more than the format's
//! largest group compressed ([`MAX_GROUP_BLOCK_BYTES`]), and must declare a decoded length within
//! the format's cap, so a hostile peer cannot make the server hold, or a reader later decode, more.
//!
//! A hostile or broken client costs little: buffers grow as bytes arrive (a frame that declares a
//! 64 MiB block costs nothing until the bytes come), the bytes that all connections' unfinished
//! blocks hold together are capped ([`Limits::max_buffered`], `--max-buffered`), so are the
//! connections ([`Options::max_connections`]), a peer must send its header within
//! [`HEADER_TIMEOUT`] and then something at least every [`Limits::idle`], and the file name is
//! bounded and sanitised. A connection the server refuses (one over the most connections) or ends
//! (a limit passed, an idle peer, a bad header) is told why with an `end` message
//! (`phosphor_format::file::ack`) before it is closed, so the client counts a refusal apart from a
//! broken connection and waits before it tries again.
//!
//! With [`Options::view`], the viewer's traces (`phosphor_view::server`) show each connection as
//! it is recorded: a live model per connection reads its file as it grows (`phosphor_view::live`),
//! so the recording itself never waits for the viewer; once a connection ends, its trace is
//! indexed beside the file and served like `phosphor view`'s. With [`Options::otlp`], each
//! connection's whole blocks are also handed to an OTLP forwarder (`phosphor_otlp::forward`).
//!
//! Modules: `receive` copies one connection's stream into its file (its steps: the header, the
//! outputs, each block); `ending` tells a refused or ended peer why; `otlp` holds the open
//! connections (ended at once by a [`Drain`]) and a connection's share of the exporter's figures.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use anyhow::Context;
use phosphor_otlp::export::ExportHandle;
use phosphor_otlp::forward::ForwardOptions;
use phosphor_view::server::Traces;

mod ending;
mod otlp;
mod receive;

pub use otlp::{describe_export, describe_tally};
pub use receive::{Received, HEADER_TIMEOUT, MAX_GROUP_BLOCK_BYTES};

/// The limits a connection's thread applies.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Bytes of unfinished blocks all connections may hold together (`--max-buffered`).
    pub max_buffered: u64,
    /// How long a connection may send nothing (`--idle-timeout`).
    pub idle: std::time::Duration,
}

impl Default for Limits {
    /// `phosphor record`'s defaults: 256 MiB, 300 s.
    fn default() -> Limits {
        Limits { max_buffered: 256 << 20, idle: std::time::Duration::from_secs(300) }
    }
}

/// How the server records.
#[derive(Clone)]
pub struct Options {
    /// The most connections at once; one more is refused (told why, and closed).
    pub max_connections: usize,
    /// What each connection may cost.
    pub limits: Limits,
    /// The viewer's traces (`Traces::live`), to show each connection as it is recorded.
    pub view: Option<Arc<Traces>>,
    /// The exporter, and how each connection's spans are made, to forward them as OTLP spans.
    pub otlp: Option<(ExportHandle, ForwardOptions)>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("max_connections", &self.max_connections)
            .field("limits", &self.limits)
            .field("view", &self.view.is_some())
            .field("otlp", &self.otlp.as_ref().map(|(_, o)| o))
            .finish()
    }
}

impl Default for Options {
    /// `phosphor record`'s defaults: 256 connections, [`Limits::default`], no viewer, no OTLP.
    fn default() -> Options {
        Options { max_connections: 256, limits: Limits::default(), view: None, otlp: None }
    }
}

/// What the server reports, to the function given to [`RecordServer::run`] (called from the
/// accept loop and from the connections' threads).
#[derive(Debug)]
pub enum Event<'a> {
    /// A connection over [`Options::max_connections`] is refused; it is told `why`.
    Refused {
        /// The peer's address.
        peer: &'a str,
        /// The reason it is told.
        why: &'a str,
    },
    /// A connection is recorded but not shown: the viewer holds as many traces as it may.
    NotShown {
        /// Its trace file.
        path: &'a Path,
    },
    /// A connection ended and its file is complete (whole blocks only); `received` says how far
    /// it got, [`Received::describe`] as a line.
    Ended {
        /// The peer's address.
        peer: &'a str,
        /// What it left.
        received: &'a Received,
    },
    /// A connection failed (no header, a bad one, a file that could not be written).
    Failed {
        /// The peer's address.
        peer: &'a str,
        /// Why.
        error: &'a anyhow::Error,
    },
}

/// State shared by the accept loop, the connections and [`Drain`].
#[derive(Debug, Default)]
struct Shared {
    /// Bytes of unfinished blocks held by every connection together.
    buffered: AtomicU64,
    /// Set once a drain has begun: connections wait no more for the collector.
    draining: AtomicBool,
    /// The open connections, so a drain can end them.
    open: otlp::Open,
}

/// A listening recording server: [`bind`](RecordServer::bind), then [`run`](RecordServer::run).
#[derive(Debug)]
pub struct RecordServer {
    listener: TcpListener,
    dir: PathBuf,
    shared: Arc<Shared>,
}

/// Ends every open connection at once, from another thread (a signal's): see [`Drain::begin`].
#[derive(Clone, Debug)]
pub struct Drain(Arc<Shared>);

impl Drain {
    /// Stops taking data: every open connection's socket is shut for reading, so each ends as a
    /// disconnected one (every whole block kept) and hands its last spans to the exporter without
    /// waiting for the collector; waits a little (2 s at most) for them to finish.
    pub fn begin(&self) {
        self.0.draining.store(true, std::sync::atomic::Ordering::SeqCst);
        self.0.open.end_all();
    }
}

impl RecordServer {
    /// Creates `dir` (the trace files' directory) if needed and listens on `addr`.
    pub fn bind(addr: SocketAddr, dir: &Path) -> anyhow::Result<RecordServer> {
        std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
        let listener = TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
        Ok(RecordServer { listener, dir: dir.to_owned(), shared: Arc::default() })
    }

    /// The address it listens on (port 0 picks one).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// A handle that ends the open connections (on a signal, say).
    pub fn drain(&self) -> Drain {
        Drain(self.shared.clone())
    }

    /// Accepts connections for ever, each on a thread of its own, reporting to `report`.
    pub fn run(
        self,
        options: Options,
        report: impl Fn(Event<'_>) + Send + Sync + 'static,
    ) -> anyhow::Result<()> {
        let report = Arc::new(report);
        let open = Arc::new(AtomicUsize::new(0));
        let refusing = Arc::new(AtomicUsize::new(0));
        for conn in self.listener.incoming() {
            let Ok(conn) = conn else { continue };
            let peer = conn.peer_addr().map(|a| a.to_string()).unwrap_or_default();
            // Relaxed: a count; only this thread increments it.
            if open.load(Relaxed) >= options.max_connections {
                let why =
                    format!("refused: {} connections already (--max-connections)", options.max_connections);
                report(Event::Refused { peer: &peer, why: &why });
                ending::refuse(conn, why, &refusing);
                continue;
            }
            // Relaxed: as above.
            open.fetch_add(1, Relaxed);
            let connection = Connection {
                dir: self.dir.clone(),
                limits: options.limits,
                view: options.view.clone(),
                // The connection's own share of the exporter's figures, for its line.
                otlp: options.otlp.as_ref().map(|(h, o)| (h.tallied(), o.clone())),
                shared: self.shared.clone(),
            };
            let (open, report) = (open.clone(), report.clone());
            std::thread::spawn(move || {
                connection.run(conn, &peer, &*report);
                // Relaxed: a count.
                open.fetch_sub(1, Relaxed);
            });
        }
        Ok(())
    }
}

/// What one connection's thread needs.
struct Connection {
    dir: PathBuf,
    limits: Limits,
    view: Option<Arc<Traces>>,
    otlp: Option<(ExportHandle, ForwardOptions)>,
    shared: Arc<Shared>,
}

impl Connection {
    /// Receives the connection's trace, tells the peer why if the server ended it, and reports.
    fn run(self, conn: TcpStream, peer: &str, report: &dyn Fn(Event<'_>)) {
        let ender = conn.try_clone().ok();
        let key = self.shared.open.add(&conn);
        let received = receive::receive(conn, &self, report);
        self.shared.open.remove(key);
        match received {
            Ok(mut r) => {
                r.delivered = self.otlp.as_ref().map(|(h, _)| otlp::settled(h, &self.shared.draining));
                if let (Some(why), Some(c)) = (&r.ended, ender) {
                    ending::end_connection(c, why);
                }
                report(Event::Ended { peer, received: &r });
            }
            Err(e) => {
                if let Some(c) = ender {
                    ending::end_connection(c, &format!("{e:#}"));
                }
                report(Event::Failed { peer, error: &e });
            }
        }
    }
}
