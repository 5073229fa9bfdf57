//! The reception thread (Palanteer's): serves command lines over TCP on loopback, on every
//! platform ([`serve_tcp`]), and over a Unix domain socket (`socket.rs`, Unix only); both share
//! the accept loop and the protocol here.
//!
//! Protocol, per connection, any number of times: the client sends one command line ending in
//! `\n` (at most [`Limits::max_request`] bytes); the server answers `ok <n>\n` or `error <n>\n`
//! followed by `n` bytes of text. Each connection has its own thread, so a slow client does not
//! block the others; at most [`Limits::max_connections`] at once (more are answered with an error
//! and closed). A handler that runs longer than [`Limits::handler_timeout`] gets an error reply (it
//! goes on running on its own thread).
//!
//! Over TCP a client must present the token first. Connections that have not yet done so have
//! slots of their own ([`Limits::max_unauthenticated`]), so clients without the token cannot take
//! the slots of those that have it; and each must send its token within
//! [`Limits::request_timeout`]. Commands that write files (`trace.dump`) write inside
//! [`Limits::dump_dir`] only; a TCP server without one writes no files.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::confine::{with_policy, WritePolicy};
use super::Reply;

/// The server's limits.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The longest command line, in bytes.
    pub max_request: usize,
    /// Connections served at once.
    pub max_connections: usize,
    /// How long a handler may run before its caller gets an error.
    pub handler_timeout: Duration,
    /// How long a client may take to send its token line, and each request line (counted from the
    /// connection, or from the last answer): a client that sends nothing is disconnected then,
    /// so idle connections hold the `max_connections` slots for no longer than this.
    pub request_timeout: Duration,
    /// TCP: connections that have not yet presented the token, served at once (besides the
    /// `max_connections` of those that have).
    pub max_unauthenticated: usize,
    /// Where commands that write files (`trace.dump path=`) may write: paths are relative to it
    /// (or absolute inside it) and may not lead out of it. It must exist. `None`: on the Unix
    /// socket, anywhere this user may write (its clients are this user); over TCP, nowhere.
    pub dump_dir: Option<PathBuf>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_request: 64 << 10,
            max_connections: 32,
            handler_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(5),
            max_unauthenticated: 32,
            dump_dir: None,
        }
    }
}

/// A running TCP reception thread on loopback.
#[derive(Debug)]
pub struct TcpServer {
    addr: std::net::SocketAddr,
}

impl TcpServer {
    /// The address it listens on.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }
}

/// Serves commands on TCP at `addr`, which must be a loopback address (port 0 picks one), to
/// clients that first send `token <token>` (see [`client::call_tcp`](super::client::call_tcp)).
/// The token must be at least 16 characters.
pub fn serve_tcp(addr: std::net::SocketAddr, token: &str, limits: Limits) -> std::io::Result<TcpServer> {
    if !addr.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the control port listens on loopback only",
        ));
    }
    if token.len() < 16 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the token must be at least 16 characters",
        ));
    }
    let policy = write_policy(&limits, WritePolicy::Nowhere)?;
    let listener = std::net::TcpListener::bind(addr)?;
    let addr = listener.local_addr()?;
    let timeout = limits.request_timeout;
    let incoming = std::iter::from_fn(move || {
        Some(listener.accept().and_then(|(s, _)| s.set_read_timeout(Some(timeout)).map(|()| s)))
    });
    spawn_accept_loop(
        "phosphor-control-tcp",
        incoming,
        StreamOps {
            clone: std::net::TcpStream::try_clone,
            shutdown: |s| {
                let _ = s.shutdown(std::net::Shutdown::Both);
            },
        },
        limits,
        policy,
        Some(token.into()),
    )?;
    Ok(TcpServer { addr })
}

/// The write policy of a server with `limits`: inside its dump directory (resolved now, so links
/// changed later cannot move it), else `otherwise`.
pub(super) fn write_policy(limits: &Limits, otherwise: WritePolicy) -> std::io::Result<WritePolicy> {
    match &limits.dump_dir {
        Some(d) => d
            .canonicalize()
            .map(WritePolicy::Inside)
            .map_err(|e| std::io::Error::new(e.kind(), format!("the dump directory {}: {e}", d.display()))),
        None => Ok(otherwise),
    }
}

/// Takes one of `max` slots counted by `count`, if one is free.
fn take_slot(count: &AtomicUsize, max: usize) -> bool {
    // Relaxed: a count of live connections; the compare-and-swap keeps it within `max`, and
    // nothing else is published through it.
    count.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < max).then_some(n + 1)).is_ok()
}

/// A served slot taken with [`take_slot`], given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        // Relaxed: see `take_slot`.
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// TCP: the connections that have not yet presented the token, oldest first, each with a handle
/// that can shut it down. When a new one would pass `Limits::max_unauthenticated`, the oldest is
/// shut down: clients that connect and send nothing cannot keep a client that sends its token at
/// once from being served.
struct Waiting<S> {
    next: u64,
    queue: std::collections::VecDeque<(u64, S)>,
}

/// The server's shared counts: connections that may run commands, and those waiting to present
/// the token.
struct Slots<S> {
    served: Arc<AtomicUsize>,
    waiting: std::sync::Mutex<Waiting<S>>,
}

impl<S> Slots<S> {
    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting<S>> {
        // Each step leaves the queue consistent, so a poisoned lock is safe to keep using.
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How the accept loop handles one kind of stream.
pub(super) struct StreamOps<S> {
    /// Splits a stream into its reading and writing halves.
    pub(super) clone: fn(&S) -> std::io::Result<S>,
    /// Shuts a stream down, so that its thread's read ends.
    pub(super) shutdown: fn(&S),
}

/// Spawns the thread that accepts connections from `incoming` and serves each on a thread of its
/// own, at most `limits.max_connections` at once; with a `token`, each client must present it
/// first, and at most `limits.max_unauthenticated` wait to do so (the oldest makes way for a new
/// one). Commands run under `policy`.
pub(super) fn spawn_accept_loop<S, I>(
    name: &str,
    incoming: I,
    ops: StreamOps<S>,
    limits: Limits,
    policy: WritePolicy,
    token: Option<Arc<str>>,
) -> std::io::Result<()>
where
    S: Read + Write + Send + 'static,
    I: Iterator<Item = std::io::Result<S>> + Send + 'static,
{
    let slots = Arc::new(Slots {
        served: Arc::new(AtomicUsize::new(0)),
        waiting: std::sync::Mutex::new(Waiting { next: 0, queue: Default::default() }),
    });
    std::thread::Builder::new().name(name.into()).spawn(move || {
        for stream in incoming {
            let Ok(mut stream) = stream else { continue };
            let Ok(out) = (ops.clone)(&stream) else { continue };
            let (slots2, limits2, policy2) = (slots.clone(), limits.clone(), policy.clone());
            let serve: Box<dyn FnOnce() + Send> = match &token {
                None => {
                    if !take_slot(&slots.served, limits.max_connections) {
                        let text = "too many connections; try again".into();
                        let _ = answer(&mut stream, &Reply { error: true, text });
                        continue;
                    }
                    let slot = Slot(slots.served.clone());
                    Box::new(move || {
                        connection(stream, out, &limits2, &policy2, None);
                        drop(slot);
                    })
                }
                Some(token) => {
                    let Ok(handle) = (ops.clone)(&stream) else { continue };
                    let id = {
                        let mut w = slots.waiting();
                        while w.queue.len() >= limits.max_unauthenticated.max(1) {
                            if let Some((_, oldest)) = w.queue.pop_front() {
                                (ops.shutdown)(&oldest);
                            }
                        }
                        let id = w.next;
                        w.next += 1;
                        w.queue.push_back((id, handle));
                        id
                    };
                    let token = token.clone();
                    Box::new(move || {
                        connection(stream, out, &limits2, &policy2, Some((&token, id, &*slots2)));
                    })
                }
            };
            // A connection whose thread cannot start is dropped (closed) with its closure.
            let _ = std::thread::Builder::new().name("phosphor-control-client".into()).spawn(serve);
        }
    })?;
    Ok(())
}

fn answer(stream: &mut impl Write, reply: &Reply) -> std::io::Result<()> {
    let status = if reply.error { "error" } else { "ok" };
    write!(stream, "{status} {}\n{}", reply.text.len(), reply.text)?;
    stream.flush()
}

/// Serves one client until it closes the connection or breaks the protocol, running its commands
/// under `policy`. With a token (and the client's place among those waiting to present it), the
/// first line must be `token <token>`; the client then takes a served slot.
fn connection<S: Read + Write>(
    stream: S,
    out: S,
    limits: &Limits,
    policy: &WritePolicy,
    token: Option<(&str, u64, &Slots<S>)>,
) {
    let mut out = out;
    let mut input = BufReader::new(stream);
    let mut line = Vec::new();
    let _served = match token {
        None => None,
        Some((token, id, slots)) => {
            let limit = (limits.max_request + 1) as u64;
            let _ = (&mut input).take(limit).read_until(b'\n', &mut line);
            // No longer waiting (unless shut down as the oldest, and removed already).
            slots.waiting().queue.retain(|(i, _)| *i != id);
            let given = std::str::from_utf8(&line).ok().and_then(|l| l.trim_end().strip_prefix("token "));
            // A comparison whose time does not depend on where the tokens differ.
            let ok = given.is_some_and(|g| {
                g.len() == token.len()
                    && g.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
            });
            let refusal = if !ok {
                Some("a token is required: send `token <token>` first")
            } else if !take_slot(&slots.served, limits.max_connections) {
                Some("too many connections; try again")
            } else {
                None
            };
            if let Some(text) = refusal {
                let _ = answer(&mut out, &Reply { error: true, text: text.into() });
                return;
            }
            let _ = answer(&mut out, &Reply { error: false, text: String::new() });
            Some(Slot(slots.served.clone()))
        }
    };
    loop {
        line.clear();
        // One more byte than the limit tells an over-long line from one at the limit.
        let limit = (limits.max_request + 1) as u64;
        match (&mut input).take(limit).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() != Some(&b'\n') {
            let text = if line.len() > limits.max_request {
                format!("the request is longer than {} bytes", limits.max_request)
            } else {
                "the request does not end with a newline".into()
            };
            let _ = answer(&mut out, &Reply { error: true, text });
            return; // the rest of the stream cannot be framed
        }
        let reply = match std::str::from_utf8(&line[..line.len() - 1]) {
            Ok(cmd) => run_with_timeout(
                cmd.trim_end_matches('\r').to_owned(),
                limits.handler_timeout,
                policy.clone(),
            ),
            Err(_) => Reply { error: true, text: "the request is not UTF-8".into() },
        };
        if answer(&mut out, &reply).is_err() {
            return;
        }
    }
}

/// Runs a command on a thread of its own, under `policy`, waiting at most `timeout` for its reply.
fn run_with_timeout(cmd: String, timeout: Duration, policy: WritePolicy) -> Reply {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("phosphor-command".into()).spawn(move || {
        let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_policy(policy, || super::call(&cmd))
        }))
        .unwrap_or_else(|payload| {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            Reply { error: true, text: format!("the command panicked: {what}") }
        });
        let _ = tx.send(reply);
    });
    if let Err(e) = spawned {
        return Reply { error: true, text: format!("cannot run the command: {e}") };
    }
    rx.recv_timeout(timeout).unwrap_or_else(|_| Reply {
        error: true,
        text: format!("the command did not answer within {:.1?}", timeout),
    })
}
