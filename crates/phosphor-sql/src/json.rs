//! An event's arguments as the text of a JSON object, for the `arguments` column: one column of
//! one type whatever the arguments, which DataFusion's string functions, DuckDB's `json_extract`
//! and pandas read alike.

use std::fmt::Write;

use arrow::array::{StringArray, StringBuilder};
use phosphor_format::file::Value;

/// `{"name": value, ...}` of `args`, or `None` if there are none. A pointer is its address as a
/// `"0x…"` string, a float that JSON cannot hold (NaN, infinities) `null`.
#[cfg(test)]
pub(crate) fn object<'a>(args: impl IntoIterator<Item = (&'a str, Value<'a>)>) -> Option<Box<str>> {
    let mut out = String::new();
    write_object(&mut out, args).then(|| out.into_boxed_str())
}

/// The `arguments` column of rows whose arguments are packed in each of `packed`
/// ([`crate::args_table::Packed`]'s layout; empty: none, `NULL`), each written as
/// [`write_object`] writes it straight into the column's buffer.
pub(crate) fn column<'a>(packed: impl Iterator<Item = &'a [u8]>, rows: usize) -> StringArray {
    let mut b = StringBuilder::with_capacity(rows, rows * 32);
    for args in packed {
        if write_object(&mut b, crate::args_table::unpack(args)) {
            b.append_value("");
        } else {
            b.append_null();
        }
    }
    b.finish()
}

/// Writes `{"name": value, ...}` of `args` to `out`, and returns whether there were any (if
/// not, writes nothing). A pointer is its address as a `"0x…"` string, a float that JSON cannot
/// hold (NaN, infinities) `null`.
pub(crate) fn write_object<'a>(
    out: &mut impl Write,
    args: impl IntoIterator<Item = (&'a str, Value<'a>)>,
) -> bool {
    let mut any = false;
    for (name, value) in args {
        let _ = out.write_char(if any { ',' } else { '{' });
        any = true;
        string(out, name);
        let _ = out.write_char(':');
        let _ = match value {
            Value::I64(v) if v < 0 => out.write_char('-').and_then(|()| decimal(out, v.unsigned_abs())),
            Value::I64(v) => decimal(out, v.unsigned_abs()),
            Value::U64(v) => decimal(out, v),
            Value::F64(v) if v.is_finite() => write!(out, "{v}"),
            Value::F64(_) => out.write_str("null"),
            Value::Bool(v) => out.write_str(if v { "true" } else { "false" }),
            Value::Str(s) => {
                string(out, s);
                Ok(())
            }
            Value::Pointer(p) => write!(out, "\"{p:#x}\""),
        };
    }
    if any {
        let _ = out.write_char('}');
    }
    any
}

/// `v` in decimal, as `{v}` formats it, without the formatting machinery (most arguments are
/// integers, written a row at a time).
fn decimal(out: &mut impl Write, mut v: u64) -> std::fmt::Result {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    // Only ASCII digits were written: UTF-8.
    out.write_str(std::str::from_utf8(&digits[at..]).unwrap_or_default())
}

/// `s` as a JSON string: quoted, with `"`, `\` and control characters escaped; the runs of
/// bytes that need no escape copied whole.
fn string(out: &mut impl Write, s: &str) {
    let _ = out.write_char('"');
    let mut from = 0;
    for (i, b) in s.bytes().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            b if b < 0x20 => "",
            _ => continue,
        };
        // `i` is an ASCII byte's: a char boundary.
        let _ = out.write_str(&s[from..i]);
        let _ = if escaped.is_empty() { write!(out, "\\u{:04x}", b) } else { out.write_str(escaped) };
        from = i + 1;
    }
    let _ = out.write_str(&s[from..]);
    let _ = out.write_char('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_a_json_object_with_strings_escaped() {
        let args = [
            ("n", Value::I64(-3)),
            ("q\"uote", Value::Str("a\\b\n\u{1}")),
            ("x", Value::F64(f64::NAN)),
            ("p", Value::Pointer(255)),
            ("b", Value::Bool(true)),
            ("f", Value::F64(0.5)),
        ];
        assert_eq!(
            object(args).as_deref(),
            Some(r#"{"n":-3,"q\"uote":"a\\b\n\u0001","x":null,"p":"0xff","b":true,"f":0.5}"#)
        );
        assert_eq!(object([]), None);
    }

    #[test]
    fn integers_are_written_as_rust_formats_them() {
        for v in [0i64, 7, -1, 10, -10, 99, 100, 1234567890, i64::MIN, i64::MAX] {
            assert_eq!(object([("v", Value::I64(v))]).as_deref(), Some(format!("{{\"v\":{v}}}").as_str()));
        }
        for v in [0u64, 9, 10, 18446744073709551615, 1 << 63] {
            assert_eq!(object([("v", Value::U64(v))]).as_deref(), Some(format!("{{\"v\":{v}}}").as_str()));
        }
    }

    #[test]
    fn the_column_writes_each_rows_packed_arguments_as_their_object() {
        use arrow::array::Array;
        let rows: [&[(&str, Value<'_>)]; 3] =
            [&[("a", Value::U64(7)), ("s", Value::Str("x\ty"))], &[], &[("é", Value::F64(-1.5))]];
        let packed: Vec<Vec<u8>> = rows
            .iter()
            .map(|args| {
                crate::args_table::Packed::of(args.iter().copied()).map_or(Vec::new(), |p| p.bytes().to_vec())
            })
            .collect();
        let column = column(packed.iter().map(Vec::as_slice), rows.len());
        assert_eq!(column.len(), 3);
        for (i, args) in rows.iter().enumerate() {
            let expected = object(args.iter().copied());
            assert_eq!(column.is_valid(i).then(|| column.value(i)), expected.as_deref(), "row {i}");
        }
        assert_eq!(column.value(0), r#"{"a":7,"s":"x\ty"}"#);
    }
}
