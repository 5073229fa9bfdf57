//! Telling a peer why the server refused or ended its connection (`phosphor_format::file::ack`'s
//! `end` message), then closing it without losing the message.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use phosphor_format::file::ack::encode_end;

/// Refusals being delivered at once (each on a short-lived thread); past it, a refused connection
/// is closed without its reason.
const MAX_REFUSING: usize = 16;

/// Tells a refused connection why on a thread of its own (at most `MAX_REFUSING` at once), so the
/// accept loop goes on at once.
pub(crate) fn refuse(conn: TcpStream, why: String, refusing: &Arc<AtomicUsize>) {
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
pub(crate) fn end_connection(conn: TcpStream, why: &str) {
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
