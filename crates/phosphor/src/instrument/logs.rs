//! Deferred-format logs (Palanteer): `trace_log!` records its callsite (whose name is the format
//! string), and its parameters packed into the event; only the tools format the message.
//!
//! # How parameters are packed
//!
//! The parameters are a tuple of [`Arg`]s. [`LogParams`] turns it into the words of format 1.2's
//! packed parameters: a descriptor (each parameter's `ArgType` in 4 bits, a constant per callsite),
//! one word per parameter, then the bytes of the dynamic strings. A log with one scalar parameter
//! fits in one record; anything longer takes the out-of-line multi-record path. Dynamic strings
//! are cut at [`MAX_LOG_STR_BYTES`] in all (each also at `MAX_DYN_STR_BYTES`), so the largest log
//! still fits in one chunk, and a cut sets the event's truncated flag.
//!
//! # Levels
//!
//! A level is filtered twice. At compile time, the `max-level-*` features of this crate remove
//! the callsites of more verbose levels altogether (their tokens are dropped, as for a disabled
//! group). At run time, [`TraceConfig::log_level`](crate::TraceConfig::log_level) clears the
//! enabled bits of more verbose callsites, so they cost what a disabled category costs.

use std::mem::MaybeUninit;

use phosphor_format::{ArgType, Level, Meta, Record, MAX_DYN_STR_BYTES, MAX_PARAMS};

use crate::instrument::arg::Arg;
use crate::instrument::emit::{emit_multi, Now, OneRecord};
use crate::record::clock::ClockKind;
use crate::record::tenant::Fill;
use crate::registry::callsite::Callsite;
use crate::TraceLog;

/// The most bytes of dynamic-string parameters one log keeps (the rest is cut, and flagged).
pub const MAX_LOG_STR_BYTES: usize = 2048;

// The largest log (every parameter a word, and the string budget) fits in one chunk.
const _: () = assert!(
    phosphor_format::continuation_records(MAX_PARAMS + 1, MAX_LOG_STR_BYTES)
        < phosphor_format::chunk::CHUNK_RECORDS
);

/// The most verbose level compiled in, from the `max-level-*` features (`None`: logs are
/// compiled out altogether).
pub const STATIC_MAX_LEVEL: Option<Level> = if cfg!(feature = "max-level-off") {
    None
} else if cfg!(feature = "max-level-error") {
    Some(Level::Error)
} else if cfg!(feature = "max-level-warn") {
    Some(Level::Warn)
} else if cfg!(feature = "max-level-info") {
    Some(Level::Info)
} else if cfg!(feature = "max-level-debug") {
    Some(Level::Debug)
} else {
    Some(Level::Trace)
};

/// One parameter, as the packer sees it.
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub struct Param<'a> {
    ty: ArgType,
    word: u64,
    bytes: &'a [u8],
    cut: bool,
}

impl<'a> Param<'a> {
    #[inline(always)]
    fn of<A: Arg>(a: &'a A) -> Param<'a> {
        let (bytes, cut) = a.bytes();
        let ty = if A::VARIES { a.runtime_type() } else { A::TYPE };
        Param { ty, word: a.word(), bytes, cut: cut || a.word_truncated() }
    }
}

/// A tuple of log parameters: `()` to 16 [`Arg`]s. Sealed, like `Arg`.
pub trait LogParams: crate::instrument::arg::private::Sealed {
    /// How many.
    const COUNT: usize;
    /// The descriptor word (a constant).
    const DESC: u64;
    /// Whether a parameter may be a dynamic string.
    const DYNAMIC: bool;
    /// Whether a parameter's type is decided at run time (an interned string).
    const VARIES: bool;
    /// Records the parameters as the packed parameters of an event of `cs`.
    #[doc(hidden)]
    fn emit(&self, log: &TraceLog, id: u32);
}

macro_rules! log_params {
    ($n:expr; $($t:ident $i:tt),*) => {
        impl<$($t: Arg),*> crate::instrument::arg::private::Sealed for ($($t,)*) {}
        impl<$($t: Arg),*> LogParams for ($($t,)*) {
            const COUNT: usize = $n;
            const DESC: u64 = phosphor_format::params_desc(&[$($t::TYPE),*]);
            const DYNAMIC: bool = false $(|| matches!($t::TYPE, ArgType::DynStr))*;
            const VARIES: bool = false $(|| $t::VARIES)*;
            #[inline(always)]
            #[allow(unused_variables)]
            fn emit(&self, log: &TraceLog, id: u32) {
                let params: [Param<'_>; $n] = [$(Param::of(&self.$i)),*];
                let desc = if Self::VARIES { runtime_desc(&params) } else { Self::DESC };
                emit_params(log, id, desc, Self::DYNAMIC, &params, false);
            }
        }
    };
}

log_params!(0;);
log_params!(1; A 0);
log_params!(2; A 0, B 1);
log_params!(3; A 0, B 1, C 2);
log_params!(4; A 0, B 1, C 2, D 3);
log_params!(5; A 0, B 1, C 2, D 3, E 4);
log_params!(6; A 0, B 1, C 2, D 3, E 4, F 5);
log_params!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
log_params!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
log_params!(9; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
log_params!(10; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
log_params!(11; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
log_params!(12; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
log_params!(13; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
log_params!(14; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
log_params!(15; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
log_params!(16; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);

/// The descriptor of parameters whose types are known only at run time.
fn runtime_desc(params: &[Param<'_>]) -> u64 {
    params.iter().enumerate().fold(0, |d, (i, p)| d | (p.ty as u64) << (4 * i))
}

/// Records a log event of callsite `id` with `params`: the scalar fast path for at most five
/// scalar parameters, else the multi-record path.
#[inline(always)]
fn emit_params(log: &TraceLog, id: u32, desc: u64, dynamic: bool, params: &[Param<'_>], cut: bool) {
    let cut = cut || params.iter().any(|p| p.cut);
    if !dynamic && params.len() <= 5 {
        let mut words = [0u64; 5];
        for (w, p) in words.iter_mut().zip(params) {
            *w = p.word;
        }
        return emit_scalar_words(log, id, desc, cut, &words[..params.len()]);
    }
    let meta = Meta::new(0, ArgType::Params, ArgType::None);
    emit_params_multi(log, id, desc, meta.with_truncated(cut), params)
}

/// Records a log event of at most five scalar parameters (their words): one record for none or
/// one, else the descriptor and parameter 0 in the slots and the others in one continuation
/// record, written in place (no byte-wise packing).
#[inline(always)]
fn emit_scalar_words(log: &TraceLog, id: u32, desc: u64, cut: bool, words: &[u64]) {
    let meta = Meta::new(0, ArgType::Params, ArgType::None).with_truncated(cut);
    match words {
        [] => log.write_event(
            1,
            OneRecord { stamp: Now, id, meta: Meta::new(0, ArgType::None, ArgType::None), words: [0, 0] },
        ),
        [w] => log.write_event(1, OneRecord { stamp: Now, id, meta, words: [desc, *w] }),
        [w0, rest @ ..] => {
            let mut more = [0u64; 4];
            for (m, w) in more.iter_mut().zip(rest) {
                *m = *w;
            }
            let meta = meta.with_continuation(1);
            log.write_event(2, TwoRecords { id, meta, head: [desc, *w0], rest: more });
        }
    }
}

/// The fill of a log of two to five scalar parameters: a main record and one continuation record.
#[derive(Clone, Copy)]
struct TwoRecords {
    id: u32,
    meta: Meta,
    head: [u64; 2],
    rest: [u64; 4],
}

impl Fill for TwoRecords {
    #[inline(always)]
    fn fill(self, dst: *mut MaybeUninit<Record>, clock: ClockKind) {
        let ts = crate::record::clock::now(clock);
        // SAFETY: `write_event(2, ..)` hands us two contiguous writable, unpublished record slots.
        unsafe {
            (*dst).write(Record::new(ts, self.id, self.meta, self.head));
            (*dst.add(1)).write(Record::continuation_of_words(self.rest));
        }
    }

    #[inline(always)]
    fn callsite(&self) -> u32 {
        self.id
    }
}

/// The multi-record path: the words, and the dynamic strings within [`MAX_LOG_STR_BYTES`].
#[inline(never)]
fn emit_params_multi(log: &TraceLog, id: u32, desc: u64, meta: Meta, params: &[Param<'_>]) {
    let mut words = [0u64; MAX_PARAMS + 1];
    let mut strs: [&[u8]; MAX_PARAMS] = [&[]; MAX_PARAMS];
    let (mut nstrs, mut budget, mut cut) = (0, MAX_LOG_STR_BYTES, false);
    words[0] = desc;
    for (i, p) in params.iter().enumerate() {
        words[i + 1] = p.word;
        if p.ty == ArgType::DynStr {
            let kept = utf8_prefix(p.bytes, budget.min(MAX_DYN_STR_BYTES));
            cut |= kept.len() < p.bytes.len();
            budget -= kept.len();
            words[i + 1] = kept.len() as u64;
            strs[nstrs] = kept;
            nstrs += 1;
        }
    }
    let meta = if cut { meta.with_truncated(true) } else { meta };
    emit_multi(log, id, meta, Now, &words[..params.len() + 1], &strs[..nstrs]);
}

/// The longest prefix of `bytes` (UTF-8) of at most `max` bytes that ends on a char boundary.
fn utf8_prefix(bytes: &[u8], max: usize) -> &[u8] {
    if bytes.len() <= max {
        return bytes;
    }
    let mut end = max;
    // A continuation byte is 0b10xx_xxxx; step back to the start of its char.
    while end > 0 && bytes[end] & 0xc0 == 0x80 {
        end -= 1;
    }
    &bytes[..end]
}

/// Records a log event of callsite `id` whose parameters are known only at run time (at most
/// [`MAX_PARAMS`]; the caller cuts the rest and says so with `cut`, the event's truncated flag).
pub(crate) fn emit_values(log: &TraceLog, id: u32, values: &[crate::bridge::Value<'_>], cut: bool) {
    let n = values.len().min(MAX_PARAMS);
    let (values, cut) = (&values[..n], cut || values.len() > n);
    let (mut desc, mut dynamic) = (0u64, false);
    for (i, v) in values.iter().enumerate() {
        let ty = v.runtime_type();
        desc |= (ty as u64) << (4 * i);
        dynamic |= ty == ArgType::DynStr;
    }
    // The common case (a few numbers): their words straight into the records.
    if !dynamic && n <= 5 {
        let mut words = [0u64; 5];
        let mut truncated = cut;
        for (w, v) in words.iter_mut().zip(values) {
            *w = v.word();
            truncated |= v.word_truncated();
        }
        return emit_scalar_words(log, id, desc, truncated, &words[..n]);
    }
    let mut params = [Param { ty: ArgType::None, word: 0, bytes: &[], cut: false }; MAX_PARAMS];
    for (p, v) in params.iter_mut().zip(values) {
        *p = Param::of(v);
    }
    emit_params(log, id, desc, dynamic, &params[..n], cut);
}

/// Records a log event of callsite `id` with at most five scalar parameters given as their
/// descriptor and words (see [`ScalarParams`](crate::bridge::ScalarParams)), `words[..len]`.
#[inline]
pub(crate) fn emit_scalars(log: &TraceLog, id: u32, desc: u64, words: &[u64; 5], len: usize, cut: bool) {
    if len < 2 {
        return emit_scalar_words(log, id, desc, cut, &words[..len]);
    }
    let meta = Meta::new(0, ArgType::Params, ArgType::None).with_truncated(cut).with_continuation(1);
    log.write_event(2, ScalarRecords { id, meta, desc, words });
}

/// The fill of a log of two to five scalar parameters set one at a time (a visitor's fields).
/// Its words are read one by one: they were just stored one by one, by separate calls, and a
/// wider load spanning two of them (the vector copy `TwoRecords` gets) cannot be forwarded from
/// those stores and waits for them to reach the cache, a third of the event's time in `perf`.
#[derive(Clone, Copy)]
struct ScalarRecords<'a> {
    id: u32,
    meta: Meta,
    desc: u64,
    words: &'a [u64; 5],
}

impl Fill for ScalarRecords<'_> {
    #[inline(always)]
    fn fill(self, dst: *mut MaybeUninit<Record>, clock: ClockKind) {
        // SAFETY: a pointer made from a reference to an element: valid, aligned and initialised.
        let word = |i: usize| unsafe { std::ptr::read_volatile(&self.words[i]) };
        let head = [self.desc, word(0)];
        let rest = [word(1), word(2), word(3), word(4)];
        let ts = crate::record::clock::now(clock);
        // SAFETY: `write_event(2, ..)` hands us two contiguous writable, unpublished record slots.
        unsafe {
            (*dst).write(Record::new(ts, self.id, self.meta, head));
            (*dst.add(1)).write(Record::continuation_of_words(rest));
        }
    }

    #[inline(always)]
    fn callsite(&self) -> u32 {
        self.id
    }
}

/// Records a log event; `state` is what `check` returned for `cs`. Called by `trace_log!`.
#[inline(always)]
pub fn emit_log<P: LogParams>(log: &TraceLog, cs: &'static Callsite, state: u64, params: P) {
    params.emit(log, crate::registry::callsite::id_of(state));
    if crate::registry::callsite::armed(state) {
        crate::trace_log::attach::check_armed(log, cs, crate::trace_log::attach::Seen::Log);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_constants_of_the_parameter_types() {
        assert_eq!(<(u32, &str, f64) as LogParams>::DESC, 0x372);
        assert_eq!(<(u32, &str, f64) as LogParams>::COUNT, 3);
        const { assert!(<(u32, &str) as LogParams>::DYNAMIC) };
        const { assert!(!<(i8, bool, crate::Static) as LogParams>::DYNAMIC) };
        assert_eq!(<() as LogParams>::DESC, 0);
    }

    #[test]
    fn strings_are_cut_on_char_boundaries() {
        let s = "aé".repeat(10); // 'é' is 2 bytes
        assert_eq!(utf8_prefix(s.as_bytes(), 2), b"a");
        assert_eq!(utf8_prefix(s.as_bytes(), 3), "aé".as_bytes());
        assert_eq!(utf8_prefix(b"abc", 10), b"abc");
    }
}
