//! The reception thread on a Unix domain socket (Unix only): the socket file, its directory's
//! checks, and the accept loop of `server.rs` over it. Its clients are this user (the directory is
//! 0700, the socket 0600), so no token is asked.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use super::confine::WritePolicy;
use super::server::{spawn_accept_loop, write_policy, Limits, StreamOps};

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
    let policy = write_policy(&limits, WritePolicy::Anywhere)?;
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
    let ops = StreamOps {
        clone: UnixStream::try_clone,
        shutdown: |s| {
            let _ = s.shutdown(std::net::Shutdown::Both);
        },
    };
    spawn_accept_loop("phosphor-control", incoming, ops, limits, policy, None)?;
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
