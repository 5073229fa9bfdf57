//! Progress bars for long reads (indicatif): drawn on stderr when it is a terminal, hidden
//! otherwise, so pipes, files and tests see nothing but the output.

use std::fs::File;
use std::io::{BufReader, IsTerminal};
use std::path::Path;

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressBarIter, ProgressDrawTarget, ProgressFinish, ProgressStyle};
use phosphor::format::file::Reader;

/// Inputs smaller than this read in well under a second: no bar.
pub const MIN_BYTES: u64 = 8 << 20;

/// A trace file being read, counted into a progress bar as the reader pulls bytes.
pub type Input = BufReader<ProgressBarIter<File>>;

/// The bar for reading `len` bytes, labelled `what`: hidden unless `terminal` and the input is
/// long enough to be worth one. It clears itself when the reader is dropped.
pub fn bar(len: u64, what: &str, terminal: bool) -> ProgressBar {
    if !terminal || len < MIN_BYTES {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template(
        "{msg} [{bar:40}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, {eta} left)",
    )
    .expect("a valid template")
    .progress_chars("=> ");
    ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr())
        .with_style(style)
        .with_message(what.to_owned())
        .with_finish(ProgressFinish::AndClear)
}

/// Opens the trace file `path` and reads its header, with a progress bar labelled `what` on a
/// terminal; the rest of the file is read ahead ([`Reader::read_ahead`]): a second thread reads
/// its blocks and decompresses its groups while the caller decodes the events.
pub fn open(path: &Path, what: &str) -> anyhow::Result<Reader<Input>> {
    Ok(open_header(path, what)?.read_ahead())
}

/// [`open`] without read-ahead: for a caller that only wants the header (read-ahead would read
/// and decompress up to [`READ_AHEAD_BYTES`](phosphor::format::file::READ_AHEAD_BYTES) for
/// nothing).
pub fn open_header(path: &Path, what: &str) -> anyhow::Result<Reader<Input>> {
    let f = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    open_with(path, f, bar(len, what, std::io::stderr().is_terminal()))
}

fn open_with(path: &Path, f: File, bar: ProgressBar) -> anyhow::Result<Reader<Input>> {
    Reader::new(BufReader::with_capacity(1 << 16, bar.wrap_read(f))).map_err(|e| e.with_path(path).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_show_only_on_a_terminal_for_long_inputs() {
        assert!(bar(1 << 30, "x", false).is_hidden(), "not a terminal");
        assert!(bar(MIN_BYTES - 1, "x", true).is_hidden(), "too short to bother");
        let shown = bar(1 << 30, "converting", true);
        assert_eq!(shown.length(), Some(1 << 30));
        assert_eq!(shown.message(), "converting");
    }

    #[test]
    fn reading_through_the_bar_counts_the_bytes() {
        let trace = phosphor_export_golden();
        let path = std::env::temp_dir().join(format!("phosphor-progress-{}.phos", std::process::id()));
        std::fs::write(&path, &trace).unwrap();
        let bar = ProgressBar::hidden();
        let mut reader = open_with(&path, File::open(&path).unwrap(), bar.clone()).unwrap().read_ahead();
        while reader.next_block().unwrap().is_some() {}
        assert_eq!(reader.offset(), trace.len() as u64);
        assert_eq!(bar.position(), trace.len() as u64, "every byte read went through the bar");
        std::fs::remove_file(&path).unwrap();
    }

    fn phosphor_export_golden() -> Vec<u8> {
        include_bytes!("../../phosphor-format/tests/data/golden-v1.phtrace").to_vec()
    }
}
