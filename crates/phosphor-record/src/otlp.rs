//! The open connections (so a [`Drain`](crate::Drain) can end them), and the exporter's figures:
//! a connection's share once the collector has settled its spans, and the exporter's own.

use std::collections::HashMap;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use phosphor_otlp::export::{ExportHandle, ExportStats, Tally};

/// How long a connection's line waits for the collector to settle its spans (delivered,
/// rejected or failed) before it says how many are still being sent.
const SETTLE_WAIT: Duration = Duration::from_secs(10);

/// How long a drain waits for the open connections to hand on their last spans.
const CONNECTIONS_WAIT: Duration = Duration::from_secs(2);

/// The open connections, so a drain can end them.
#[derive(Debug, Default)]
pub(crate) struct Open {
    conns: Mutex<HashMap<u64, TcpStream>>,
    next: AtomicU64,
}

impl Open {
    /// Registers a connection; its key.
    pub(crate) fn add(&self, conn: &TcpStream) -> Option<u64> {
        let clone = conn.try_clone().ok()?;
        // Relaxed: a unique key only.
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.conns.lock().unwrap_or_else(|p| p.into_inner()).insert(key, clone);
        Some(key)
    }

    pub(crate) fn remove(&self, key: Option<u64>) {
        if let Some(k) = key {
            self.conns.lock().unwrap_or_else(|p| p.into_inner()).remove(&k);
        }
    }

    /// Shuts every open connection for reading (its thread sees the stream end), then waits a
    /// little for them to finish.
    pub(crate) fn end_all(&self) {
        for c in self.conns.lock().unwrap_or_else(|p| p.into_inner()).values() {
            let _ = c.shutdown(std::net::Shutdown::Read);
        }
        let until = Instant::now() + CONNECTIONS_WAIT;
        while Instant::now() < until && !self.conns.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// What became of a connection's spans, once the collector has settled them (or
/// [`SETTLE_WAIT`] has passed, or a drain has begun).
pub(crate) fn settled(handle: &ExportHandle, draining: &AtomicBool) -> Tally {
    let until = Instant::now() + SETTLE_WAIT;
    loop {
        let t = handle.tally();
        let done = t.exported + t.dropped + t.rejected + t.failed >= t.sent;
        if done || draining.load(Ordering::SeqCst) || Instant::now() >= until {
            return t;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A connection's share of the exporter's figures, for its line.
pub fn describe_tally(t: &Tally) -> String {
    let pending = t.sent.saturating_sub(t.exported + t.dropped + t.rejected + t.failed);
    let mut s = format!(
        "{} delivered, {} dropped, {} rejected, {} failed",
        t.exported, t.dropped, t.rejected, t.failed
    );
    if pending > 0 {
        s.push_str(&format!(", {pending} still being sent"));
    }
    s
}

/// The exporter's figures, for the line printed at exit.
pub fn describe_export(s: &ExportStats) -> String {
    let mut line = format!(
        "OTLP: {} spans delivered, {} dropped (queue full), {} rejected, {} failed; {} requests, {} \
         failed, {} retries, {} split; {} spans trimmed; {} bytes sent ({} before compression)",
        s.spans_exported,
        s.spans_dropped,
        s.spans_rejected,
        s.spans_failed,
        s.requests,
        s.requests_failed,
        s.retries,
        s.requests_split,
        s.spans_trimmed,
        s.bytes_sent,
        s.bytes_encoded,
    );
    if let Some(e) = &s.last_error {
        line.push_str(&format!("; last error: {e}"));
    }
    line
}
