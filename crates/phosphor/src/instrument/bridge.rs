//! Recording from other instrumentation: points whose metadata and argument values are known only
//! at run time, and a lock-free cache from a foreign callsite to its points.
//!
//! This is what `phosphor-tracing` (a `tracing` layer) and `phosphor-log` (a `log` logger) are
//! built on. A foreign callsite (a `tracing` callsite, a `log` call's file and line) gets its
//! Phosphor points once, through [`Point::custom`](crate::points::Point::custom), which copies its
//! strings and registers it like a macro's callsite; a [`SiteCache`] then finds them again by the
//! foreign callsite's address without a lock or an allocation. Each event is recorded through
//! [`Point::record_in`](crate::points::Point::record_in) or
//! [`Point::log_in`](crate::points::Point::log_in) with [`Value`]s, typed at run time.

use phosphor_format::{pack_static_str, ArgType, Level, Phase};

use crate::instrument::arg::{private, Arg};
pub use crate::registry::site_cache::SiteCache;

/// An argument value whose type is known only at run time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// A signed integer.
    I64(i64),
    /// An unsigned integer.
    U64(u64),
    /// A float.
    F64(f64),
    /// A boolean.
    Bool(bool),
    /// A string copied into the event (at most `MAX_DYN_STR_BYTES`; longer ones are cut and
    /// flagged).
    Str(&'a str),
    /// A string of the program's binary, stored as a reference.
    Static(&'static str),
}

impl private::Sealed for Value<'_> {}

impl Arg for Value<'_> {
    const TYPE: ArgType = ArgType::DynStr;
    const VARIES: bool = true;
    #[inline]
    fn runtime_type(&self) -> ArgType {
        match self {
            Value::I64(_) => ArgType::I64,
            Value::U64(_) => ArgType::U64,
            Value::F64(_) => ArgType::F64,
            Value::Bool(_) => ArgType::Bool,
            Value::Str(_) => ArgType::DynStr,
            Value::Static(_) => ArgType::StaticStr,
        }
    }
    #[inline]
    fn word(&self) -> u64 {
        match *self {
            Value::I64(v) => v as u64,
            Value::U64(v) => v,
            Value::F64(v) => v.to_bits(),
            Value::Bool(v) => v as u64,
            Value::Str(s) => s.word(),
            Value::Static(s) => pack_static_str(s.as_ptr() as usize, s.len()).0,
        }
    }
    #[inline]
    fn bytes(&self) -> (&[u8], bool) {
        match self {
            Value::Str(s) => s.bytes(),
            _ => (&[], false),
        }
    }
    #[inline]
    fn word_truncated(&self) -> bool {
        match self {
            Value::Static(s) => pack_static_str(s.as_ptr() as usize, s.len()).1,
            _ => false,
        }
    }
    crate::instrument::arg::usdt!(u64, |s| s.word());
}

/// The scalar parameters of a log, set one at a time in any order (a visitor's fields, as they
/// come) and recorded by [`Point::log_scalars_in`](crate::points::Point::log_scalars_in) with no
/// array of [`Value`]s in between: each setter writes the parameter's word and its type's nibble
/// of the descriptor. At most [`MAX_SCALARS`](Self::MAX_SCALARS) parameters (a log's one- or
/// two-record form); a parameter never set records as an empty static string.
#[derive(Clone, Copy, Debug)]
pub struct ScalarParams {
    desc: u64,
    words: [u64; ScalarParams::MAX_SCALARS],
    len: usize,
}

impl ScalarParams {
    /// The most parameters it holds.
    pub const MAX_SCALARS: usize = 5;

    /// `len` parameters (at most [`MAX_SCALARS`](Self::MAX_SCALARS); more are cut to it), each an
    /// empty static string until set.
    #[inline]
    pub fn new(len: usize) -> ScalarParams {
        let len = len.min(Self::MAX_SCALARS);
        let empty = Value::Static("").word();
        let (mut desc, mut words) = (0, [0; Self::MAX_SCALARS]);
        for (i, w) in words.iter_mut().enumerate().take(len) {
            desc |= (ArgType::StaticStr as u64) << (4 * i);
            *w = empty;
        }
        ScalarParams { desc, words, len }
    }

    /// How many parameters.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no parameter.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    fn set(&mut self, i: usize, ty: ArgType, word: u64) {
        if i < self.len {
            self.desc = (self.desc & !(0xf << (4 * i))) | (ty as u64) << (4 * i);
            self.words[i] = word;
        }
    }

    /// Sets parameter `i` (ignored past [`len`](Self::len)).
    #[inline]
    pub fn set_i64(&mut self, i: usize, v: i64) {
        self.set(i, ArgType::I64, v as u64);
    }

    /// Sets parameter `i` (ignored past [`len`](Self::len)).
    #[inline]
    pub fn set_u64(&mut self, i: usize, v: u64) {
        self.set(i, ArgType::U64, v);
    }

    /// Sets parameter `i` (ignored past [`len`](Self::len)).
    #[inline]
    pub fn set_f64(&mut self, i: usize, v: f64) {
        self.set(i, ArgType::F64, v.to_bits());
    }

    /// Sets parameter `i` (ignored past [`len`](Self::len)).
    #[inline]
    pub fn set_bool(&mut self, i: usize, v: bool) {
        self.set(i, ArgType::Bool, v as u64);
    }

    /// Sets parameter `i` to a string that lives as long as the program (ignored past
    /// [`len`](Self::len)), stored as a reference as [`Value::Static`] is. True when it could not
    /// be stored whole (its address or length out of the word's range): the event is then to be
    /// flagged truncated.
    #[inline]
    pub fn set_static(&mut self, i: usize, s: &'static str) -> bool {
        let (word, cut) = pack_static_str(s.as_ptr() as usize, s.len());
        self.set(i, ArgType::StaticStr, word);
        cut
    }

    /// The descriptor, the words and how many are used, for the recorder.
    #[inline]
    pub(crate) fn parts(&self) -> (u64, &[u64; ScalarParams::MAX_SCALARS], usize) {
        (self.desc, &self.words, self.len)
    }
}

/// An optional [`Value`]: absent arguments record nothing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MaybeValue<'a> {
    pub(crate) value: Option<Value<'a>>,
    /// Whether the event lost something (more values than fit): sets its truncated flag.
    pub(crate) cut: bool,
}

impl private::Sealed for MaybeValue<'_> {}

impl Arg for MaybeValue<'_> {
    const TYPE: ArgType = ArgType::DynStr;
    const VARIES: bool = true;
    #[inline]
    fn runtime_type(&self) -> ArgType {
        self.value.map_or(ArgType::None, |v| v.runtime_type())
    }
    #[inline]
    fn word(&self) -> u64 {
        self.value.map_or(0, |v| v.word())
    }
    #[inline]
    fn bytes(&self) -> (&[u8], bool) {
        match &self.value {
            Some(v) => v.bytes(),
            None => (&[], false),
        }
    }
    #[inline]
    fn word_truncated(&self) -> bool {
        self.cut || self.value.is_some_and(|v| v.word_truncated())
    }
    crate::instrument::arg::usdt!(u64, |s| s.word());
}

/// The metadata of a point made at run time ([`Point::custom`](crate::points::Point::custom)).
#[derive(Clone, Copy, Debug)]
pub struct PointSpec<'a> {
    /// Category, matched against the trace's category globs.
    pub category: &'a str,
    /// Name (for a log, its format string: `{}` placeholders take the parameters in order).
    pub name: &'a str,
    /// What it records: `Instant`, `Begin`, `End`, `Complete`, `Counter`, `Data`, `AsyncBegin`,
    /// `AsyncEnd` or `Log`.
    pub phase: Phase,
    /// The level of a log point (required for `Log`, ignored otherwise).
    pub level: Option<Level>,
    /// The names of the two inline arguments (`""` where absent).
    pub arg_names: [&'a str; 2],
    /// Source file.
    pub file: &'a str,
    /// Source line.
    pub line: u32,
}

impl<'a> PointSpec<'a> {
    /// A spec with no level, no argument names and no location.
    pub fn new(category: &'a str, name: &'a str, phase: Phase) -> PointSpec<'a> {
        PointSpec { category, name, phase, level: None, arg_names: ["", ""], file: "<dynamic>", line: 0 }
    }
}
