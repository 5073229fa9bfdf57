//! The schemas of the tables made beside the slices (`args`, `async_slices`, `flows`,
//! `processes`, `drops`, `problems`), and what their batches are made with. Each table's rows are
//! made in a module of its own (`args_table.rs`, `asyncs_table.rs`, `flows_table.rs`,
//! `file_tables.rs`, `problems_table.rs`); `docs/SQL.md` documents every column.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, DictionaryArray, StringArray, StringBuilder, UInt32Array};
use arrow::buffer::{Buffer, OffsetBuffer};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt32Type};

use crate::tables::Table;

/// The schema of `table`, if it is one of those made here.
pub(crate) fn schema(table: Table) -> Option<SchemaRef> {
    use DataType::{Boolean, Float64, Int64, UInt32, UInt64, Utf8};
    let f = |name: &str, ty: DataType, nullable: bool| Field::new(name, ty, nullable);
    let mut fields = vec![f("trace", Utf8, false), f("process", Utf8, false), f("pid", UInt32, false)];
    match table {
        Table::Args => fields.extend([
            f("thread", Utf8, true),
            f("tid", UInt32, false),
            f("slice_id", UInt64, false),
            f("kind", Utf8, false),
            f("key", Utf8, false),
            f("value_type", Utf8, false),
            f("int_value", Int64, true),
            f("uint_value", UInt64, true),
            f("real_value", Float64, true),
            f("string_value", Utf8, true),
            f("bool_value", Boolean, true),
        ]),
        Table::AsyncSlices => fields.extend([
            f("id", UInt64, false),
            f("async_id", UInt64, false),
            f("state", Utf8, false),
            f("ts", Int64, false),
            f("dur", Int64, true),
            f("category", Utf8, false),
            f("name", Utf8, false),
            f("file", Utf8, false),
            f("line", UInt32, false),
            f("begin_thread", Utf8, true),
            f("begin_tid", UInt32, true),
            f("end_thread", Utf8, true),
            f("end_tid", UInt32, true),
            f("future", Boolean, false),
            f("arguments", Utf8, true),
            f("end_arguments", Utf8, true),
        ]),
        Table::Flows => fields.extend([
            f("flow_id", UInt64, false),
            f("category", Utf8, false),
            f("name", Utf8, false),
            f("async_id", UInt64, false),
            f("async_slice_id", UInt64, true),
            f("from_slice_id", UInt64, true),
            f("from_tid", UInt32, false),
            f("from_ts", Int64, false),
            f("to_slice_id", UInt64, true),
            f("to_tid", UInt32, false),
            f("to_ts", Int64, false),
        ]),
        Table::Processes => fields.extend([
            f("host", Utf8, true),
            f("boot_id", Utf8, true),
            f("clock", Utf8, false),
            f("start_ts", Int64, true),
            f("end_ts", Int64, true),
            f("events", UInt64, false),
            f("threads", UInt64, false),
            f("chunks", UInt64, false),
            f("complete", Boolean, false),
            f("recorded", UInt64, true),
            f("dropped", UInt64, true),
            f("lost_chunks", UInt64, false),
        ]),
        Table::Drops => fields.extend([
            f("reason", Utf8, false),
            f("unit", Utf8, false),
            f("count", UInt64, false),
            f("tid", UInt32, true),
            f("pool", UInt32, true),
        ]),
        Table::Problems => fields.extend([
            f("thread", Utf8, true),
            f("tid", UInt32, true),
            f("ts", Int64, true),
            f("kind", Utf8, false),
            f("name", Utf8, true),
            f("detail", Utf8, false),
            f("count", UInt64, false),
        ]),
        _ => return None,
    }
    Some(Arc::new(Schema::new(fields)))
}

/// `trace`, `process` and `pid` for `n` rows.
pub(crate) fn file_columns(trace: &str, process: &str, pid: u32, n: usize) -> Vec<ArrayRef> {
    vec![
        Arc::new(repeated(trace, n)),
        Arc::new(repeated(process, n)),
        Arc::new(UInt32Array::from_iter_values(std::iter::repeat_n(pid, n))),
    ]
}

/// A string column of `n` rows, each `value`: its bytes repeated in one buffer, made at once.
pub(crate) fn repeated(value: &str, n: usize) -> StringArray {
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(value.len(), n));
    StringArray::new(offsets, Buffer::from(value.repeat(n).into_bytes()), None)
}

/// A dictionary column of `n` rows, each `value`.
pub(crate) fn repeated_dictionary(value: &str, n: usize) -> DictionaryArray<UInt32Type> {
    let keys = UInt32Array::from(vec![0; n]);
    DictionaryArray::new(keys, Arc::new(StringArray::from(vec![value])))
}

/// A dictionary column of strings of few distinct values, made row by row: each value looked
/// up in a few slots of recent values (by length and end bytes) first, hashed only when not
/// there; values in the order first seen.
pub(crate) struct StrDict<'a> {
    index: HashMap<&'a str, u32>,
    seen: Vec<&'a str>,
    keys: Vec<u32>,
    recent: [u32; 16],
}

impl<'a> StrDict<'a> {
    pub(crate) fn with_capacity(rows: usize) -> StrDict<'a> {
        StrDict {
            index: HashMap::new(),
            seen: Vec::new(),
            keys: Vec::with_capacity(rows),
            recent: [u32::MAX; 16],
        }
    }

    pub(crate) fn push(&mut self, value: &'a str) {
        let b = value.as_bytes();
        let slot = match b {
            [] => 0,
            [first, .., last] => (b.len() ^ usize::from(*first) ^ usize::from(*last) << 2) & 15,
            [only] => (1 ^ usize::from(*only)) & 15,
        };
        let key = match self.recent[slot] {
            at if at != u32::MAX && self.seen[at as usize] == value => at,
            _ => {
                let next = self.seen.len() as u32;
                let at = *self.index.entry(value).or_insert(next);
                if at == next {
                    self.seen.push(value);
                }
                self.recent[slot] = at;
                at
            }
        };
        self.keys.push(key);
    }

    pub(crate) fn finish(self) -> DictionaryArray<UInt32Type> {
        let values: StringArray = self.seen.into_iter().map(Some).collect();
        DictionaryArray::new(UInt32Array::from(self.keys), Arc::new(values))
    }
}

/// [`thread_names`] as a dictionary: a key per thread named (in the order first seen), null
/// for a row of no thread or of a thread with no name.
pub(crate) fn thread_dictionary(
    tids: impl Iterator<Item = Option<u32>>,
    name: &dyn Fn(u32) -> Option<String>,
) -> DictionaryArray<UInt32Type> {
    // The threads seen, each with its key (`None`: no name); the last one first looked at.
    let mut threads: Vec<(u32, Option<u32>)> = Vec::new();
    let mut last: Option<(u32, Option<u32>)> = None;
    let mut values = StringBuilder::new();
    let mut keys = Vec::new();
    let mut named = 0u32;
    for tid in tids {
        let Some(tid) = tid else {
            keys.push(None);
            continue;
        };
        let key = match last {
            Some((t, key)) if t == tid => key,
            _ => {
                let key = match threads.iter().find(|t| t.0 == tid) {
                    Some(&(_, key)) => key,
                    None => {
                        let key = name(tid).map(|n| {
                            values.append_value(n);
                            named += 1;
                            named - 1
                        });
                        threads.push((tid, key));
                        key
                    }
                };
                last = Some((tid, key));
                key
            }
        };
        keys.push(key);
    }
    DictionaryArray::new(UInt32Array::from(keys), Arc::new(values.finish()))
}

/// `thread` and `tid` for rows of threads `tids` (`None`: of no thread), named by `name`.
pub(crate) fn thread_columns(tids: &[Option<u32>], name: &dyn Fn(u32) -> Option<String>) -> Vec<ArrayRef> {
    let thread = thread_names(tids.iter().copied(), tids.len(), name);
    vec![Arc::new(thread), Arc::new(tids.iter().copied().collect::<UInt32Array>())]
}

/// The `thread` column of `n` rows of threads `tids` (`None`: of no thread), each thread's name
/// asked of `name` once and copied into the column, not cloned per row.
pub(crate) fn thread_names(
    tids: impl Iterator<Item = Option<u32>>,
    n: usize,
    name: &dyn Fn(u32) -> Option<String>,
) -> StringArray {
    let mut names: Vec<(u32, Option<String>)> = Vec::new();
    let mut b = StringBuilder::with_capacity(n, n * 8);
    for tid in tids {
        let Some(tid) = tid else {
            b.append_null();
            continue;
        };
        let at = match names.iter().position(|n| n.0 == tid) {
            Some(at) => at,
            None => {
                names.push((tid, name(tid)));
                names.len() - 1
            }
        };
        b.append_option(names[at].1.as_deref());
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, AsArray};

    use super::*;

    #[test]
    fn a_string_dictionary_keeps_every_row_whatever_collides_in_its_slots() {
        // Values of one length and the same end bytes share a slot; empty and one-byte ones too.
        let values: Vec<String> = (0..300).map(|i| format!("a{:03}z", i % 150)).collect();
        let mut rows: Vec<&str> = values.iter().map(String::as_str).collect();
        rows.extend(["", "x", "", "a000z", "x"]);
        let mut d = StrDict::with_capacity(rows.len());
        for &r in &rows {
            d.push(r);
        }
        let column = d.finish();
        assert_eq!(column.values().len(), 150 + 2, "each distinct value once");
        let strings = column.values().as_string::<i32>();
        let back: Vec<&str> = column.keys().values().iter().map(|&k| strings.value(k as usize)).collect();
        assert_eq!(back, rows);
        assert_eq!(column.keys().null_count(), 0);
    }
}
