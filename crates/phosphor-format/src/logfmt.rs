//! Formatting a log's message: its format string (as `format!` takes it: `{}`, `{0}`, `{:>8.3}`,
//! `{:#x}`, `{:?}`, `{{`) with the parameters recorded with it. Every tool prints messages the same
//! way through [`format_log`]: `phosphor logs`, the viewers and the OpenTelemetry span events.
//! A file is input from anywhere, so a mismatch or a malformed format string is shown, not fatal,
//! and a message is cut at [`MAX_MESSAGE_BYTES`].

use std::fmt::Write;

use crate::file::{Event, Value};
use crate::MAX_PARAMS;

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

/// Formats log event `e`'s message (its callsite's format string and its parameters) into `out`,
/// as [`format_log`] does. Allocates nothing once `out` has grown to the message's size.
pub fn format_event(out: &mut String, e: &Event<'_>) {
    let mut params = [Value::U64(0); MAX_PARAMS];
    let mut n = 0;
    for (slot, v) in params.iter_mut().zip(e.params.iter()) {
        *slot = v;
        n += 1;
    }
    format_log(out, &e.callsite.name, &params[..n]);
}

/// Log event `e`'s message in a new string: [`format_event`]'s.
pub fn event_message(e: &Event<'_>) -> String {
    let mut out = String::new();
    format_event(&mut out, e);
    out
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

    fn fmt(f: &str, p: &[Value<'_>]) -> String {
        let mut s = String::new();
        format_log(&mut s, f, p);
        s
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
