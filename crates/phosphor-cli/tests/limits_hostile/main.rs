//! The reading commands on valid but hostile trace files (`phosphor-craft`'s catalog at its test
//! scale): each must end with status 0 or 2, within a peak RSS of max(128 MiB, 3 × the file), and
//! print JSON that parses with no non-finite number in it, whatever the file's shape.
//!
//! Peak RSS is the child's (`wait4`), which Linux starts at this process's own peak: the table
//! marks such a figure `≤`, and this process keeps its peak below the limit (JSON up to 8 MiB is
//! parsed, a larger document only scanned for non-finite numbers) so the assertion stays exact.
//!
//! Time is not asserted, since this machine is shared and the binary is a debug build
//! (`scripts/bench-hostile.sh` holds the 10 s target, in release); a watchdog (120 s, or
//! `PHOSPHOR_LIMITS_WATCHDOG_SECS`) still fails a run gone far past linear. Each child runs under an address-space cap of four times its RSS limit (at least 1 GiB), so that a
//! blow-up aborts instead of taking the memory of the builds beside it. A failure prints the table
//! of every command on the file.
//!
//! A test binary of its own: Linux starts a child's peak RSS at the spawning process's, so the
//! other integration tests (a demo in process, whole traces parsed) must not share its process.

#[allow(dead_code)] // shared with the `it` tests; this binary uses `scratch` only
#[path = "../it/cli.rs"]
mod cli;

use std::fmt::{self, Write as _};
use std::io::Read;
use std::process::{ChildStdout, Command};
use std::sync::OnceLock;
use std::time::Duration;

use phosphor_craft::measure::{self, Limits};
use phosphor_craft::{catalog, Scale};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::cli::scratch;

const MIB: u64 = 1 << 20;

fn watchdog() -> Duration {
    let secs = std::env::var("PHOSPHOR_LIMITS_WATCHDOG_SECS").ok().and_then(|s| s.parse().ok());
    Duration::from_secs(secs.unwrap_or(120))
}

/// Whether this binary's `convert` has a `text` format.
fn has_text_format() -> bool {
    static TEXT: OnceLock<bool> = OnceLock::new();
    *TEXT.get_or_init(|| {
        let out = Command::new(env!("CARGO_BIN_EXE_phosphor")).args(["convert", "--help"]).output();
        out.is_ok_and(|o| phosphor_craft::lists_text_format(&String::from_utf8_lossy(&o.stdout)))
    })
}

/// Any JSON value, visited without being built: fails on a non-finite number, or a string that
/// reads as one (`"NaN"`, `"inf"`, `"-inf ns"`).
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Checked, D::Error> {
        d.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

/// Whether `s` holds a word that parses as an infinite or NaN float.
fn non_finite_word(s: &str) -> bool {
    s.split_whitespace().any(|w| w.parse::<f64>().is_ok_and(|f| !f.is_finite()))
}

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Checked, E> {
        if v.is_finite() {
            Ok(Checked)
        } else {
            Err(E::custom(format!("non-finite number {v}")))
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Checked, E> {
        if non_finite_word(v) {
            let shown: String = v.chars().take(80).collect();
            return Err(E::custom(format!("a non-finite number in the string {shown:?}")));
        }
        Ok(Checked)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_entry::<Checked, Checked>()?.is_some() {}
        Ok(Checked)
    }
}

/// What a command printed: its size, and what is wrong with it as JSON (when it should be JSON).
struct Output {
    bytes: u64,
    json_error: Option<String>,
}

/// JSON output read whole and parsed. A larger document is only scanned as it streams, for a
/// `NaN` or `Infinity` outside its strings: parsing it would hold its largest string (a 128 MiB
/// log message, say), and this process must stay small, since its own peak RSS is charged to every
/// child it spawns after (see `Measured::inherited`).
const PARSED_JSON: u64 = 1 << 20;

/// Checks JSON (`lines`: any number of documents, one per line; else one) for a non-finite number.
fn check_json(doc: &[u8], lines: bool) -> Option<String> {
    let mut values = 0;
    for v in serde_json::Deserializer::from_slice(doc).into_iter::<Checked>() {
        if let Err(e) = v {
            return Some(e.to_string());
        }
        values += 1;
    }
    (!lines && values != 1).then(|| format!("{values} JSON documents, not one"))
}

/// Scans JSON as it streams, in constant memory, for a `NaN` or `Infinity` outside strings.
fn scan_json(r: impl Read) -> (u64, Option<String>) {
    let (mut bytes, mut in_string, mut escaped, mut word) = (0u64, false, false, Vec::new());
    let mut found = None;
    let mut buf = vec![0u8; 1 << 16];
    let mut r = r;
    while let Ok(n @ 1..) = r.read(&mut buf) {
        bytes += n as u64;
        for &c in &buf[..n] {
            if in_string {
                (in_string, escaped) = (escaped || c != b'"', !escaped && c == b'\\');
            } else if c == b'"' {
                in_string = true;
            } else if c.is_ascii_alphabetic() {
                word.push(c);
            } else if !word.is_empty() {
                if found.is_none() && !matches!(&word[..], b"true" | b"false" | b"null" | b"e" | b"E") {
                    found = Some(format!("a bare {:?}", String::from_utf8_lossy(&word)));
                }
                word.clear();
            }
        }
    }
    (bytes, found)
}

/// Reads a command's standard output to the end; with `json`, checks it (see [`PARSED_JSON`]).
fn consume(mut out: ChildStdout, json: bool, lines: bool) -> Output {
    if !json {
        return Output { bytes: measure::count_bytes(out), json_error: None };
    }
    // Sized once: growing by doubling would reach twice the bound.
    let mut doc = Vec::with_capacity(PARSED_JSON as usize + 1);
    let _ = (&mut out).take(PARSED_JSON).read_to_end(&mut doc);
    if (doc.len() as u64) < PARSED_JSON {
        return Output { bytes: doc.len() as u64, json_error: check_json(&doc, lines) };
    }
    let (bytes, json_error) = scan_json(doc.as_slice().chain(out));
    Output { bytes, json_error }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

/// Writes the catalog's case `name`, runs every reading command on it, and fails with the table of
/// all of them if any ended badly, took more memory than its limit, or printed bad JSON.
fn check(name: &str) {
    let case = catalog(Scale::Test).into_iter().find(|c| c.name == name).expect("a case of the catalog");
    let dir = scratch(&format!("limits-{name}"));
    let file = case.write_to(&dir).expect("the hostile file is written");
    let size = std::fs::metadata(&file).unwrap().len();
    let limit = (128 * MIB).max(3 * size);
    let limits = Limits { watchdog: watchdog(), address_space: Some((4 * limit).max(1 << 30)) };
    let mut table = format!(
        "{name}: {:.1} MiB, RSS limit {:.0} MiB\n  {:<28} {:>16} {:>9} {:>10} {:>10}\n",
        mib(size),
        mib(limit),
        "command",
        "exit",
        "wall",
        "peak RSS",
        "output"
    );
    let mut failures = Vec::new();
    for args in case.commands(&file, &dir, has_text_format()) {
        let json = args.iter().any(|a| a == "--json" || a == "chrome");
        let lines = args[0] == "logs";
        let shown: Vec<&str> =
            args.iter().map(String::as_str).filter(|a| !a.contains('/') || *a == "/dev/null").collect();
        let shown = shown.join(" ");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_phosphor"));
        cmd.args(&args).current_dir(&dir);
        let (m, out) = measure::run(&mut cmd, &limits, move |o| consume(o, json, lines))
            .unwrap_or_else(|e| panic!("{shown}: {e}"));
        // At most what this process had used (charged to the child), or exact.
        let at_most = if m.max_rss <= m.inherited { "≤" } else { " " };
        let _ = writeln!(
            table,
            "  {shown:<28} {:>16} {:>8.2}s {at_most}{:>6.0} MiB {:>6.1} MiB",
            m.end(),
            m.wall.as_secs_f64(),
            mib(m.max_rss),
            mib(out.bytes)
        );
        assert!(
            m.inherited < limit,
            "this test process's own peak RSS ({:.0} MiB) is over the limit: it cannot judge a child",
            mib(m.inherited)
        );
        if m.timed_out || !matches!(m.code(), Some(0 | 2)) {
            let why = m.stderr.lines().find(|l| l.contains("panicked") || l.starts_with("phosphor:"));
            failures.push(format!("{shown}: ended {} ({})", m.end(), why.unwrap_or("").trim()));
        }
        if m.max_rss > limit {
            failures.push(format!("{shown}: peak RSS {:.0} MiB > {:.0} MiB", mib(m.max_rss), mib(limit)));
        }
        if let Some(e) = out.json_error {
            failures.push(format!("{shown}: bad JSON: {e}"));
        }
    }
    // Shown with --nocapture, and in a failure's message.
    eprintln!("{table}");
    assert!(failures.is_empty(), "{}\n\n{table}", failures.join("\n"));
}

#[test]
fn one_huge_string_naming_many_callsites_is_held_once() {
    check("huge-callsite-name");
}

#[test]
fn one_huge_string_naming_many_threads_is_held_once() {
    check("huge-thread-name");
}

#[test]
fn async_halves_waiting_for_their_other_half_cost_no_more_than_the_file() {
    check("asyncs-waiting");
}

#[test]
fn ten_thousand_begins_left_open_cost_no_more_than_the_file() {
    check("unclosed-begins");
}

#[test]
fn scopes_nested_ten_thousand_deep_cost_no_more_than_the_file() {
    check("nested-10k");
}

#[test]
fn scopes_nested_thirty_thousand_deep_cost_no_more_than_the_file() {
    check("nested-deep");
}

#[test]
fn timestamps_that_keep_going_back_cost_no_more_than_the_file() {
    check("backward-decreasing");
}

#[test]
fn timestamps_that_alternate_late_and_early_cost_no_more_than_the_file() {
    check("backward-alternating");
}

#[test]
fn an_infinite_clock_rate_gives_finite_json() {
    check("clock-inf");
}

#[test]
fn a_nan_clock_rate_gives_finite_json() {
    check("clock-nan");
}

#[test]
fn a_zero_clock_rate_gives_finite_json() {
    check("clock-zero");
}

#[test]
fn a_negative_clock_rate_gives_finite_json() {
    check("clock-negative");
}

#[test]
fn a_subnormal_clock_rate_gives_finite_json() {
    check("clock-subnormal");
}

#[test]
fn twenty_five_thousand_callsites_cost_no_more_than_the_file() {
    check("many-callsites");
}

#[test]
fn twenty_thousand_threads_cost_no_more_than_the_file() {
    check("many-threads");
}

#[test]
fn chunks_of_one_event_with_every_other_one_lost_cost_no_more_than_the_file() {
    check("tiny-chunks");
}

#[test]
fn events_named_by_long_distinct_arguments_cost_no_more_than_the_file() {
    check("huge-args");
}

#[test]
fn a_log_format_string_asking_for_enormous_widths_costs_no_more_than_the_file() {
    check("log-width");
}

#[test]
fn logs_that_overflow_the_reorder_window_cost_no_more_than_the_file() {
    check("logs-out-of-order");
}

#[test]
fn long_names_nested_deep_cost_no_more_than_the_file() {
    check("deep-long-names");
}

#[test]
fn recovering_a_ring_file_costs_no_more_than_three_times_the_file() {
    check("ring");
}

#[test]
fn the_json_checks_find_a_non_finite_number_where_a_tool_would_print_one() {
    let ok = br#"{"name": "banana \"info\"", "v": [1e5, -2.5E-3, true, null]}"#;
    assert_eq!(scan_json(&ok[..]), (ok.len() as u64, None));
    assert_eq!(check_json(ok, false), None);
    // The scan skips strings; the parse also flags a string that reads as a non-finite number.
    assert_eq!(scan_json(&br#"{"mean": "NaN ns"}"#[..]).1, None);
    assert!(check_json(br#"{"mean": "NaN ns"}"#, false).is_some());
    assert!(scan_json(&br#"{"v": NaN}"#[..]).1.is_some());
    assert!(scan_json(&br#"{"v": -Infinity}"#[..]).1.is_some());
    assert!(check_json(br#"{"v": NaN}"#, false).is_some());
    assert!(check_json(br#"{"mean": "inf"}"#, false).is_some());
    assert_eq!(check_json(b"{}\n{}\n", true), None);
    assert!(check_json(b"{}\n{}\n", false).is_some());
}
