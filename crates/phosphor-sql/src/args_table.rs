//! The `args` table: one row per argument of a slice, an instant, or an async slice's begin or
//! end, with its value in the column of its type. The arguments are those of the `arguments`
//! columns (a `dyn` callsite's argument 0 is the name, not an argument), kept typed in the row's
//! payload while the engine nests it ([`Arg`]).

use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, UInt64Array};
use arrow::record_batch::RecordBatch;
use phosphor_format::file::Value;

use crate::columns::{file_columns, thread_columns};
use crate::tables::{batch, Table};

/// An argument: its name and its value, owned.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Arg {
    pub(crate) key: Box<str>,
    pub(crate) value: ArgValue,
}

/// An argument's value, owned.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ArgValue {
    Int(i64),
    Uint(u64),
    Real(f64),
    Bool(bool),
    Str(Box<str>),
    Pointer(u64),
}

/// `args`, owned; `None` if there are none.
pub(crate) fn collect<'a>(args: impl IntoIterator<Item = (&'a str, Value<'a>)>) -> Option<Box<[Arg]>> {
    let args: Vec<Arg> = args
        .into_iter()
        .map(|(key, v)| Arg {
            key: key.into(),
            value: match v {
                Value::I64(x) => ArgValue::Int(x),
                Value::U64(x) => ArgValue::Uint(x),
                Value::F64(x) => ArgValue::Real(x),
                Value::Bool(x) => ArgValue::Bool(x),
                Value::Str(s) => ArgValue::Str(s.into()),
                Value::Pointer(p) => ArgValue::Pointer(p),
            },
        })
        .collect();
    (!args.is_empty()).then(|| args.into_boxed_slice())
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

/// Rows of `args` gathered for a batch.
#[derive(Debug, Default)]
pub(crate) struct ArgRows {
    tids: Vec<Option<u32>>,
    ids: Vec<u64>,
    owners: Vec<Owner>,
    args: Vec<Arg>,
}

impl ArgRows {
    /// The arguments `args` of row `id` (of kind `owner`) on thread `tid`.
    pub(crate) fn add(&mut self, tid: u32, id: u64, owner: Owner, args: Option<&[Arg]>) {
        for a in args.unwrap_or_default() {
            self.tids.push(Some(tid));
            self.ids.push(id);
            self.owners.push(owner);
            self.args.push(a.clone());
        }
    }

    /// [`ArgRows::add`] of arguments given up by their row: moved, not copied.
    pub(crate) fn add_owned(&mut self, tid: u32, id: u64, owner: Owner, args: Option<Box<[Arg]>>) {
        for a in args.map(Vec::from).unwrap_or_default() {
            self.tids.push(Some(tid));
            self.ids.push(id);
            self.owners.push(owner);
            self.args.push(a);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.args.len()
    }

    /// The batch of the rows gathered, which are then forgotten.
    pub(crate) fn take(
        &mut self,
        trace: &str,
        process: &str,
        pid: u32,
        name: &dyn Fn(u32) -> Option<String>,
    ) -> RecordBatch {
        let rows = std::mem::take(self);
        let mut cols = file_columns(trace, process, pid, rows.args.len());
        let tid_cols = thread_columns(&rows.tids, name);
        cols.extend(tid_cols);
        cols.push(Arc::new(UInt64Array::from_iter_values(rows.ids.iter().copied())));
        cols.push(Arc::new(StringArray::from_iter_values(rows.owners.iter().map(|o| o.as_str()))));
        cols.push(Arc::new(StringArray::from_iter_values(rows.args.iter().map(|a| &*a.key))));
        let ty = |v: &ArgValue| match v {
            ArgValue::Int(_) => "int",
            ArgValue::Uint(_) => "uint",
            ArgValue::Real(_) => "real",
            ArgValue::Bool(_) => "bool",
            ArgValue::Str(_) => "string",
            ArgValue::Pointer(_) => "pointer",
        };
        let values = || rows.args.iter().map(|a| &a.value);
        cols.push(Arc::new(StringArray::from_iter_values(values().map(ty))));
        let int: Int64Array =
            values().map(|v| if let ArgValue::Int(x) = v { Some(*x) } else { None }).collect();
        let uint: UInt64Array = values()
            .map(|v| match v {
                ArgValue::Uint(x) | ArgValue::Pointer(x) => Some(*x),
                _ => None,
            })
            .collect();
        let real: Float64Array =
            values().map(|v| if let ArgValue::Real(x) = v { Some(*x) } else { None }).collect();
        let string: StringArray =
            values().map(|v| if let ArgValue::Str(s) = v { Some(&**s) } else { None }).collect();
        let boolean: BooleanArray =
            values().map(|v| if let ArgValue::Bool(b) = v { Some(*b) } else { None }).collect();
        let typed: [ArrayRef; 5] =
            [Arc::new(int), Arc::new(uint), Arc::new(real), Arc::new(string), Arc::new(boolean)];
        cols.extend(typed);
        batch(Table::Args, cols)
    }
}
