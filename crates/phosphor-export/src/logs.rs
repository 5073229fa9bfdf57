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

use std::fmt::Write;
use std::io::{self, BufWriter, Read};

use phosphor_format::file::{Block, ClockInfo, Event, Reader, StringTable, Value};
use phosphor_format::{glob_match, Level, MAX_PARAMS};

use crate::error::{Error, ExportSummary};
pub use crate::logs_window::DEFAULT_WINDOW_BYTES;
use crate::logs_window::{Pending, Window};
use crate::names::shown;

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

/// Formats log event `e`'s message (its callsite's format string and its parameters) into `out`.
pub fn format_event(out: &mut String, e: &Event<'_>) {
    let mut params = [Value::U64(0); MAX_PARAMS];
    let mut n = 0;
    for (slot, v) in params.iter_mut().zip(e.params.iter()) {
        *slot = v;
        n += 1;
    }
    format_log(out, &e.callsite.name, &params[..n]);
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

/// The longest formatted message, in bytes: a format string's widths can ask for far more than the
/// file holds (`{0:65536}` 4,096 times in a 37 KB file asked for 256 MiB per event); the message is
/// cut there and ends with [`CUT_MARK`].
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// What ends a message cut at [`MAX_MESSAGE_BYTES`].
pub const CUT_MARK: &str = " [cut]";

/// Formats `fmt` with `params` into `out` (cleared first). Allocates nothing once `out` has grown
/// to the message's size, except for values that need a temporary (padding). A message longer than
/// [`MAX_MESSAGE_BYTES`] is cut.
pub fn format_log(out: &mut String, fmt: &str, params: &[Value<'_>]) {
    out.clear();
    format_uncut(out, fmt, params);
    if out.len() > MAX_MESSAGE_BYTES {
        let mut at = MAX_MESSAGE_BYTES;
        while !out.is_char_boundary(at) {
            at -= 1;
        }
        out.truncate(at);
        out.push_str(CUT_MARK);
    }
}

/// `format_log`'s work; stops adding placeholders once past [`MAX_MESSAGE_BYTES`].
fn format_uncut(out: &mut String, fmt: &str, params: &[Value<'_>]) {
    let mut used = 0u64; // bit i: parameter i was used (parameters past 64 count as used)
    let mut next = 0usize;
    let b = fmt.as_bytes();
    let mut i = 0;
    let mut lit = 0;
    while i < b.len() {
        match b[i] {
            b'{' if b.get(i + 1) == Some(&b'{') => {
                out.push_str(&fmt[lit..i + 1]);
                i += 2;
                lit = i;
            }
            b'}' if b.get(i + 1) == Some(&b'}') => {
                out.push_str(&fmt[lit..i + 1]);
                i += 2;
                lit = i;
            }
            b'{' => {
                let Some(close) = fmt[i + 1..].find('}').map(|c| i + 1 + c) else {
                    break; // unclosed: the rest is printed as it is
                };
                out.push_str(&fmt[lit..i]);
                let inner = &fmt[i + 1..close];
                let (pos, spec) = match inner.split_once(':') {
                    Some((p, s)) => (p, s),
                    None => (inner, ""),
                };
                let index = if pos.is_empty() {
                    next += 1;
                    Some(next - 1)
                } else {
                    pos.trim().parse::<usize>().ok()
                };
                match index.and_then(|n| params.get(n).map(|v| (n, v))) {
                    Some((n, v)) => {
                        if n < 64 {
                            used |= 1 << n;
                        }
                        write_value(out, *v, &Spec::parse(spec));
                        if out.len() > MAX_MESSAGE_BYTES {
                            return;
                        }
                    }
                    None => out.push_str("{?}"),
                }
                i = close + 1;
                lit = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&fmt[lit..]);
    let mut first = true;
    for (n, v) in params.iter().enumerate().take(64) {
        if used & (1 << n) != 0 {
            continue;
        }
        out.push_str(if first { " [extra: " } else { ", " });
        first = false;
        write_value(out, *v, &Spec::parse("?"));
    }
    if !first {
        out.push(']');
    }
}

/// A parsed format spec: `[[fill]align][sign]['#']['0'][width]['.' precision][type]`.
#[derive(Debug, Default, PartialEq)]
struct Spec {
    fill: char,
    align: Option<char>,
    plus: bool,
    alt: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
    ty: char,
}

impl Spec {
    fn parse(s: &str) -> Spec {
        let mut spec = Spec { fill: ' ', ty: ' ', ..Spec::default() };
        let mut chars = s.chars().peekable();
        let mut ahead = s.chars();
        let (c0, c1) = (ahead.next(), ahead.next());
        let is_align = |c: Option<char>| matches!(c, Some('<' | '>' | '^'));
        if is_align(c1) {
            spec.fill = c0.unwrap_or(' ');
            spec.align = c1;
            chars.next();
            chars.next();
        } else if is_align(c0) {
            spec.align = c0;
            chars.next();
        }
        if chars.next_if_eq(&'+').is_some() {
            spec.plus = true;
        } else {
            chars.next_if_eq(&'-');
        }
        spec.alt = chars.next_if_eq(&'#').is_some();
        spec.zero = chars.next_if_eq(&'0').is_some();
        let digits = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
            let mut n: usize = 0;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                n = n.saturating_mul(10).saturating_add(d as usize).min(1 << 16);
                chars.next();
            }
            n
        };
        spec.width = digits(&mut chars);
        if chars.next_if_eq(&'.').is_some() {
            spec.precision = Some(digits(&mut chars));
        }
        if let Some(c) = chars.next() {
            spec.ty = c;
        }
        spec
    }
}

/// Writes one value under `spec`: the body by type, then the padding.
fn write_value(out: &mut String, v: Value<'_>, spec: &Spec) {
    let start = out.len();
    match v {
        Value::I64(n) => write_int(out, n < 0, n.unsigned_abs(), spec),
        Value::U64(n) => write_int(out, false, n, spec),
        Value::Pointer(p) => {
            let _ = write!(out, "{p:#x}");
        }
        Value::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        Value::F64(f) => write_float(out, f, spec),
        Value::Str(s) if spec.ty == '?' => {
            let _ = write!(out, "{s:?}");
        }
        Value::Str(s) => match spec.precision {
            Some(p) => out.extend(s.chars().take(p)),
            None => out.push_str(s),
        },
    }
    pad(out, start, spec, matches!(v, Value::I64(_) | Value::U64(_) | Value::F64(_)));
}

fn write_int(out: &mut String, negative: bool, n: u64, spec: &Spec) {
    if negative {
        out.push('-');
    } else if spec.plus {
        out.push('+');
    }
    let _ = match (spec.ty, spec.alt) {
        ('x', false) => write!(out, "{n:x}"),
        ('x', true) => write!(out, "{n:#x}"),
        ('X', false) => write!(out, "{n:X}"),
        ('X', true) => write!(out, "{n:#X}"),
        ('o', false) => write!(out, "{n:o}"),
        ('o', true) => write!(out, "{n:#o}"),
        ('b', false) => write!(out, "{n:b}"),
        ('b', true) => write!(out, "{n:#b}"),
        ('e', _) => write!(out, "{n:e}"),
        ('E', _) => write!(out, "{n:E}"),
        _ => write!(out, "{n}"),
    };
}

fn write_float(out: &mut String, f: f64, spec: &Spec) {
    if spec.plus && f.is_sign_positive() && !f.is_nan() {
        out.push('+');
    }
    let _ = match (spec.ty, spec.precision) {
        ('e', Some(p)) => write!(out, "{f:.p$e}"),
        ('e', None) => write!(out, "{f:e}"),
        ('E', Some(p)) => write!(out, "{f:.p$E}"),
        ('E', None) => write!(out, "{f:E}"),
        ('?', Some(p)) => write!(out, "{f:.p$?}"),
        ('?', None) => write!(out, "{f:?}"),
        (_, Some(p)) => write!(out, "{f:.p$}"),
        (_, None) => write!(out, "{f}"),
    };
}

/// Pads what was written since `start` to the spec's width: zero padding after the sign and
/// radix prefix for numbers, else fill and alignment (numbers to the right by default).
fn pad(out: &mut String, start: usize, spec: &Spec, numeric: bool) {
    let len = out[start..].chars().count();
    if len >= spec.width {
        return;
    }
    let missing = spec.width - len;
    if spec.zero && numeric && spec.align.is_none() {
        let mut at = start;
        if out[at..].starts_with(['-', '+']) {
            at += 1;
        }
        if ["0x", "0X", "0b", "0o"].iter().any(|p| out[at..].starts_with(p)) {
            at += 2;
        }
        out.insert_str(at, &"0".repeat(missing));
        return;
    }
    let align = spec.align.unwrap_or(if numeric { '>' } else { '<' });
    let (before, after) = match align {
        '>' => (missing, 0),
        '^' => (missing / 2, missing - missing / 2),
        _ => (0, missing),
    };
    let fill: String = std::iter::repeat_n(spec.fill, before).collect();
    out.insert_str(start, &fill);
    out.extend(std::iter::repeat_n(spec.fill, after));
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

    fn fmt(f: &str, p: &[Value<'_>]) -> String {
        let mut s = String::new();
        format_log(&mut s, f, p);
        s
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

    #[test]
    fn placeholders_take_the_parameters_in_order() {
        assert_eq!(
            fmt("user {} from {} ok={}", &[Value::U64(42), Value::Str("db-7"), Value::Bool(true)]),
            "user 42 from db-7 ok=true"
        );
        assert_eq!(fmt("{1} then {0} then {}", &[Value::I64(-1), Value::I64(2)]), "2 then -1 then -1");
        assert_eq!(fmt("{{literal}} {}", &[Value::U64(1)]), "{literal} 1");
        assert_eq!(fmt("no placeholders", &[]), "no placeholders");
    }

    #[test]
    fn specs_match_what_format_gives() {
        let cases: Vec<(&str, Value<'_>, String)> = vec![
            ("{:5}", Value::U64(42), format!("{:5}", 42u64)),
            ("{:<5}|", Value::U64(42), format!("{:<5}|", 42u64)),
            ("{:^7}", Value::Str("ab"), format!("{:^7}", "ab")),
            ("{:*>6}", Value::Str("ab"), format!("{:*>6}", "ab")),
            ("{:08.3}", Value::F64(-4.56789), format!("{:08.3}", -4.56789f64)),
            ("{:+}", Value::I64(5), format!("{:+}", 5i64)),
            ("{:#x}", Value::U64(255), format!("{:#x}", 255u64)),
            ("{:#010x}", Value::U64(255), format!("{:#010x}", 255u64)),
            ("{:X}", Value::U64(48879), format!("{:X}", 48879u64)),
            ("{:o}", Value::U64(8), format!("{:o}", 8u64)),
            ("{:#b}", Value::U64(5), format!("{:#b}", 5u64)),
            ("{:e}", Value::F64(1234.5), format!("{:e}", 1234.5f64)),
            ("{:.2e}", Value::F64(1234.5), format!("{:.2e}", 1234.5f64)),
            ("{:?}", Value::Str("q\"x"), format!("{:?}", "q\"x")),
            ("{:?}", Value::F64(1.0), format!("{:?}", 1.0f64)),
            ("{}", Value::F64(1.0), format!("{}", 1.0f64)),
            ("{:.1}", Value::F64(12.25), format!("{:.1}", 12.25f64)),
            ("{:.3}", Value::Str("abcdef"), format!("{:.3}", "abcdef")),
            ("{:5}", Value::I64(-42), format!("{:5}", -42i64)),
            ("{:05}", Value::I64(-42), format!("{:05}", -42i64)),
            ("{:>6}", Value::Bool(false), format!("{:>6}", false)),
            ("{}", Value::I64(i64::MIN), format!("{}", i64::MIN)),
        ];
        for (f, v, want) in cases {
            assert_eq!(fmt(f, &[v]), want, "{f} with {v:?}");
        }
        // Integers of every size against format!, in decimal and hex with padding.
        for n in [0u64, 1, 9, 10, 255, 65_535, u64::MAX] {
            assert_eq!(fmt("{:>12}|{:#06x}", &[Value::U64(n), Value::U64(n)]), format!("{n:>12}|{n:#06x}"));
        }
    }

    #[test]
    fn mismatches_and_malformed_strings_are_shown_not_fatal() {
        assert_eq!(fmt("{} and {}", &[Value::U64(1)]), "1 and {?}");
        assert_eq!(fmt("{}", &[Value::U64(1), Value::Str("x")]), "1 [extra: \"x\"]");
        assert_eq!(fmt("open {", &[Value::U64(1)]), "open { [extra: 1]");
        assert_eq!(fmt("{9}", &[]), "{?}");
        assert_eq!(fmt("{x}", &[Value::U64(1)]), "{?} [extra: 1]");
        assert_eq!(fmt("é{}ü", &[Value::Str("ñ")]), "éñü");
        assert_eq!(fmt("{:99999999999}", &[Value::U64(1)]).len(), 1 << 16, "widths are capped");
        // And so is the message: 4,096 widths of 64 Ki once made a 256 MiB message.
        let bomb = "{0:65536}".repeat(4096);
        let m = fmt(&bomb, &[Value::U64(1)]);
        assert_eq!(m.len(), MAX_MESSAGE_BYTES + CUT_MARK.len());
        assert!(m.ends_with(CUT_MARK));
        // Arbitrary bytes never panic.
        for f in ["{", "}", "{:", "{:}", "{::}", "{:.}", "{:<}", "{:é^3}", "{}}", "{{}"] {
            let _ = fmt(f, &[Value::U64(1), Value::F64(f64::NAN)]);
        }
    }
}
