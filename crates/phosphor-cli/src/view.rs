//! `phosphor view FILE|DIR… [--listen ADDR] [--no-open] [--compare]`: serves the viewer's API on a local HTTP
//! server, whose URL is the first line on stdout, as soon as the traces' headers are read, and
//! indexes them meanwhile (once: the index is kept beside each trace, or in a cache folder). A
//! folder stands for its `.phos` files (a `phosphor record` folder); all the traces share one
//! timeline, a process group each. With `--compare`, two traces, BASE and NEW, and `phosphor
//! diff`'s rows of them in a panel.

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use phosphor_view::server::{serve, Traces};
use phosphor_view::BuildOptions;

use crate::common::traces_of;

/// Options of `phosphor view`.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// Trace files, or folders of them.
    #[arg(required = true, value_name = "FILE|DIR")]
    paths: Vec<PathBuf>,
    /// How several traces are placed: `auto` (traces recorded at one moment on their shared
    /// clock, each other one from its own start), `clock` (all on one clock, as `convert` places
    /// them, however far apart), `start` (each from its own start).
    #[arg(long, default_value = "auto", value_name = "auto|clock|start")]
    align: phosphor_view::placement::Align,
    /// Where to serve (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Allow an address other than loopback (anyone who can reach it can read the traces).
    #[arg(long)]
    any_address: bool,
    /// Do not open a browser.
    #[arg(long)]
    no_open: bool,
    /// Where indexes go when a trace's folder cannot be written [default: the user's cache
    /// folder, `phosphor/view` in it].
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,
    /// Build (or check) each trace's index, print where it is, and exit without serving: to index
    /// ahead of time.
    #[arg(long)]
    index_only: bool,
    /// Compare two traces, BASE then NEW, as `phosphor diff BASE NEW` does: both are shown, and a
    /// panel lists the diff's rows, each opening the slowest occurrences of its path on either side.
    #[arg(long, conflicts_with = "index_only")]
    compare: bool,
}

/// The user's cache folder for indexes.
fn default_cache() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("phosphor").join("view")
}

pub fn run(args: &ViewArgs, out: &mut impl Write) -> anyhow::Result<()> {
    if !args.listen.ip().is_loopback() && !args.any_address {
        bail!("{} is not a loopback address; pass --any-address to serve there", args.listen);
    }
    let cache = args.cache.clone().unwrap_or_else(default_cache);
    let mut files = Vec::new();
    for path in &args.paths {
        files.extend(traces_of(path)?);
    }
    if args.compare && files.len() != 2 {
        let list: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        bail!(
            "--compare compares exactly two traces, BASE and NEW; given {}: {}",
            files.len(),
            list.join(", ")
        );
    }
    if args.index_only {
        for file in &files {
            let index = phosphor_view::open(file, Some(&cache), &BuildOptions::default())?;
            let at = index.path();
            let m = &index.meta;
            writeln!(
                out,
                "{}: {} events, {} threads, {} slices in {}",
                file.display(),
                m.events,
                index.threads.len(),
                index.slice_count(),
                at.display()
            )?;
            if let Some(e) = &m.read_error {
                eprintln!("{}: indexed the events before a read error: {e}", file.display());
            }
        }
        return Ok(());
    }
    // Only the headers are read before serving: the page shows each trace's overview, then its
    // tracks, as the indexing thread gets to them.
    let traces = Arc::new(Traces::open_aligned(files, args.align)?);
    if args.compare {
        // Computed meanwhile, on a thread of its own, from the files as `phosphor diff` reads them.
        traces.compare(0, 1).map_err(anyhow::Error::msg)?;
    }
    let listener = TcpListener::bind(args.listen).with_context(|| format!("listening on {}", args.listen))?;
    let url = format!("http://{}/", listener.local_addr()?);
    writeln!(out, "{url}")?;
    out.flush()?;
    let indexing = traces.clone();
    std::thread::Builder::new().name("phosphor-index".into()).spawn(move || {
        indexing.index_all(Some(&cache), &BuildOptions::default(), |slot, what| {
            eprintln!("{}: {what}", slot.path.display());
        })
    })?;
    if !args.no_open {
        if let Err(e) = webbrowser::open(&url) {
            eprintln!("could not open a browser ({e}); open {url}");
        }
    }
    serve(traces, listener).context("serving")?;
    Ok(())
}
