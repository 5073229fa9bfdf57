//! Deferred logs: formatting a log callsite's format string (`trace_log!`'s, checked by the
//! compiler when it was recorded) with the event's parameters, the way `format!` would, and
//! [`write_logs`], the streaming printer behind `phosphor logs` (in time order, through the
//! bounded reorder window of `logs_window.rs`).
//!
//! Supported, as in Rust's format strings: `{}` and `{:?}`, `{{`/`}}`, explicit positions (`{0}`),
//! fill and alignment (`{:>8}`, `{:*^9}`), sign (`{:+}`), `#` (`{:#x}`), zero padding (`{:08.3}`),
//! width, precision, and the types `x`, `X`, `o`, `b`, `e`, `E`, `p`. Named arguments and
//! `width$`/`.*` (which `trace_log!` cannot produce for its positional parameters) are not.
//!
//! It never fails and never panics, whatever the input (a file may be corrupt): a placeholder
//! without a parameter prints as `{?}`, an unclosed brace is printed as it is, and parameters no
//! placeholder used are appended as ` [extra: a, b]`.

use std::io::{self, BufWriter, Read};

use phosphor_format::file::{Block, ClockInfo, Event, Reader, StringTable, Value};
use phosphor_format::{glob_match, Level, MAX_PARAMS};

use crate::error::{Error, ExportSummary};
pub use crate::logs_window::DEFAULT_WINDOW_BYTES;
use crate::logs_window::{Pending, Window};
/// The message formatter lives with the file format, where every tool (the OTLP span events too)
/// shares it.
pub use phosphor_format::logfmt::{event_message, format_event, format_log, CUT_MARK, MAX_MESSAGE_BYTES};
use phosphor_model::names::shown;

/// The name a viewer should show for `e`: a log's formatted message (written into `scratch`), the
/// run-time name of a `dyn`-named event (its argument 0), or the callsite's name.
pub fn event_name<'a>(e: &'a Event<'_>, scratch: &'a mut String) -> &'a str {
    let cs = &e.callsite;
    if cs.level.is_some() {
        format_event(scratch, e);
        return scratch;
    }
    if cs.dynamic_name {
        if let Some((_, Value::Str(s))) = e.args[0] {
            return s;
        }
    }
    &cs.name
}

/// Writes [`event_name`] into `out` (cleared first).
pub fn write_event_name(out: &mut String, e: &Event<'_>) {
    if e.callsite.level.is_some() {
        format_event(out, e);
        return;
    }
    out.clear();
    match e.args[0] {
        Some((_, Value::Str(s))) if e.callsite.dynamic_name => out.push_str(s),
        _ => out.push_str(&e.callsite.name),
    }
}

/// Whether argument `i` of `e` is shown as an argument (argument 0 of a `dyn`-named event is its
/// name instead).
pub fn shows_arg(e: &Event<'_>, i: usize) -> bool {
    !(i == 0 && e.callsite.dynamic_name)
}

/// What `phosphor logs` prints.
#[derive(Clone, Debug, Default)]
pub struct LogFilter {
    /// Only this level and more severe.
    pub max_level: Option<Level>,
    /// Only categories matching this glob (`*`, `?`).
    pub category: Option<String>,
    /// One JSON object per line instead of text.
    pub json: bool,
    /// The reorder window's budget in bytes ([`DEFAULT_WINDOW_BYTES`] when `None`; 0 prints in
    /// file order).
    pub window_bytes: Option<usize>,
}

/// How far [`write_logs`]'s output is from time order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogOrder {
    /// Logs printed after a later log: they were read once the reorder window had filled and let
    /// the later one out.
    pub out_of_order: u64,
}

/// Writes every log event of the trace, one line each, in time order: time since the trace's
/// clock origin in seconds (µs precision), level, thread, category and the formatted message; or,
/// with `json`, one object per line (`ts_ns`, `level`, `tid`, `thread`, `category`, `message`,
/// `file`, `line`).
///
/// Chunks come thread by thread, so logs wait in a reorder window (`logs_window.rs`) of at most
/// `filter.window_bytes`: memory is bounded whatever the file's size, and the output is in time
/// order whenever the file's logs fit in it. Logs printed after a later one because the window
/// was full are counted in `order`, also when reading stops at damage (the summary of the logs
/// printed before it is then in the error).
pub fn write_logs<R: Read, W: io::Write>(
    mut reader: Reader<R>,
    out: W,
    filter: &LogFilter,
    order: &mut LogOrder,
) -> Result<ExportSummary, Error> {
    let mut out = BufWriter::with_capacity(1 << 16, out);
    let clock = reader.header().clock.clone();
    let mut summary = ExportSummary::default();
    let mut window = Window::new(filter.window_bytes.unwrap_or(DEFAULT_WINDOW_BYTES));
    let mut printer = Printer { msg: String::new(), json: filter.json, clock: &clock };
    let failure = loop {
        let block = match reader.next_block() {
            Ok(Some(b)) => b,
            Ok(None) => break None,
            Err(source) => break Some(source),
        };
        let Block::Chunk(chunk) = block else { continue };
        summary.chunks += 1;
        for e in chunk.events() {
            let e = match e {
                Ok(e) => e,
                Err(source) => {
                    // The logs read before the damage are printed, in order, then the error.
                    let strings = chunk.strings();
                    while let Some(p) = window.pop(true) {
                        printer.print(&mut out, strings, &p)?;
                        summary.events += 1;
                    }
                    order.out_of_order = window.out_of_order;
                    io::Write::flush(&mut out)?;
                    return Err(Error::Read { offset: source.offset(), exported: summary, source });
                }
            };
            let Some(level) = e.callsite.level else { continue };
            if filter.max_level.is_some_and(|max| level > max)
                || filter.category.as_deref().is_some_and(|g| !glob_match(g, &e.callsite.category))
            {
                continue;
            }
            // The name as the blocks before this chunk define it (a threads block precedes the
            // chunks in saved files), else the id.
            let thread = chunk.thread_name(e.tid).map(|n| n.index());
            let seq = window.next_seq();
            window.push(Pending::new(&e, level, seq, thread));
            while let Some(p) = window.pop(false) {
                printer.print(&mut out, chunk.strings(), &p)?;
                summary.events += 1;
            }
        }
    };
    while let Some(p) = window.pop(true) {
        printer.print(&mut out, reader.strings(), &p)?;
        summary.events += 1;
    }
    io::Write::flush(&mut out)?;
    order.out_of_order = window.out_of_order;
    if let Some(source) = failure {
        return Err(Error::Read { offset: source.offset(), exported: summary, source });
    }
    summary.threads = u32::try_from(reader.thread_names().len()).unwrap_or(u32::MAX);
    summary.complete = reader.trailer().is_some();
    Ok(summary)
}

/// Prints pending logs: the scratch space of their messages.
struct Printer<'c> {
    msg: String,
    json: bool,
    clock: &'c ClockInfo,
}

impl Printer<'_> {
    fn print(&mut self, out: &mut impl io::Write, strings: &StringTable, p: &Pending) -> io::Result<()> {
        let text = |i| Pending::text(strings, i);
        let mut params = [Value::U64(0); MAX_PARAMS];
        let n = p.params(&mut params);
        format_log(&mut self.msg, text(p.format), &params[..n]);
        let line = LogLine {
            ns: self.clock.since_origin_ns(p.ts),
            level: p.level,
            tid: p.tid,
            thread: p.thread.map(text),
            category: text(p.category),
            file: text(p.file),
            line: p.line,
        };
        // Straight to the buffered output: a line is as long as its message, which may be a long
        // format string, and is not copied again.
        if self.json {
            line.write_json(out, &self.msg)
        } else {
            line.write_text(out, &self.msg)
        }
    }
}

/// What a line of `phosphor logs` shows besides the message.
struct LogLine<'a> {
    /// Since the clock's origin.
    ns: i64,
    level: Level,
    tid: u32,
    /// The thread's name, if it has one.
    thread: Option<&'a str>,
    category: &'a str,
    file: &'a str,
    line: u32,
}

impl LogLine<'_> {
    /// `   1.000250 INFO  [main] category: message`
    fn write_text(&self, out: &mut impl io::Write, msg: &str) -> io::Result<()> {
        let level = match self.level {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
            Level::Trace => "TRACE",
        };
        // Before the origin is `-0.000001`, not `-1.999999` (-1 s + 999,999 µs).
        let (sign, ns) = (if self.ns < 0 { "-" } else { "" }, self.ns.unsigned_abs());
        let (s, us) = (ns / 1_000_000_000, ns % 1_000_000_000 / 1000);
        write!(out, "{:>4}.{us:06} {level:<5} [", format!("{sign}{s}"))?;
        match self.thread {
            Some(name) => out.write_all(shown(name).as_bytes())?,
            None => write!(out, "{}", self.tid)?,
        }
        out.write_all(b"] ")?;
        out.write_all(shown(self.category).as_bytes())?;
        out.write_all(b": ")?;
        out.write_all(msg.as_bytes())?;
        out.write_all(b"\n")
    }

    /// One JSON object: `ts_ns`, `level`, `tid`, `thread`, `category`, `message`, `file`, `line`.
    /// Names repeat on every line, so they are cut as elsewhere (`names.rs`); a message at 1 MiB.
    fn write_json(&self, out: &mut impl io::Write, msg: &str) -> io::Result<()> {
        write!(out, "{{\"ts_ns\":{},\"level\":\"{}\",\"tid\":{},\"thread\":", self.ns, self.level, self.tid)?;
        match self.thread {
            Some(name) => json_str(out, &shown(name))?,
            None => write!(out, "\"{}\"", self.tid)?,
        }
        out.write_all(b",\"category\":")?;
        json_str(out, &shown(self.category))?;
        out.write_all(b",\"message\":")?;
        json_str(out, msg)?;
        out.write_all(b",\"file\":")?;
        json_str(out, &shown(self.file))?;
        writeln!(out, ",\"line\":{}}}", self.line)
    }
}

/// `s` as a JSON string; the runs between characters that need escaping are written whole.
fn json_str(out: &mut impl io::Write, s: &str) -> io::Result<()> {
    out.write_all(b"\"")?;
    let mut run = 0;
    for (i, c) in s.char_indices() {
        let escape = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => "",
            _ => continue,
        };
        out.write_all(&s.as_bytes()[run..i])?;
        if escape.is_empty() {
            write!(out, "\\u{:04x}", c as u32)?;
        } else {
            out.write_all(escape.as_bytes())?;
        }
        run = i + c.len_utf8();
    }
    out.write_all(&s.as_bytes()[run..])?;
    out.write_all(b"\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_escape_what_json_needs_and_read_back_the_same() {
        let text = "a\"b\\c\nd\re\tf\u{1}g\u{2028}h\u{2029}ünï";
        let mut out = Vec::new();
        json_str(&mut out, text).unwrap();
        let json = String::from_utf8(out).unwrap();
        assert_eq!(json, r#""a\"b\\c\nd\re\tf\u0001g\u2028h\u2029ünï""#);
        assert_eq!(serde_json::from_str::<String>(&json).unwrap(), text);
    }

    #[test]
    fn times_before_the_clock_origin_read_as_negative_seconds() {
        let line = |ns| {
            let l =
                LogLine { ns, level: Level::Info, tid: 1, thread: None, category: "c", file: "", line: 0 };
            let mut out = Vec::new();
            l.write_text(&mut out, "m").unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(line(-1_000), "  -0.000001 INFO  [1] c: m\n");
        assert_eq!(line(-2_500_000_000), "  -2.500000 INFO  [1] c: m\n");
        assert_eq!(line(1_000_250_000), "   1.000250 INFO  [1] c: m\n");
    }
}
