//! Where `convert --to otlp|otlp-json` puts requests other than in one stream: a folder of files
//! that are each one request ([`Folder`]), or an OTLP/HTTP endpoint ([`Post`], through
//! `phosphor_otlp::export::Exporter`, so its retries and backoff apply).

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _};
use phosphor_otlp::convert::Requests;
use phosphor_otlp::export::{ExportHandle, ExportOptions, ExportStats, Exporter};
use phosphor_otlp::ExportTraceServiceRequest;

/// A folder of requests, `000001.pb` (or `.json`) on, numbered across the input files.
pub struct Folder {
    dir: PathBuf,
    ext: &'static str,
    next: u64,
}

impl Folder {
    /// The folder `dir`, created if missing; refused if it holds anything (a file left from an
    /// earlier conversion would be sent with these).
    pub fn create(dir: &Path, json: bool) -> anyhow::Result<Folder> {
        std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
        let mut entries =
            std::fs::read_dir(dir).with_context(|| format!("{}: cannot list", dir.display()))?;
        if entries.next().is_some() {
            bail!("{}: the folder is not empty (its files would be sent with the new ones)", dir.display());
        }
        Ok(Folder { dir: dir.to_owned(), ext: if json { "json" } else { "pb" }, next: 1 })
    }

    /// The files written so far.
    pub fn files(&self) -> u64 {
        self.next - 1
    }
}

impl Requests for Folder {
    fn request(&mut self, bytes: &[u8], _spans: u64) -> io::Result<()> {
        let path = self.dir.join(format!("{:06}.{}", self.next, self.ext));
        std::fs::write(&path, bytes)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        self.next += 1;
        Ok(())
    }
}

/// Requests posted to an OTLP/HTTP endpoint. The exporter's queue is bounded and drops what does
/// not fit: a conversion is faster than a collector, so [`Post`] waits while the queue is nearly
/// full, and at the end until every span is accounted for.
pub struct Post {
    exporter: Exporter,
    handle: ExportHandle,
    /// Spans sent so far, at the end of each request still in flight (the exporter sends in
    /// order, so a request is done once the spans accounted for reach its end).
    in_flight: VecDeque<u64>,
    sent: u64,
    max_in_flight: usize,
}

/// Every span the exporter has accounted for.
fn settled(s: &ExportStats) -> u64 {
    s.spans_exported + s.spans_dropped + s.spans_rejected + s.spans_failed
}

impl Post {
    /// Posting to `url` (the collector's base URL, or its `/v1/traces`), with `headers`.
    pub fn start(url: &str, headers: Vec<(String, String)>) -> anyhow::Result<Post> {
        let options = ExportOptions { headers, ..ExportOptions::new(url) };
        let max_in_flight = options.queue_batches.saturating_sub(1).max(1);
        let exporter = Exporter::start(options).context("--post")?;
        let handle = exporter.handle();
        Ok(Post { exporter, handle, in_flight: VecDeque::new(), sent: 0, max_in_flight })
    }

    /// Waits until at most `n` requests are in flight.
    fn wait_for(&mut self, n: usize) {
        loop {
            let done = settled(&self.handle.stats());
            while self.in_flight.front().is_some_and(|&end| end <= done) {
                self.in_flight.pop_front();
            }
            if self.in_flight.len() <= n {
                return;
            }
            // The exporter's thread moves on its own; this only waits for it.
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Waits for every request to be accounted for, then stops the exporter: its figures.
    pub fn finish(mut self) -> ExportStats {
        self.wait_for(0);
        self.exporter.shutdown()
    }
}

impl Requests for Post {
    fn request(&mut self, bytes: &[u8], spans: u64) -> io::Result<()> {
        let request = phosphor_otlp::request::from_protobuf(bytes)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        self.message(&request, spans)
    }

    fn messages(&self) -> bool {
        true
    }

    fn message(&mut self, request: &ExportTraceServiceRequest, spans: u64) -> io::Result<()> {
        self.wait_for(self.max_in_flight - 1);
        self.handle.send(request, spans);
        self.sent += spans;
        self.in_flight.push_back(self.sent);
        Ok(())
    }
}
