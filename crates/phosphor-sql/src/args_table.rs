//! The `args` table: one row per argument of a slice, an instant, or an async slice's begin or
//! end, with its value in the column of its type. The arguments are those of the `arguments`
//! columns (a `dyn` callsite's argument 0 is the name, not an argument), kept while the engine
//! nests their row packed in one allocation ([`Packed`]), from which both the `arguments` JSON
//! and this table's rows are written when their batches are made.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, UInt32Array, UInt64Array,
    UInt64Builder,
};
use arrow::datatypes::{Field, Schema};
use arrow::record_batch::RecordBatch;
use phosphor_format::file::Value;

use crate::columns::{file_columns, repeated_dictionary, thread_dictionary, thread_names, StrDict};
use crate::tables::{batch, Table};

/// A row's arguments (and, for a row of the nesting, what else it carries: [`crate::rows`])
/// packed into one allocation: per argument its key's length (`u32`, little-endian) and bytes, a
/// tag byte, and its value (8 bytes; a bool 1; a string its length as `u32` and its bytes).
/// One allocation per event, where owned keys and values and a JSON string cost one each. Its
/// count of arguments is kept beside, so that the `args` rows are counted without unpacking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Packed {
    bytes: Box<[u8]>,
    n: usize,
}

const INT: u8 = 0;
const UINT: u8 = 1;
const REAL: u8 = 2;
const BOOL_FALSE: u8 = 3;
const BOOL_TRUE: u8 = 4;
const STR: u8 = 5;
const POINTER: u8 = 6;

/// Appends `args` to `out` as [`Packed`] lays them out; returns how many there were.
pub(crate) fn pack_into<'a>(
    out: &mut Vec<u8>,
    args: impl IntoIterator<Item = (&'a str, Value<'a>)>,
) -> usize {
    let mut n = 0;
    for (key, value) in args {
        n += 1;
        put_str(out, key);
        match value {
            Value::I64(x) => put_word(out, INT, x as u64),
            Value::U64(x) => put_word(out, UINT, x),
            Value::F64(x) => put_word(out, REAL, x.to_bits()),
            Value::Pointer(p) => put_word(out, POINTER, p),
            Value::Bool(b) => out.push(if b { BOOL_TRUE } else { BOOL_FALSE }),
            Value::Str(s) => {
                out.push(STR);
                put_str(out, s);
            }
        }
    }
    n
}

fn put_word(out: &mut Vec<u8>, tag: u8, word: u64) {
    out.push(tag);
    out.extend_from_slice(&word.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    // A string longer than 4 GiB cannot come from a trace file (its strings are counted in
    // 32 bits); saturating keeps the layout readable whatever.
    let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&s.as_bytes()[..len as usize]);
}

impl Packed {
    /// `args` packed; `None` if there are none.
    #[cfg(test)]
    pub(crate) fn of<'a>(args: impl IntoIterator<Item = (&'a str, Value<'a>)>) -> Option<Packed> {
        Packed::of_in(&mut Vec::new(), args)
    }

    /// `args` packed, through `scratch` (a buffer kept between calls, so that packing costs the
    /// one allocation of its bytes, of their size, not the growth of a vector); `None` if there
    /// are none.
    pub(crate) fn of_in<'a>(
        scratch: &mut Vec<u8>,
        args: impl IntoIterator<Item = (&'a str, Value<'a>)>,
    ) -> Option<Packed> {
        scratch.clear();
        let n = pack_into(scratch, args);
        (n > 0).then(|| Packed { bytes: scratch.as_slice().into(), n })
    }

    /// The bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Its bytes and count of arguments, given up.
    pub(crate) fn into_parts(self) -> (Box<[u8]>, usize) {
        (self.bytes, self.n)
    }
}

/// The arguments packed in `bytes` (a [`Packed`] layout, or a part of one holding only
/// arguments), in their order.
pub(crate) fn unpack(bytes: &[u8]) -> Unpack<'_> {
    Unpack { bytes }
}

/// [`unpack`]'s iterator.
#[derive(Clone)]
pub(crate) struct Unpack<'a> {
    bytes: &'a [u8],
}

impl<'a> Unpack<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.bytes.len());
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        head
    }

    fn word(&mut self) -> u64 {
        let got = self.take(8);
        // A whole word as `pack_into` wrote it; a cut one (bytes not packed here) read as zeros
        // after its end. Not `copy_from_slice` of a length known only at run time, which is a
        // call to `memcpy` per value (4% of a conversion's time, before).
        match <[u8; 8]>::try_from(got) {
            Ok(b) => u64::from_le_bytes(b),
            Err(_) => got.iter().rev().fold(0, |w, &b| (w << 8) | u64::from(b)),
        }
    }

    fn str(&mut self) -> &'a str {
        let got = self.take(4);
        // As in `word`.
        let len = match <[u8; 4]>::try_from(got) {
            Ok(b) => u32::from_le_bytes(b) as usize,
            Err(_) => got.iter().rev().fold(0, |w, &b| (w << 8) | usize::from(b)),
        };
        // Written from a `&str` by `put_str`: valid UTF-8 (cut only past 4 GiB, which no trace
        // string reaches); an empty string otherwise.
        std::str::from_utf8(self.take(len)).unwrap_or("")
    }
}

impl<'a> Iterator for Unpack<'a> {
    type Item = (&'a str, Value<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.bytes.is_empty() {
            return None;
        }
        let key = self.str();
        let tag = self.take(1).first().copied()?;
        let value = match tag {
            INT => Value::I64(self.word() as i64),
            UINT => Value::U64(self.word()),
            REAL => Value::F64(f64::from_bits(self.word())),
            POINTER => Value::Pointer(self.word()),
            BOOL_FALSE => Value::Bool(false),
            BOOL_TRUE => Value::Bool(true),
            _ => Value::Str(self.str()),
        };
        Some((key, value))
    }
}

/// What a row of `args` belongs to: `slices.id` or `instants.id` (one id space), or
/// `async_slices.id` (its own), as `kind` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    Slice,
    Instant,
    AsyncBegin,
    AsyncEnd,
}

impl Owner {
    fn as_str(self) -> &'static str {
        match self {
            Owner::Slice => "slice",
            Owner::Instant => "instant",
            Owner::AsyncBegin => "async_begin",
            Owner::AsyncEnd => "async_end",
        }
    }
}

/// The arguments of one row: whose, and their bytes ([`Packed`], or a row's packed extra
/// whose arguments start at `from`).
#[derive(Debug)]
struct Owned {
    tid: u32,
    id: u64,
    owner: Owner,
    bytes: Box<[u8]>,
    from: usize,
    /// Arguments in `bytes[from..]`.
    n: usize,
}

/// Rows of `args` gathered for a batch: the packed arguments of each row they belong to, kept
/// as they came (moved, not copied, from a row of the nesting) until the batch is made.
#[derive(Debug, Default)]
pub(crate) struct ArgRows {
    owners: Vec<Owned>,
    /// Arguments in `owners`: the batch's rows.
    rows: usize,
}

impl ArgRows {
    /// The arguments of row `id` (of kind `owner`) on thread `tid`: the `n` packed in `bytes`
    /// from byte `from` on, given up by their row.
    pub(crate) fn add_bytes(
        &mut self,
        tid: u32,
        id: u64,
        owner: Owner,
        packed: (Box<[u8]>, usize),
        n: usize,
    ) {
        let (bytes, from) = packed;
        debug_assert_eq!(unpack(bytes.get(from..).unwrap_or_default()).count(), n);
        if n > 0 {
            self.rows += n;
            self.owners.push(Owned { tid, id, owner, bytes, from, n });
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    /// The batch of the rows gathered, which are then forgotten (their buffers kept). With
    /// `dictionary` (for Parquet: [`crate::read::read_tables_for_parquet`]), its string columns
    /// of few distinct values (`trace`, `process`, `thread`, `kind`, `key`, `value_type`) are
    /// made as `Dictionary(UInt32, Utf8)`, which the batch's schema says.
    pub(crate) fn take(
        &mut self,
        trace: &str,
        process: &str,
        pid: u32,
        name: &dyn Fn(u32) -> Option<String>,
        dictionary: bool,
    ) -> RecordBatch {
        let n = self.rows;
        // The thread and owner of each row, per owner (not per argument unpacked again).
        fn per_row(o: &Owned) -> std::iter::RepeatN<&Owned> {
            std::iter::repeat_n(o, o.n)
        }
        let tids = || self.owners.iter().flat_map(per_row).map(|o| Some(o.tid));
        let mut cols: Vec<ArrayRef> = if dictionary {
            vec![
                Arc::new(repeated_dictionary(trace, n)),
                Arc::new(repeated_dictionary(process, n)),
                Arc::new(UInt32Array::from_iter_values(std::iter::repeat_n(pid, n))),
                Arc::new(thread_dictionary(tids(), name)),
            ]
        } else {
            let mut cols = file_columns(trace, process, pid, n);
            cols.push(Arc::new(thread_names(tids(), n, name)));
            cols
        };
        cols.push(Arc::new(UInt32Array::from_iter_values(
            self.owners.iter().flat_map(per_row).map(|o| o.tid),
        )));
        cols.push(Arc::new(UInt64Array::from_iter_values(
            self.owners.iter().flat_map(per_row).map(|o| o.id),
        )));
        let mut kind = Strings::new(dictionary, n, 8);
        let mut key = Strings::new(dictionary, n, 8);
        let mut ty = Strings::new(dictionary, n, 6);
        let mut int = Int64Builder::with_capacity(n);
        let mut uint = UInt64Builder::with_capacity(n);
        let mut real = Float64Builder::with_capacity(n);
        let mut string = StringBuilder::new();
        let mut boolean = BooleanBuilder::with_capacity(n);
        for o in &self.owners {
            let owner = o.owner.as_str();
            for (k, v) in unpack(&o.bytes[o.from..]) {
                kind.append_value(owner);
                key.append_value(k);
                ty.append_value(match v {
                    Value::I64(_) => "int",
                    Value::U64(_) => "uint",
                    Value::F64(_) => "real",
                    Value::Bool(_) => "bool",
                    Value::Str(_) => "string",
                    Value::Pointer(_) => "pointer",
                });
                int.append_option(if let Value::I64(x) = v { Some(x) } else { None });
                uint.append_option(match v {
                    Value::U64(x) | Value::Pointer(x) => Some(x),
                    _ => None,
                });
                real.append_option(if let Value::F64(x) = v { Some(x) } else { None });
                string.append_option(if let Value::Str(s) = v { Some(s) } else { None });
                boolean.append_option(if let Value::Bool(b) = v { Some(b) } else { None });
            }
        }
        cols.extend([kind.finish(), key.finish(), ty.finish()]);
        let typed: [ArrayRef; 5] = [
            Arc::new(int.finish()),
            Arc::new(uint.finish()),
            Arc::new(real.finish()),
            Arc::new(string.finish()),
            Arc::new(boolean.finish()),
        ];
        cols.extend(typed);
        self.owners.clear();
        self.rows = 0;
        if !dictionary {
            return batch(Table::Args, cols);
        }
        let schema = Table::Args.schema();
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .zip(&cols)
            .map(|(f, a)| f.as_ref().clone().with_data_type(a.data_type().clone()))
            .collect();
        // The columns are the schema's, some as dictionaries: a mismatch is a bug here, which
        // the tests (the Parquet files against the tables) catch.
        RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)
            .expect("the args columns, some as dictionaries")
    }
}

/// A string column of `args` made row by row: plain, or a dictionary ([`StrDict`]).
enum Strings<'a> {
    Plain(StringBuilder),
    Dictionary(StrDict<'a>),
}

impl<'a> Strings<'a> {
    fn new(dictionary: bool, rows: usize, bytes_per_row: usize) -> Strings<'a> {
        match dictionary {
            true => Strings::Dictionary(StrDict::with_capacity(rows)),
            false => Strings::Plain(StringBuilder::with_capacity(rows, rows * bytes_per_row)),
        }
    }

    fn append_value(&mut self, value: &'a str) {
        match self {
            Strings::Plain(b) => b.append_value(value),
            Strings::Dictionary(d) => d.push(value),
        }
    }

    fn finish(self) -> ArrayRef {
        match self {
            Strings::Plain(mut b) => Arc::new(b.finish()),
            Strings::Dictionary(d) => Arc::new(d.finish()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_arguments_unpack_as_they_were() {
        let args = [
            ("n", Value::I64(-3)),
            ("u", Value::U64(u64::MAX)),
            ("x", Value::F64(0.25)),
            ("nan", Value::F64(f64::NAN)),
            ("yes", Value::Bool(true)),
            ("no", Value::Bool(false)),
            ("", Value::Str("é\"\u{0}")),
            ("p", Value::Pointer(0xdead)),
        ];
        let packed = Packed::of(args).expect("some arguments");
        let back: Vec<_> = unpack(packed.bytes()).collect();
        assert_eq!(back.len(), args.len());
        for ((k, v), (k2, v2)) in args.iter().zip(&back) {
            assert_eq!(k, k2);
            match (v, v2) {
                (Value::F64(a), Value::F64(b)) => assert_eq!(a.to_bits(), b.to_bits()),
                (Value::I64(a), Value::I64(b)) => assert_eq!(a, b),
                (Value::U64(a), Value::U64(b)) | (Value::Pointer(a), Value::Pointer(b)) => assert_eq!(a, b),
                (Value::Bool(a), Value::Bool(b)) => assert_eq!(a, b),
                (Value::Str(a), Value::Str(b)) => assert_eq!(a, b),
                _ => panic!("{k}: {v:?} came back as {v2:?}"),
            }
        }
        assert_eq!(Packed::of([]), None);
    }
}
