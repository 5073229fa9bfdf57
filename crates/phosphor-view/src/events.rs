//! An event's details, read again from its trace file: its category, source line, arguments, and
//! a log's formatted message. The index keeps where each chunk block starts; the event's chunk is
//! read and decoded (`Reader::chunk_at`) with the trace's tables, which a reader kept per trace
//! takes in once, on the first request (reading the file to its end).

use std::fs::File;
use std::io::BufReader;
use std::sync::Mutex;

use phosphor_format::file::{Reader, Value};
use serde_json::{json, Value as Json};

use crate::file::IndexFile;

/// A trace's reader for details, made on first use.
#[derive(Debug, Default)]
pub(crate) struct Events(Mutex<Option<Reader<BufReader<File>>>>);

/// An argument's value as JSON: non-finite floats and pointers as strings.
fn value(v: &Value<'_>) -> Json {
    match *v {
        Value::I64(n) => json!(n),
        Value::U64(n) => json!(n),
        Value::F64(f) if f.is_finite() => json!(f),
        Value::F64(f) => json!(f.to_string()),
        Value::Bool(b) => json!(b),
        Value::Str(s) => json!(s),
        Value::Pointer(p) => json!(format!("{p:#x}")),
    }
}

impl Events {
    /// The details of the event whose main record is at `offset` in the trace at `path` that
    /// `index` indexes; an error says why there are none.
    pub(crate) fn details(
        &self,
        path: &std::path::Path,
        index: &IndexFile,
        offset: u64,
    ) -> Result<Json, String> {
        let chunk = index.chunk_of(offset).ok_or_else(|| format!("no chunk holds byte {offset}"))?;
        let mut guard = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if guard.is_none() {
            let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut reader = Reader::new(BufReader::with_capacity(1 << 16, file))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            // The tables, as far as the file can be read (the index stopped where reading did).
            while let Ok(Some(_)) = reader.next_chunk() {}
            *guard = Some(reader);
        }
        let Some(reader) = guard.as_mut() else { return Err("no reader".into()) };
        let chunk = reader.chunk_at(chunk).map_err(|e| format!("{}: {e}", path.display()))?;
        for e in chunk.events() {
            let e = e.map_err(|e| format!("{}: {e}", path.display()))?;
            if e.offset != offset {
                continue;
            }
            let cs = &e.callsite;
            let args: Vec<Json> = e
                .args
                .iter()
                .enumerate()
                .filter(|&(i, _)| phosphor_export::logs::shows_arg(&e, i))
                .filter_map(|(_, a)| a.as_ref())
                .map(|(name, v)| json!([name, value(v)]))
                .collect();
            let message = cs.level.map(|_| {
                let mut s = String::new();
                phosphor_export::logs::format_event(&mut s, &e);
                s
            });
            return Ok(json!({
                "category": cs.category.as_str(),
                "file": cs.file.as_str(),
                "line": cs.line,
                "args": args,
                "message": message,
                "level": cs.level.map(|l| l.as_str()),
                "truncated": e.truncated,
            }));
        }
        Err(format!("no event at byte {offset}"))
    }
}
