//! A bounded in-memory pipe: the bytes a [`Forwarder`](crate::forward::Forwarder) is written go
//! to its parsing thread through it.
//!
//! The writer waits while the pipe is full (the parser always makes progress: it never waits on
//! the network), so memory stays bounded; once the reader has stopped (a malformed stream), writes
//! are taken and thrown away, counted, so the writer never waits on a reader that is gone. The
//! reader calls a tick function at least every period, also while it waits for bytes: the
//! forwarder drains its final spans there.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

#[derive(Default)]
struct State {
    buf: VecDeque<u8>,
    /// The writer is done: the reader sees the end once `buf` is empty.
    closed: bool,
    /// The reader is gone: writes are thrown away.
    stopped: bool,
    discarded: u64,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled on every change.
    changed: Condvar,
    capacity: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A pipe holding at most `capacity` bytes (at least 1), with its reader calling `tick` at least
/// every `period`.
pub(crate) fn pipe(
    capacity: usize,
    period: Duration,
    tick: Box<dyn FnMut() + Send>,
) -> (PipeWriter, PipeReader) {
    let shared =
        Arc::new(Shared { state: Mutex::default(), changed: Condvar::new(), capacity: capacity.max(1) });
    (PipeWriter(shared.clone()), PipeReader { shared, period, tick, last_tick: Instant::now() })
}

#[derive(Clone)]
pub(crate) struct PipeWriter(Arc<Shared>);

impl PipeWriter {
    /// The end of the input.
    pub(crate) fn close(&self) {
        self.0.lock().closed = true;
        self.0.changed.notify_all();
    }

    /// Bytes thrown away after the reader stopped.
    pub(crate) fn discarded(&self) -> u64 {
        self.0.lock().discarded
    }
}

impl Write for PipeWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        let mut s = self.0.lock();
        loop {
            if s.stopped {
                s.discarded += data.len() as u64;
                return Ok(data.len());
            }
            let room = self.0.capacity - s.buf.len();
            if room > 0 {
                let n = room.min(data.len());
                s.buf.extend(&data[..n]);
                drop(s);
                self.0.changed.notify_all();
                return Ok(n);
            }
            s = self.0.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(crate) struct PipeReader {
    shared: Arc<Shared>,
    period: Duration,
    tick: Box<dyn FnMut() + Send>,
    last_tick: Instant,
}

impl PipeReader {
    fn tick_if_due(&mut self) {
        if self.last_tick.elapsed() >= self.period {
            (self.tick)();
            self.last_tick = Instant::now();
        }
    }
}

impl Read for PipeReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            self.tick_if_due();
            let mut s = self.shared.lock();
            if !s.buf.is_empty() {
                let n = out.len().min(s.buf.len());
                for (o, b) in out.iter_mut().zip(s.buf.drain(..n)) {
                    *o = b;
                }
                drop(s);
                self.shared.changed.notify_all();
                return Ok(n);
            }
            if s.closed {
                return Ok(0);
            }
            let wait = self.period.saturating_sub(self.last_tick.elapsed()).max(Duration::from_millis(1));
            drop(self.shared.changed.wait_timeout(s, wait).unwrap_or_else(|p| p.into_inner()));
        }
    }
}

impl Drop for PipeReader {
    fn drop(&mut self) {
        let mut s = self.shared.lock();
        s.stopped = true;
        s.discarded += s.buf.len() as u64;
        s.buf = VecDeque::new();
        drop(s);
        self.shared.changed.notify_all();
    }
}
