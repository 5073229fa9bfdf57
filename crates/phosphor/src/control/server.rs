//! The reception thread (Palanteer's): a Unix domain socket that serves command lines.
//!
//! Protocol, per connection, any number of times: the client sends one command line ending in
//! `\n` (at most [`Limits::max_request`] bytes); the server answers `ok <n>\n` or `error <n>\n`
//! followed by `n` bytes of text. Each connection has its own thread, so a slow client does not
//! block the others; at most [`Limits::max_connections`] at once (more are answered with an error
//! and closed). A handler that runs longer than [`Limits::handler_timeout`] gets an error reply (it
//! goes on running on its own thread).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_request: 64 << 10,
            max_connections: 32,
            handler_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(5),
        }
    }
}

/// The default socket of this process: `$XDG_RUNTIME_DIR/phosphor/<pid>.sock`, or
/// `<temp dir>/phosphor-<uid>/<pid>.sock`.
pub fn default_socket_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("phosphor"),
        // SAFETY: getuid has no preconditions and cannot fail.
        _ => std::env::temp_dir().join(format!("phosphor-{}", unsafe { libc::getuid() })),
    }
}

/// A running reception thread; the socket file is removed when it is dropped (by the process
/// that created it: a forked child's copy leaves the parent's socket alone).
#[derive(Debug)]
pub struct Server {
    path: PathBuf,
    pid: u32,
}

impl Server {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.pid == std::process::id() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Serves commands on a Unix socket at `path` (default: [`default_socket_dir`]`/<pid>.sock`),
/// readable and writable by this user only (directory 0700, socket 0600).
pub fn serve(path: Option<PathBuf>, limits: Limits) -> std::io::Result<Server> {
    let default = path.is_none();
    let path = path.unwrap_or_else(|| default_socket_dir().join(format!("{}.sock", std::process::id())));
    if let Some(dir) = path.parent() {
        if !dir.exists() {
            std::fs::create_dir_all(dir)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        check_socket_dir(dir, default)?;
    }
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    let timeout = limits.request_timeout;
    let incoming = std::iter::from_fn(move || {
        Some(listener.accept().and_then(|(s, _)| s.set_read_timeout(Some(timeout)).map(|()| s)))
    });
    spawn_accept_loop("phosphor-control", incoming, UnixStream::try_clone, limits, None)?;
    Ok(Server { path, pid: std::process::id() })
}

/// Refuses a socket directory that another user owns (they could replace the socket, or read the
/// commands sent to it) and, for the default directory, one that others may enter: the socket's own
/// 0600 mode is set just after it is bound, so the directory is what guards that moment.
fn check_socket_dir(dir: &Path, default: bool) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir)?;
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    let refuse = |why: String| {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("refusing to serve commands in {}: {why}", dir.display()),
        ))
    };
    if meta.uid() != me {
        return refuse(format!("it belongs to uid {}, not to this user (uid {me})", meta.uid()));
    }
    if default && meta.mode() & 0o077 != 0 {
        return refuse(format!("its mode is {:o}; it must be 0700", meta.mode() & 0o777));
    }
    Ok(())
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
    let listener = std::net::TcpListener::bind(addr)?;
    let addr = listener.local_addr()?;
    let timeout = limits.request_timeout;
    let incoming = std::iter::from_fn(move || {
        Some(listener.accept().and_then(|(s, _)| s.set_read_timeout(Some(timeout)).map(|()| s)))
    });
    spawn_accept_loop(
        "phosphor-control-tcp",
        incoming,
        std::net::TcpStream::try_clone,
        limits,
        Some(token.into()),
    )?;
    Ok(TcpServer { addr })
}

/// Spawns the thread that accepts connections from `incoming` and serves each on a thread of its
/// own (`clone` splits a stream into its reading and writing halves), at most
/// `limits.max_connections` at once; with a `token`, each client must present it first.
fn spawn_accept_loop<S, I>(
    name: &str,
    incoming: I,
    clone: fn(&S) -> std::io::Result<S>,
    limits: Limits,
    token: Option<Arc<str>>,
) -> std::io::Result<()>
where
    S: Read + Write + Send + 'static,
    I: Iterator<Item = std::io::Result<S>> + Send + 'static,
{
    let active = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new().name(name.into()).spawn(move || {
        for stream in incoming {
            let Ok(mut stream) = stream else { continue };
            // Relaxed: a count of live connection threads; only this thread increments it.
            if active.load(Ordering::Relaxed) >= limits.max_connections {
                let _ = answer(
                    &mut stream,
                    &Reply { error: true, text: "too many connections; try again".into() },
                );
                continue;
            }
            let Ok(out) = clone(&stream) else { continue };
            active.fetch_add(1, Ordering::Relaxed);
            let (mine, limits, token) = (active.clone(), limits.clone(), token.clone());
            let spawned =
                std::thread::Builder::new().name("phosphor-control-client".into()).spawn(move || {
                    connection(stream, out, &limits, token.as_deref());
                    // Relaxed: see above.
                    mine.fetch_sub(1, Ordering::Relaxed);
                });
            if spawned.is_err() {
                // Relaxed: see above.
                active.fetch_sub(1, Ordering::Relaxed);
            }
        }
    })?;
    Ok(())
}

fn answer(stream: &mut impl Write, reply: &Reply) -> std::io::Result<()> {
    let status = if reply.error { "error" } else { "ok" };
    write!(stream, "{status} {}\n{}", reply.text.len(), reply.text)?;
    stream.flush()
}

/// Serves one client until it closes the connection or breaks the protocol. With a `token`, the
/// first line must be `token <token>`.
fn connection<S: Read + Write>(stream: S, out: S, limits: &Limits, token: Option<&str>) {
    let mut out = out;
    let mut input = BufReader::new(stream);
    let mut line = Vec::new();
    if let Some(token) = token {
        let limit = (limits.max_request + 1) as u64;
        let _ = (&mut input).take(limit).read_until(b'\n', &mut line);
        let given = std::str::from_utf8(&line).ok().and_then(|l| l.trim_end().strip_prefix("token "));
        // A comparison whose time does not depend on where the tokens differ.
        let ok = given.is_some_and(|g| {
            g.len() == token.len() && g.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
        });
        if !ok {
            let _ = answer(
                &mut out,
                &Reply { error: true, text: "a token is required: send `token <token>` first".into() },
            );
            return;
        }
        let _ = answer(&mut out, &Reply { error: false, text: String::new() });
    }
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
            Ok(cmd) => run_with_timeout(cmd.trim_end_matches('\r').to_owned(), limits.handler_timeout),
            Err(_) => Reply { error: true, text: "the request is not UTF-8".into() },
        };
        if answer(&mut out, &reply).is_err() {
            return;
        }
    }
}

/// Runs a command on a thread of its own, waiting at most `timeout` for its reply.
fn run_with_timeout(cmd: String, timeout: Duration) -> Reply {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("phosphor-command".into()).spawn(move || {
        let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| super::call(&cmd)))
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
