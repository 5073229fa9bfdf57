//! `phosphor record --listen ADDR --out DIR`: the recording server (`phosphor-record`) with its
//! flags turned into options. Traced programs stream their trace to it (a datastream with
//! `Sink::Tcp`); it writes one trace file per connection, named by process name, pid and time,
//! and prints a line per ended connection. It listens on loopback unless `--any-address`.
//!
//! With `--view ADDR`, the viewer's server (`phosphor-view`) runs in the same process and shows
//! each connection as it is recorded (`phosphor_record::Options::view`). With `--otlp`, each
//! connection's trace is also forwarded as OTLP spans (`otlp`: the exporter's options, its
//! figures at exit, the drain on SIGINT and SIGTERM).

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use phosphor_otlp::export::Exporter;
use phosphor_otlp::forward::ForwardOptions;
use phosphor_otlp::select::Selection;
use phosphor_record::{Event, Limits, Options, RecordServer};
use phosphor_view::server::{serve, Traces};
use phosphor_view::LiveOptions;

mod otlp;

/// Options of `phosphor record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Where to listen, e.g. 127.0.0.1:7777 (port 0 picks one; the address is printed).
    #[arg(long)]
    listen: SocketAddr,
    /// The directory of the trace files (created if needed).
    #[arg(
        short = 'o',
        long = "output",
        visible_alias = "out",
        value_name = "DIR",
        default_value = "phosphor-records"
    )]
    out: PathBuf,
    /// Allow an address other than loopback (anyone who can reach it can write files here).
    #[arg(long)]
    any_address: bool,
    /// Exit after this many connections have ended (for scripts and tests; default: never).
    #[arg(long)]
    connections: Option<u64>,
    /// The most connections at once; one more is closed at once (the client retries later).
    #[arg(long, default_value_t = 256)]
    max_connections: usize,
    /// The most bytes of unfinished blocks all connections may hold together (MiB); a connection
    /// whose block would pass it is ended, keeping every whole block it sent.
    #[arg(long, default_value_t = 256)]
    max_buffered: u64,
    /// Seconds a connection may send nothing before it is ended (its file keeps every whole block).
    #[arg(long, default_value_t = 300)]
    idle_timeout: u64,
    /// Also serve the viewer here (port 0 picks one), showing the connections live; its URL is
    /// the second line on stdout (`view http://HOST:PORT/`).
    #[arg(long, value_name = "ADDR")]
    view: Option<SocketAddr>,
    /// With --view: do not open a browser.
    #[arg(long, requires = "view")]
    no_open: bool,
    /// With --view: the most records (slices, points, samples) the live view keeps per
    /// connection; the oldest are dropped past it (counted and shown). About 32 bytes each.
    #[arg(long, requires = "view", default_value_t = 2_000_000)]
    view_records: usize,
    /// Also forward what each connection records, as OpenTelemetry spans, to the collector at
    /// this OTLP/HTTP URL (e.g. http://127.0.0.1:4318; plain http); without a URL, to
    /// OTEL_EXPORTER_OTLP_ENDPOINT (else http://localhost:4318). The other OTEL_* variables
    /// apply. The figures of each connection follow its line; the exporter's are printed on
    /// standard error at exit, and on SIGINT/SIGTERM after a drain.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    otlp: Option<String>,
    /// With --otlp: a header added to every request (`NAME=VALUE`: authentication, tenant);
    /// repeatable.
    #[arg(long, value_name = "NAME=VALUE", requires = "otlp", value_parser = parse_header)]
    otlp_header: Vec<(String, String)>,
    /// With --otlp: only spans at least this long (`500us`, `2ms`, `1s`, or ns).
    #[arg(long, value_name = "DURATION", requires = "otlp", value_parser = crate::common::parse_duration)]
    otlp_min_duration: Option<u64>,
    /// With --otlp: only root spans.
    #[arg(long, requires = "otlp")]
    otlp_roots_only: bool,
    /// With --otlp: only spans whose scope path (`frame/update`) matches this glob; repeatable.
    #[arg(long = "otlp-path", value_name = "GLOB", requires = "otlp")]
    otlp_paths: Vec<String>,
    #[command(flatten)]
    otlp_sampling: otlp::RecordOtlpArgs,
    /// With --otlp: `service.name` (default: the traced process's name).
    #[arg(long, value_name = "NAME", requires = "otlp")]
    otlp_service_name: Option<String>,
    /// With --otlp: how long (trace time) a finished span waits for an enclosing scope before it
    /// is sent as a root.
    #[arg(long, value_name = "DURATION", requires = "otlp", default_value = "2s", value_parser = crate::common::parse_duration)]
    otlp_hold: u64,
    #[command(flatten)]
    otlp_export: otlp::OtlpExportArgs,
}

/// Parses `NAME=VALUE`.
fn parse_header(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_owned(), value.to_owned())),
        _ => Err(format!("{text:?} is not NAME=VALUE")),
    }
}

impl RecordArgs {
    /// How each connection's spans are made and sent, with `--otlp`.
    fn forward_options(&self) -> ForwardOptions {
        ForwardOptions {
            selection: Selection {
                min_duration_ns: self.otlp_min_duration,
                roots_only: self.otlp_roots_only,
                paths: self.otlp_paths.clone(),
                slowest_roots: None,
                sampling: self.otlp_sampling.sampling(),
                tail: self.otlp_sampling.tail_rules(),
            },
            group_roots: self.otlp_sampling.group_roots(),
            hold: std::time::Duration::from_nanos(self.otlp_hold),
            service_name: self.otlp_service_name.clone(),
            ..ForwardOptions::default()
        }
    }
}

/// Runs the server: prints `listening on ADDR`, with `--view` then `view URL`, then a line per
/// ended connection.
pub fn run(args: &RecordArgs) -> anyhow::Result<()> {
    if !args.listen.ip().is_loopback() && !args.any_address {
        bail!("{} is not a loopback address; pass --any-address to listen there", args.listen);
    }
    if let Some(view) = args.view.filter(|v| !v.ip().is_loopback() && !args.any_address) {
        bail!("{view} is not a loopback address; pass --any-address to serve the viewer there");
    }
    let server = RecordServer::bind(args.listen, &args.out)?;
    let viewer = match args.view {
        Some(addr) => {
            Some(TcpListener::bind(addr).with_context(|| format!("cannot serve the viewer on {addr}"))?)
        }
        None => None,
    };
    let mut forward_options = args.forward_options();
    let exporter = match &args.otlp {
        Some(url) => {
            let (options, service) = otlp::export_options(url, &args.otlp_header, &args.otlp_export)?;
            forward_options.service_name = forward_options.service_name.or(service);
            Some(Exporter::start(options).context("--otlp")?)
        }
        None => None,
    };
    let export = exporter.as_ref().map(|e| (e.handle(), forward_options));
    let exporter = otlp::ExportSlot::new(exporter);
    if args.otlp.is_some() {
        otlp::drain_on_signals(server.drain(), exporter.clone())?;
    }
    println!("listening on {}", server.local_addr()?);
    let view = match viewer {
        Some(viewer) => Some(start_viewer(viewer, args, server.local_addr()?)?),
        None => None,
    };
    std::io::stdout().flush()?;
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    if let Some(n) = args.connections {
        // Exit once `n` connections have ended.
        let exporter = exporter.clone();
        std::thread::spawn(move || {
            for _ in 0..n {
                if done_rx.recv().is_err() {
                    return;
                }
            }
            // The spans handed to the exporter are sent (within its deadline) before the exit.
            exporter.finish();
            std::process::exit(0);
        });
    }
    let options = Options {
        max_connections: args.max_connections,
        limits: Limits {
            max_buffered: args.max_buffered.saturating_mul(1 << 20),
            idle: std::time::Duration::from_secs(args.idle_timeout.max(1)),
        },
        view,
        otlp: export,
    };
    server.run(options, move |event| report(event, &done_tx))
}

/// Prints what the server reports: a line per ended connection on stdout, the rest on stderr;
/// counts the ended connections on `done`.
fn report(event: Event<'_>, done: &std::sync::mpsc::Sender<()>) {
    match event {
        Event::Refused { peer, why } => eprintln!("phosphor record: {peer}: {why}"),
        Event::NotShown { path } => {
            eprintln!("phosphor record: {}: recorded, but not shown: the viewer is full", path.display())
        }
        Event::Ended { peer, received } => println!("{}", received.describe(peer)),
        Event::Failed { peer, error } => eprintln!("phosphor record: {peer}: {error:#}"),
    }
    if matches!(event, Event::Ended { .. } | Event::Failed { .. }) {
        let _ = std::io::stdout().flush();
        let _ = done.send(());
    }
}

/// Serves the viewer on `listener` (on threads of its own) for the connections to come to the
/// recorder at `recorder`, prints its URL, and opens a browser unless `--no-open`.
fn start_viewer(
    listener: TcpListener,
    args: &RecordArgs,
    recorder: std::net::SocketAddr,
) -> anyhow::Result<Arc<Traces>> {
    let options = LiveOptions { max_records: args.view_records.max(1), ..LiveOptions::default() };
    let traces = Arc::new(Traces::live(options));
    // The page says where programs are to connect until one does.
    traces.set_listening(recorder.to_string());
    let url = format!("http://{}/", listener.local_addr()?);
    println!("view {url}");
    let serving = traces.clone();
    std::thread::Builder::new().name("phosphor-view".into()).spawn(move || {
        if let Err(e) = serve(serving, listener) {
            eprintln!("phosphor record: the viewer stopped: {e}");
        }
    })?;
    if !args.no_open {
        if let Err(e) = webbrowser::open(&url) {
            eprintln!("could not open a browser ({e}); open {url}");
        }
    }
    Ok(traces)
}
