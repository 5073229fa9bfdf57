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

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use phosphor_otlp::export::{parse_header_lines, Compression, Encoding, ExportOptions, Exporter, OtelEnv};
use phosphor_otlp::ids::GroupRoots;
use phosphor_otlp::select::{Sampling, TailRules};
use phosphor_record::{describe_export, Drain};

use crate::common::{parse_duration, parse_ratio, sampling, tail_rules};

/// The exporter flags of `phosphor record` (beside `--otlp` and the selection's).
#[derive(Debug, Args)]
pub struct OtlpExportArgs {
    /// With --otlp: a file of headers, `NAME=VALUE` or `NAME: VALUE` a line (`#` comments), so
    /// secrets stay out of `ps`; OTEL_EXPORTER_OTLP_HEADERS is read too.
    #[arg(long, value_name = "FILE", requires = "otlp")]
    otlp_headers_file: Option<PathBuf>,
    /// With --otlp: how long, at exit or on SIGINT/SIGTERM, the exporter goes on sending what is
    /// queued before counting the rest as failed.
    #[arg(long, value_name = "DURATION", requires = "otlp", default_value = "5s", value_parser = parse_duration)]
    otlp_shutdown_deadline: u64,
    /// With --otlp: how long one request may take in all (default: OTEL_EXPORTER_OTLP_TIMEOUT,
    /// else 10s).
    #[arg(long, value_name = "DURATION", requires = "otlp", value_parser = parse_duration)]
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

/// Without Unix signals (Windows: signal-hook has no signal iterator there), Ctrl-C ends the
/// recording without the drain, which is said once at the start.
#[cfg(not(unix))]
pub fn drain_on_signals(_drain: Drain, _export: ExportSlot) -> anyhow::Result<()> {
    eprintln!("phosphor record: on this system Ctrl-C ends the recording without draining the OTLP exporter");
    Ok(())
}

/// On SIGINT or SIGTERM: ends the connections, drains the exporter, prints its figures, exits 0.
#[cfg(unix)]
pub fn drain_on_signals(drain: Drain, export: ExportSlot) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals =
        signal_hook::iterator::Signals::new([SIGINT, SIGTERM]).context("cannot catch signals")?;
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
            eprintln!("phosphor record: {name}: ending the connections and draining the OTLP exporter");
            drain.begin();
            export.finish();
            std::process::exit(0);
        }
    })?;
    Ok(())
}

/// `record --otlp`'s grouping and sampling (flattened into `RecordArgs`): what `convert` offers,
/// for live forwarding, through the same `Selection`.
#[derive(Debug, Default, Args)]
pub struct RecordOtlpArgs {
    /// With --otlp: which roots share a trace: `none` (a trace per root), `process` (one per
    /// connection), `window:1s` (one per second of start times).
    #[arg(long, value_name = "GROUPING", requires = "otlp")]
    otlp_group_roots: Option<GroupRoots>,
    /// With --otlp: head sampling: keep this share (0 to 1) of the traces, decided on their trace
    /// ids (a caller's trace follows its `traceparent`'s sampled flag).
    #[arg(long, value_name = "RATIO", requires = "otlp", value_parser = parse_ratio)]
    otlp_sample: Option<f64>,
    /// With --otlp: also export the spans of callers whose `traceparent` says "not sampled".
    #[arg(long, requires = "otlp")]
    otlp_export_unsampled_callers: bool,
    /// With --otlp: tail rule: keep a trace any of whose spans lasts at least this long.
    #[arg(long, value_name = "DURATION", requires = "otlp", value_parser = parse_duration)]
    otlp_keep_slower_than: Option<u64>,
    /// With --otlp: tail rule: keep a trace holding an error-level log.
    #[arg(long, requires = "otlp")]
    otlp_keep_errors: bool,
    /// With --otlp: tail rule: of the other traces, keep the N slowest per root name and minute
    /// (held a minute and `--otlp-hold`).
    #[arg(long, value_name = "N", requires = "otlp", value_parser = clap::value_parser!(u64).range(1..))]
    otlp_keep_slowest_per_minute: Option<u64>,
}

impl RecordOtlpArgs {
    /// Head sampling.
    pub fn sampling(&self) -> Sampling {
        sampling(self.otlp_sample, self.otlp_export_unsampled_callers)
    }

    /// Tail rules.
    pub fn tail_rules(&self) -> TailRules {
        tail_rules(self.otlp_keep_slower_than, self.otlp_keep_errors, self.otlp_keep_slowest_per_minute)
    }

    /// Which roots share a trace.
    pub fn group_roots(&self) -> GroupRoots {
        self.otlp_group_roots.unwrap_or_default()
    }
}
