//! An event's arguments as the text of a JSON object, for the `arguments` column: one column of
//! one type whatever the arguments, which DataFusion's string functions, DuckDB's `json_extract`
//! and pandas read alike.

use std::fmt::Write;

use phosphor_format::file::Value;

/// `{"name": value, ...}` of `args`, or `None` if there are none. A pointer is its address as a
/// `"0x…"` string, a float that JSON cannot hold (NaN, infinities) `null`.
pub(crate) fn object<'a>(args: impl IntoIterator<Item = (&'a str, Value<'a>)>) -> Option<Box<str>> {
    let mut out = String::new();
    for (name, value) in args {
        out.push(if out.is_empty() { '{' } else { ',' });
        string(&mut out, name);
        out.push(':');
        match value {
            Value::I64(v) => write!(out, "{v}").unwrap_or(()),
            Value::U64(v) => write!(out, "{v}").unwrap_or(()),
            Value::F64(v) if v.is_finite() => write!(out, "{v}").unwrap_or(()),
            Value::F64(_) => out.push_str("null"),
            Value::Bool(v) => out.push_str(if v { "true" } else { "false" }),
            Value::Str(s) => string(&mut out, s),
            Value::Pointer(p) => write!(out, "\"{p:#x}\"").unwrap_or(()),
        }
    }
    if out.is_empty() {
        return None;
    }
    out.push('}');
    Some(out.into_boxed_str())
}

/// `s` as a JSON string: quoted, with `"`, `\` and control characters escaped.
fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).unwrap_or(()),
            c => out.push(c),
        }
    }
    out.push('"');
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
}
