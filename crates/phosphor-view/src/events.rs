//! An event's details, read again from its trace file: its category, source line, arguments, and
//! a log's formatted message. The index keeps where each chunk block starts; the event's chunk is
//! read and decoded (`Reader::chunk_at`) with the trace's tables, which a reader kept per trace
//! takes in once, on the first request (reading the file to its end).

use std::fs::File;
use std::io::BufReader;
use std::sync::Mutex;

use phosphor_format::file::{Reader, Value};
use serde::Serialize;

use crate::api::Finite;

use crate::file::IndexFile;

/// A trace's reader for details, made on first use.
#[derive(Debug, Default)]
pub(crate) struct Events(Mutex<Option<Reader<BufReader<File>>>>);

/// The largest integer a JSON reader that holds numbers as doubles (JavaScript) reads exactly:
/// 2^53 − 1.
const EXACT_IN_DOUBLE: u64 = (1 << 53) - 1;

/// An argument as `[name, value, type]`: `type` is `i64`, `u64`, `f64`, `bool`, `str` or `pointer`.
/// An integer past ±(2^53 − 1) is sent as a string of its decimal digits (a page would round
/// the number: 10482063840709898622 read as 10482063840709898000); non-finite floats and pointers
/// as strings.
fn arg(name: &str, v: &Value<'_>) -> Arg {
    let (value, kind) = match *v {
        Value::I64(n) if n.unsigned_abs() <= EXACT_IN_DOUBLE => (ArgValue::I64(n), "i64"),
        Value::I64(n) => (ArgValue::Text(n.to_string()), "i64"),
        Value::U64(n) if n <= EXACT_IN_DOUBLE => (ArgValue::U64(n), "u64"),
        Value::U64(n) => (ArgValue::Text(n.to_string()), "u64"),
        Value::F64(f) => (ArgValue::F64(Finite(f)), "f64"),
        Value::Bool(b) => (ArgValue::Bool(b), "bool"),
        Value::Str(s) => (ArgValue::Text(s.to_owned()), "str"),
        Value::Pointer(p) => (ArgValue::Text(format!("{p:#x}")), "pointer"),
    };
    (name.to_owned(), value, kind)
}

/// An argument: `[name, value, type]`.
pub(crate) type Arg = (String, ArgValue, &'static str);

/// An argument's value as JSON: a number a JavaScript double holds exactly, or text.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum ArgValue {
    I64(i64),
    U64(u64),
    F64(Finite),
    Bool(bool),
    Text(String),
}

/// An event's details (`event` in `/api/slice` and `/api/point`).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct EventDetails {
    /// Its category.
    pub(crate) category: String,
    /// The source file of its callsite.
    pub(crate) file: String,
    /// The source line of its callsite.
    pub(crate) line: u32,
    /// Its arguments, each `[name, value, type]`.
    pub(crate) args: Vec<Arg>,
    /// A log's formatted message.
    pub(crate) message: Option<String>,
    /// A log's level (`info`, ...); null otherwise.
    pub(crate) level: Option<&'static str>,
    /// Whether a string argument was cut when it was recorded.
    pub(crate) truncated: bool,
}

/// `event` in `/api/slice` and `/api/point`: the details, or why there are none.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum EventAnswer {
    Details(EventDetails),
    Failed(crate::api::ErrorAnswer),
}

impl Events {
    /// The details of the event whose main record is at `offset` in the trace at `path` that
    /// `index` indexes; an error says why there are none.
    pub(crate) fn details(
        &self,
        path: &std::path::Path,
        index: &IndexFile,
        offset: u64,
    ) -> Result<EventDetails, String> {
        let chunk = index.chunk_of(offset).ok_or_else(|| format!("no chunk holds byte {offset}"))?;
        let mut guard = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if guard.is_none() {
            let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
            // Read ahead to the end; `chunk_at` then takes the file back.
            let mut reader = Reader::new(BufReader::with_capacity(1 << 16, file))
                .map_err(|e| format!("{}: {e}", path.display()))?
                .read_ahead();
            // The tables, as far as the file can be read (the index stopped where reading did).
            while let Ok(Some(_)) = reader.next_chunk() {}
            *guard = Some(reader);
        }
        let Some(reader) = guard.as_mut() else { return Err("no reader".into()) };
        let chunk = reader.chunk_at(chunk).map_err(|e| format!("{}: {e}", path.display()))?;
        describe(&chunk, offset, path)
    }
}

/// The details of the event of `chunk` whose main record is at `offset` (of the file at `path`,
/// for errors): category, source line, arguments, a log's message.
pub(crate) fn describe(
    chunk: &phosphor_format::file::Chunk<'_>,
    offset: u64,
    path: &std::path::Path,
) -> Result<EventDetails, String> {
    for e in chunk.events() {
        let e = e.map_err(|e| format!("{}: {e}", path.display()))?;
        if e.offset != offset {
            continue;
        }
        let cs = &e.callsite;
        let args: Vec<Arg> = e
            .args
            .iter()
            .enumerate()
            .filter(|&(i, _)| phosphor_export::logs::shows_arg(&e, i))
            .filter_map(|(_, a)| a.as_ref())
            .map(|(name, v)| arg(name, v))
            .collect();
        let message = cs.level.map(|_| {
            let mut s = String::new();
            phosphor_export::logs::format_event(&mut s, &e);
            s
        });
        return Ok(EventDetails {
            category: cs.category.as_str().to_owned(),
            file: cs.file.as_str().to_owned(),
            line: cs.line,
            args,
            message,
            level: cs.level.map(|l| l.as_str()),
            truncated: e.truncated,
        });
    }
    Err(format!("no event at byte {offset}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn arg(name: &str, v: &Value<'_>) -> serde_json::Value {
        serde_json::to_value(super::arg(name, v)).unwrap()
    }

    #[test]
    fn integers_past_two_to_the_53_are_sent_as_their_exact_digits_with_their_type() {
        assert_eq!(arg("n", &Value::U64(EXACT_IN_DOUBLE)), json!(["n", 9007199254740991u64, "u64"]));
        assert_eq!(
            arg("checksum", &Value::U64(10482063840709898622)),
            json!(["checksum", "10482063840709898622", "u64"])
        );
        assert_eq!(arg("d", &Value::I64(-(1 << 53))), json!(["d", "-9007199254740992", "i64"]));
        assert_eq!(arg("d", &Value::I64(i64::MIN)), json!(["d", "-9223372036854775808", "i64"]));
        assert_eq!(arg("d", &Value::I64(-5)), json!(["d", -5, "i64"]));
        assert_eq!(arg("f", &Value::F64(f64::NAN)), json!(["f", "NaN", "f64"]));
        assert_eq!(arg("s", &Value::Str("12")), json!(["s", "12", "str"]));
    }
}
