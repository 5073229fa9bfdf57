//! `phosphor record --otlp`: the exporter's options (flags over the standard `OTEL_*`
//! variables), its figures at exit, and the drain on SIGINT and SIGTERM.
//!
//! `--otlp` without a URL posts to `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (else `http://localhost:4318`); with one, to it. Either way the
//! other `OTEL_*` variables apply (headers, timeout, compression, protocol, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`) and the flags win over them. The variables alone never turn
//! forwarding on.
//!
//! On SIGINT or SIGTERM the server stops taking data: every open connection's socket is shut for
//! reading, so each ends as a disconnected one (every whole block kept) and hands its last spans
//! to the exporter; then the exporter drains within `--otlp-shutdown-deadline`, the figures are
//! printed as at a clean exit, and the process exits 0.

use std::collections::HashMap;
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use phosphor_otlp::export::{
    parse_header_lines, Compression, Encoding, ExportHandle, ExportOptions, ExportStats, Exporter, OtelEnv,
    Tally,
};

/// How long a connection's line waits for the collector to settle its spans (delivered,
/// rejected or failed) before it says how many are still being sent.
const SETTLE_WAIT: Duration = Duration::from_secs(10);

/// How long a signal's drain waits for the open connections to hand on their last spans.
#[cfg(unix)]
const CONNECTIONS_WAIT: Duration = Duration::from_secs(2);

/// Set once a signal has begun the drain: connection lines wait no more for the collector.
static DRAINING: AtomicBool = AtomicBool::new(false);

/// The exporter flags of `phosphor record` (beside `--otlp` and the selection's).
#[derive(Debug, Args)]
pub struct OtlpExportArgs {
    /// With --otlp: a file of headers, `NAME=VALUE` or `NAME: VALUE` a line (`#` comments), so
    /// secrets stay out of `ps`; OTEL_EXPORTER_OTLP_HEADERS is read too.
    #[arg(long, value_name = "FILE", requires = "otlp")]
    otlp_headers_file: Option<PathBuf>,
    /// With --otlp: how long, at exit or on SIGINT/SIGTERM, the exporter goes on sending what is
    /// queued before counting the rest as failed.
    #[arg(long, value_name = "DURATION", requires = "otlp", default_value = "5s", value_parser = crate::convert::otlp::parse_duration)]
    otlp_shutdown_deadline: u64,
    /// With --otlp: how long one request may take in all (default: OTEL_EXPORTER_OTLP_TIMEOUT,
    /// else 10s).
    #[arg(long, value_name = "DURATION", requires = "otlp", value_parser = crate::convert::otlp::parse_duration)]
    otlp_timeout: Option<u64>,
    /// With --otlp: `gzip` or `none` (default: OTEL_EXPORTER_OTLP_COMPRESSION, else gzip).
    #[arg(long, value_name = "CODEC", requires = "otlp", value_parser = ["gzip", "none"])]
    otlp_compression: Option<String>,
    /// With --otlp: post OTLP JSON (`application/json`) rather than protobuf.
    #[arg(long, requires = "otlp")]
    otlp_json: bool,
    /// With --otlp: the largest request before compression, in bytes (larger ones are split, a
    /// larger span trimmed).
    #[arg(long, value_name = "BYTES", requires = "otlp", default_value_t = phosphor_otlp::export::DEFAULT_MAX_REQUEST_BYTES)]
    otlp_max_request_bytes: usize,
}

/// The exporter's options for `--otlp [URL]` with `--otlp-header`s, and the service name the
/// environment gives.
pub fn export_options(
    url: &str,
    header_flags: &[(String, String)],
    args: &OtlpExportArgs,
) -> anyhow::Result<(ExportOptions, Option<String>)> {
    let env = OtelEnv::read().context("--otlp")?;
    let mut o = env.export;
    if !url.is_empty() {
        o.endpoint = url.to_owned();
        o.signal_path = true;
    }
    if let Some(path) = &args.otlp_headers_file {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
        let headers = parse_header_lines(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        o.headers.extend(headers);
    }
    o.headers.extend(header_flags.iter().cloned());
    o.shutdown_deadline = Duration::from_nanos(args.otlp_shutdown_deadline);
    if let Some(t) = args.otlp_timeout {
        o.timeout = Duration::from_nanos(t);
    }
    match args.otlp_compression.as_deref() {
        Some("none") => o.compression = Compression::None,
        Some(_) => o.compression = Compression::Gzip,
        None => {}
    }
    if args.otlp_json {
        o.encoding = Encoding::Json;
    }
    o.max_request_bytes = args.otlp_max_request_bytes;
    Ok((o, env.service_name))
}

/// The exporter, shut down once by whoever comes first: the `--connections` count or a signal.
#[derive(Clone, Default)]
pub struct ExportSlot(Arc<Mutex<Option<Exporter>>>);

impl ExportSlot {
    pub fn new(exporter: Option<Exporter>) -> ExportSlot {
        ExportSlot(Arc::new(Mutex::new(exporter)))
    }

    /// Drains the exporter (within its deadline) and prints its figures; a second caller waits
    /// for the first to be done.
    pub fn finish(&self) {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = slot.take() {
            eprintln!("phosphor record: {}", describe_export(&e.shutdown()));
        }
    }
}

/// The open connections, so a signal can end them.
#[derive(Clone, Default)]
pub struct Open(Arc<(Mutex<HashMap<u64, TcpStream>>, AtomicU64)>);

impl Open {
    /// Registers a connection; its key.
    pub fn add(&self, conn: &TcpStream) -> Option<u64> {
        let clone = conn.try_clone().ok()?;
        // Relaxed: a unique key only.
        let key = self.0 .1.fetch_add(1, Ordering::Relaxed);
        self.0 .0.lock().unwrap_or_else(|p| p.into_inner()).insert(key, clone);
        Some(key)
    }

    pub fn remove(&self, key: Option<u64>) {
        if let Some(k) = key {
            self.0 .0.lock().unwrap_or_else(|p| p.into_inner()).remove(&k);
        }
    }

    /// Shuts every open connection for reading (its thread sees the stream end), then waits a
    /// little for them to finish.
    #[cfg(unix)]
    fn end_all(&self) {
        for c in self.0 .0.lock().unwrap_or_else(|p| p.into_inner()).values() {
            let _ = c.shutdown(std::net::Shutdown::Read);
        }
        let until = Instant::now() + CONNECTIONS_WAIT;
        while Instant::now() < until && !self.0 .0.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Without Unix signals (Windows: signal-hook has no signal iterator there), Ctrl-C ends the
/// recording without the drain, which is said once at the start.
#[cfg(not(unix))]
pub fn drain_on_signals(_open: Open, _export: ExportSlot) -> anyhow::Result<()> {
    eprintln!("phosphor record: on this system Ctrl-C ends the recording without draining the OTLP exporter");
    Ok(())
}

/// On SIGINT or SIGTERM: ends the connections, drains the exporter, prints its figures, exits 0.
#[cfg(unix)]
pub fn drain_on_signals(open: Open, export: ExportSlot) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals =
        signal_hook::iterator::Signals::new([SIGINT, SIGTERM]).context("cannot catch signals")?;
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
            eprintln!("phosphor record: {name}: ending the connections and draining the OTLP exporter");
            DRAINING.store(true, Ordering::SeqCst);
            open.end_all();
            export.finish();
            std::process::exit(0);
        }
    })?;
    Ok(())
}

/// What became of a connection's spans, once the collector has settled them (or
/// [`SETTLE_WAIT`] has passed, or a drain has begun).
pub fn settled(handle: &ExportHandle) -> Tally {
    let until = Instant::now() + SETTLE_WAIT;
    loop {
        let t = handle.tally();
        let done = t.exported + t.dropped + t.rejected + t.failed >= t.sent;
        if done || DRAINING.load(Ordering::SeqCst) || Instant::now() >= until {
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
