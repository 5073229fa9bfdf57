//! Decoding a run of records back into events, with every length checked.

use crate::record::{
    unpack_static_str, ArgType, Meta, Record, MAX_ARGS, MAX_LEAD_WORDS, MAX_PARAMS, RECORD_SIZE,
};

/// What was wrong with a run of records. `index` is the offending record's position in the slice
/// given to [`decode_event`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The meta word has bits set that this version leaves zero.
    #[error("record {index}: reserved meta bits {bits:#x} are set")]
    ReservedBits {
        /// Record position.
        index: usize,
        /// The reserved bits found.
        bits: u32,
    },
    /// An argument type code is not one this version defines.
    #[error("record {index}: unknown argument type code {code}")]
    UnknownArgType {
        /// Record position.
        index: usize,
        /// The code found.
        code: u8,
    },
    /// The meta word asks for more lead words than an event can carry.
    #[error("record {index}: {lead} lead words (at most {max})", max = MAX_LEAD_WORDS)]
    TooManyLeadWords {
        /// Record position.
        index: usize,
        /// The count found.
        lead: usize,
    },
    /// The continuation records named by the meta word run past the end of the input.
    #[error("record {index}: needs {needed} continuation records, only {available} follow")]
    ContinuationOverrun {
        /// Record position.
        index: usize,
        /// Continuation records named.
        needed: usize,
        /// Records left in the input.
        available: usize,
    },
    /// The words and string lengths need more continuation bytes than the meta word provides.
    #[error("record {index}: payload needs {needed} continuation bytes, only {available} provided")]
    PayloadOverrun {
        /// Record position.
        index: usize,
        /// Bytes needed.
        needed: usize,
        /// Bytes in the continuation records.
        available: usize,
    },
    /// A dynamic string is not valid UTF-8.
    #[error("record {index}: dynamic string argument {arg} is not valid UTF-8")]
    InvalidUtf8 {
        /// Record position.
        index: usize,
        /// Argument position.
        arg: usize,
    },
    /// Packed parameters anywhere but alone in argument 0.
    #[error("record {index}: packed parameters must be argument 0, with no argument 1")]
    MisplacedParams {
        /// Record position.
        index: usize,
    },
    /// A parameter descriptor with a nibble that is no value type, or a gap.
    #[error("record {index}: invalid parameter descriptor {desc:#x}")]
    BadParamDescriptor {
        /// Record position.
        index: usize,
        /// The descriptor found.
        desc: u64,
    },
    /// A dynamic-string parameter is not valid UTF-8.
    #[error("record {index}: dynamic string parameter {param} is not valid UTF-8")]
    InvalidParamUtf8 {
        /// Record position.
        index: usize,
        /// Parameter position.
        param: usize,
    },
}

/// A decoded argument value. Strings borrow from the records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ArgWord<'a> {
    /// Signed integer.
    I64(i64),
    /// Unsigned integer.
    U64(u64),
    /// Float.
    F64(f64),
    /// Boolean.
    Bool(bool),
    /// A static string of the recording process: its address and length there.
    StaticStr {
        /// Address in the recording process.
        addr: u64,
        /// Length in bytes.
        len: usize,
    },
    /// A pointer's address.
    Pointer(u64),
    /// A dynamic string copied into the trace.
    Str(&'a str),
}

/// One event as stored: the main record, its lead words and its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct RawEvent<'a> {
    /// The main record.
    pub record: &'a Record,
    /// Lead words (duration or async id), `lead_len` of them valid.
    pub lead: [u64; MAX_LEAD_WORDS],
    /// Valid entries of `lead`.
    pub lead_len: usize,
    /// Arguments in order; `None` where absent (argument 0 is `None` when `params` is `Some`).
    pub args: [Option<ArgWord<'a>>; MAX_ARGS],
    /// A log's packed parameters (argument 0 of type [`ArgType::Params`]).
    pub params: Option<RawParams<'a>>,
    /// Whether a string argument was cut when it was recorded.
    pub truncated: bool,
    /// Records the event occupies, main record included.
    pub len: usize,
}

/// A log's packed parameters, checked when decoded: iterating cannot fail.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RawParams<'a> {
    desc: u64,
    record: &'a Record,
    payload: &'a [u8],
    /// How many (at most `MAX_PARAMS`).
    len: u8,
    /// The payload word index (0 and 1 are the slots) of parameter 0 (at most `MAX_LEAD_WORDS + 1`).
    first_word: u8,
    /// Where the first dynamic-string parameter's bytes start in the payload (under 255 × 32).
    str_start: u16,
}

impl<'a> RawParams<'a> {
    /// How many parameters.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The descriptor word.
    pub fn descriptor(&self) -> u64 {
        self.desc
    }

    /// The parameters in order.
    pub fn iter(&self) -> ParamIter<'a> {
        ParamIter { params: *self, i: 0, str_at: usize::from(self.str_start) }
    }

    /// The payload word index of parameter `i` (words 0 and 1 are the main record's slots, word
    /// `k ≥ 2` the `k-2`th 8 bytes after it): where a writer finds a static string's word.
    pub fn word_index(&self, i: usize) -> usize {
        usize::from(self.first_word) + i
    }
}

/// Iterator over [`RawParams`].
#[derive(Clone, Debug)]
pub struct ParamIter<'a> {
    params: RawParams<'a>,
    i: usize,
    str_at: usize,
}

impl<'a> Iterator for ParamIter<'a> {
    type Item = ArgWord<'a>;

    fn next(&mut self) -> Option<ArgWord<'a>> {
        let p = &self.params;
        if self.i >= p.len() {
            return None;
        }
        let code = ((p.desc >> (4 * self.i)) & 0xf) as u8;
        let v = word_at(p.record, p.payload, usize::from(p.first_word) + self.i);
        self.i += 1;
        // `decode_event` checked every code, length and string, so the fallbacks below are never
        // taken; they keep this path free of panics all the same.
        Some(match ArgType::from_code(code).unwrap_or(ArgType::None) {
            ArgType::DynStr => {
                let len = usize::try_from(v).unwrap_or(0);
                let bytes = p.payload.get(self.str_at..self.str_at + len).unwrap_or(&[]);
                self.str_at += len;
                ArgWord::Str(core::str::from_utf8(bytes).unwrap_or(""))
            }
            t => scalar(t, v),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.params.len() - self.i;
        (n, Some(n))
    }
}

impl ExactSizeIterator for ParamIter<'_> {}

/// Payload word `i`: the slots, then the continuation bytes (0 past the end).
fn word_at(record: &Record, payload: &[u8], i: usize) -> u64 {
    if i < 2 {
        record.slots[i]
    } else {
        let at = (i - 2) * 8;
        payload.get(at..at + 8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }
}

/// A word of a type stored inline (not a dynamic string).
fn scalar(t: ArgType, v: u64) -> ArgWord<'static> {
    match t {
        ArgType::I64 => ArgWord::I64(v as i64),
        ArgType::U64 => ArgWord::U64(v),
        ArgType::F64 => ArgWord::F64(f64::from_bits(v)),
        ArgType::Bool => ArgWord::Bool(v != 0),
        ArgType::StaticStr => {
            let (addr, len) = unpack_static_str(v);
            ArgWord::StaticStr { addr, len }
        }
        // Pointer, and (unreachable after the checks) None, DynStr and Params.
        _ => ArgWord::Pointer(v),
    }
}

/// Parses a parameter descriptor: the count, or `None` if a nibble is no value type or a
/// parameter follows a zero nibble.
fn param_count(desc: u64) -> Option<usize> {
    let mut n = 0;
    while n < MAX_PARAMS && (desc >> (4 * n)) & 0xf != 0 {
        let code = ((desc >> (4 * n)) & 0xf) as u8;
        match ArgType::from_code(code) {
            Some(ArgType::None | ArgType::Params) | None => return None,
            Some(_) => n += 1,
        }
    }
    // Nothing may follow the first zero nibble.
    if n < MAX_PARAMS && desc >> (4 * n) != 0 {
        return None;
    }
    Some(n)
}

/// Views records as bytes without copying.
fn record_bytes(records: &[Record]) -> &[u8] {
    // SAFETY: [1] `Record` is `repr(C)` with fields u64, u32, u32, [u64; 2]: 32 bytes with no
    // padding, so every byte of the slice is initialized. [2] The length is the slice's size in
    // bytes and u8 has alignment 1. [3] The returned slice borrows `records`, so it cannot outlive
    // or alias a mutable borrow of them.
    unsafe { core::slice::from_raw_parts(records.as_ptr().cast::<u8>(), core::mem::size_of_val(records)) }
}

/// Counts the events in a run of records: main records, not continuation or marker records.
///
/// A continuation count that runs past the end counts the event and stops there.
pub fn count_events(records: &[Record]) -> u64 {
    let mut i = 0;
    let mut n = 0;
    while i < records.len() {
        let r = &records[i];
        if r.id >= crate::FIRST_CALLSITE_ID {
            n += 1;
        }
        i += 1 + r.meta.continuation();
    }
    n
}

/// Decodes the event that starts at `records[index]`.
///
/// The continuation bytes are read in little-endian layout, which is the in-memory layout on the
/// little-endian targets Phosphor records on; on a big-endian host the reader of a file re-encodes
/// records with [`Record::from_bytes`] first.
#[inline]
pub fn decode_event(records: &[Record], index: usize) -> Result<RawEvent<'_>, DecodeError> {
    let record = &records[index];
    let meta: Meta = record.meta;
    if meta.reserved_bits() != 0 {
        return Err(DecodeError::ReservedBits { index, bits: meta.reserved_bits() });
    }
    let lead_len = meta.lead_words();
    if lead_len > MAX_LEAD_WORDS {
        return Err(DecodeError::TooManyLeadWords { index, lead: lead_len });
    }
    let cont = meta.continuation();
    let available = records.len() - index - 1;
    if cont > available {
        return Err(DecodeError::ContinuationOverrun { index, needed: cont, available });
    }
    let mut types = [ArgType::None; MAX_ARGS];
    for (i, t) in types.iter_mut().enumerate() {
        let code = meta.arg_code(i);
        *t = ArgType::from_code(code).ok_or(DecodeError::UnknownArgType { index, code })?;
    }
    if types[1] == ArgType::Params || (types[0] == ArgType::Params && types[1] != ArgType::None) {
        return Err(DecodeError::MisplacedParams { index });
    }
    let nargs = types.iter().filter(|t| **t != ArgType::None).count();
    let mut nwords = lead_len + nargs;
    let payload = record_bytes(&records[index + 1..index + 1 + cont]);
    debug_assert_eq!(payload.len(), cont * RECORD_SIZE);
    let words_fit = |n: usize| {
        let extra = n.saturating_sub(2);
        if extra * 8 > payload.len() {
            Err(DecodeError::PayloadOverrun { index, needed: extra * 8, available: payload.len() })
        } else {
            Ok(())
        }
    };
    words_fit(nwords)?;
    let word = |i: usize| word_at(record, payload, i);
    let mut nparams = 0;
    if types[0] == ArgType::Params {
        let desc = word(lead_len);
        nparams = param_count(desc).ok_or(DecodeError::BadParamDescriptor { index, desc })?;
        nwords += nparams;
        words_fit(nwords)?;
    }
    let extra_words = nwords.saturating_sub(2);
    let mut lead = [0u64; MAX_LEAD_WORDS];
    for (i, l) in lead.iter_mut().enumerate().take(lead_len) {
        *l = word(i);
    }
    let mut str_at = extra_words * 8;
    let mut args = [None; MAX_ARGS];
    let mut params = None;
    let mut w = lead_len;
    for (i, t) in types.iter().enumerate() {
        if *t == ArgType::None {
            continue;
        }
        let v = word(w);
        w += 1;
        args[i] = Some(match t {
            ArgType::None => unreachable!("skipped above"),
            ArgType::Params => {
                let str_start = str_at;
                for p in 0..nparams {
                    if (v >> (4 * p)) & 0xf != ArgType::DynStr as u64 {
                        continue;
                    }
                    let len = usize::try_from(word(w + p)).unwrap_or(usize::MAX);
                    let end = str_at.checked_add(len).filter(|&e| e <= payload.len()).ok_or(
                        DecodeError::PayloadOverrun {
                            index,
                            needed: str_at.saturating_add(len),
                            available: payload.len(),
                        },
                    )?;
                    core::str::from_utf8(&payload[str_at..end])
                        .map_err(|_| DecodeError::InvalidParamUtf8 { index, param: p })?;
                    str_at = end;
                }
                // Fit by construction: at most 16 params, 4 leading words, 255 × 32 payload bytes.
                params = Some(RawParams {
                    desc: v,
                    record,
                    payload,
                    len: nparams as u8,
                    first_word: w as u8,
                    str_start: str_start as u16,
                });
                continue;
            }
            ArgType::I64
            | ArgType::U64
            | ArgType::F64
            | ArgType::Bool
            | ArgType::Pointer
            | ArgType::StaticStr => scalar(*t, v),
            ArgType::DynStr => {
                let len = usize::try_from(v).unwrap_or(usize::MAX);
                let end = str_at.checked_add(len).filter(|&e| e <= payload.len()).ok_or(
                    DecodeError::PayloadOverrun {
                        index,
                        needed: str_at.saturating_add(len),
                        available: payload.len(),
                    },
                )?;
                let s = core::str::from_utf8(&payload[str_at..end])
                    .map_err(|_| DecodeError::InvalidUtf8 { index, arg: i })?;
                str_at = end;
                ArgWord::Str(s)
            }
        });
    }
    Ok(RawEvent { record, lead, lead_len, args, params, truncated: meta.truncated(), len: 1 + cont })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{continuation_records, encode_continuation, pack_static_str};
    use core::mem::MaybeUninit;

    fn encode(meta: Meta, words: &[u64], strs: &[&[u8]]) -> Vec<Record> {
        let extra = if words.len() > 2 { &words[2..] } else { &[][..] };
        let n = continuation_records(extra.len(), strs.iter().map(|s| s.len()).sum());
        let mut cont = vec![MaybeUninit::uninit(); n];
        assert_eq!(encode_continuation(extra, strs, &mut cont), n);
        let mut slots = [0; 2];
        for (s, w) in slots.iter_mut().zip(words) {
            *s = *w;
        }
        let mut v = vec![Record::new(7, 99, meta.with_continuation(n as u32), slots)];
        // SAFETY: encode_continuation wrote all `n` records, as asserted above.
        v.extend(cont.into_iter().map(|r| unsafe { r.assume_init() }));
        v
    }

    #[test]
    fn count_events_skips_continuations_and_markers() {
        let meta = Meta::new(0, ArgType::DynStr, ArgType::None);
        let mut recs = encode(meta, &[40], &[&[b'x'; 40]]);
        assert_eq!(recs.len(), 3);
        recs.push(Record::new(0, crate::ID_THREAD_SWITCH, Meta(0), [5, 0]));
        recs.push(Record::new(0, 99, Meta(0), [0; 2]));
        assert_eq!(count_events(&recs), 2);
    }

    #[test]
    fn a_two_int_event_fits_in_one_record() {
        let recs = encode(Meta::new(0, ArgType::I64, ArgType::U64), &[(-5i64) as u64, 6], &[]);
        assert_eq!(recs.len(), 1);
        let e = decode_event(&recs, 0).unwrap();
        assert_eq!(e.args, [Some(ArgWord::I64(-5)), Some(ArgWord::U64(6))]);
        assert_eq!(e.len, 1);
    }

    #[test]
    fn a_complete_event_with_two_args_spills_one_word() {
        let meta = Meta::new(1, ArgType::F64, ArgType::Bool);
        let recs = encode(meta, &[1000, 2.5f64.to_bits(), 1], &[]);
        assert_eq!(recs.len(), 2);
        let e = decode_event(&recs, 0).unwrap();
        assert_eq!(e.lead_len, 1);
        assert_eq!(e.lead[0], 1000);
        assert_eq!(e.args, [Some(ArgWord::F64(2.5)), Some(ArgWord::Bool(true))]);
    }

    #[test]
    fn dynamic_strings_round_trip_through_continuation_records() {
        let a = "hello, world: a string that is longer than one record";
        let b = "ünïcödé";
        let meta = Meta::new(1, ArgType::DynStr, ArgType::DynStr);
        let recs = encode(meta, &[42, a.len() as u64, b.len() as u64], &[a.as_bytes(), b.as_bytes()]);
        let e = decode_event(&recs, 0).unwrap();
        assert_eq!(e.args, [Some(ArgWord::Str(a)), Some(ArgWord::Str(b))]);
        assert_eq!(e.len, recs.len());
    }

    #[test]
    fn static_strings_pack_address_and_length() {
        let s: &'static str = "static";
        let (w, cut) = pack_static_str(s.as_ptr() as usize, s.len());
        assert!(!cut);
        assert_eq!(unpack_static_str(w), (s.as_ptr() as u64, 6));
        assert_eq!(pack_static_str(1 << 50, 3), (0, true));
        assert!(pack_static_str(0x1000, 70_000).1);
    }

    #[test]
    fn a_continuation_count_past_the_end_is_an_error_not_a_panic() {
        let recs =
            [Record::new(0, 20, Meta::new(0, ArgType::None, ArgType::None).with_continuation(3), [0; 2])];
        assert_eq!(
            decode_event(&recs, 0),
            Err(DecodeError::ContinuationOverrun { index: 0, needed: 3, available: 0 })
        );
    }

    #[test]
    fn a_string_length_past_the_payload_is_an_error() {
        let meta = Meta::new(0, ArgType::DynStr, ArgType::None).with_continuation(1);
        let recs = [Record::new(0, 20, meta, [33, 0]), Record::default()];
        assert!(matches!(decode_event(&recs, 0), Err(DecodeError::PayloadOverrun { .. })));
        let recs = [Record::new(0, 20, meta, [u64::MAX, 0]), Record::default()];
        assert!(matches!(decode_event(&recs, 0), Err(DecodeError::PayloadOverrun { .. })));
    }

    #[test]
    fn unknown_type_codes_and_reserved_bits_are_errors() {
        let recs = [Record::new(0, 20, Meta(9 << 16), [0; 2])];
        assert_eq!(decode_event(&recs, 0), Err(DecodeError::UnknownArgType { index: 0, code: 9 }));
        let recs = [Record::new(0, 20, Meta(1 << 30), [0; 2])];
        assert!(matches!(decode_event(&recs, 0), Err(DecodeError::ReservedBits { .. })));
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let meta = Meta::new(0, ArgType::DynStr, ArgType::None);
        let recs = encode(meta, &[2], &[&[0xff, 0xfe]]);
        assert_eq!(decode_event(&recs, 0), Err(DecodeError::InvalidUtf8 { index: 0, arg: 0 }));
    }

    fn params_event(types: &[ArgType], words: &[u64], strs: &[&[u8]]) -> Vec<Record> {
        let mut all = vec![crate::params_desc(types)];
        all.extend_from_slice(words);
        encode(Meta::new(0, ArgType::Params, ArgType::None), &all, strs)
    }

    #[test]
    fn packed_params_of_every_type_round_trip() {
        let s1 = "from host-17";
        let s2 = "ünïcödé and more than one record's worth of text, to spill";
        let types = [
            ArgType::I64,
            ArgType::DynStr,
            ArgType::U64,
            ArgType::F64,
            ArgType::Bool,
            ArgType::StaticStr,
            ArgType::Pointer,
            ArgType::DynStr,
        ];
        let (st, _) = pack_static_str(0x1234, 5);
        let words = [(-3i64) as u64, s1.len() as u64, 7, 1.5f64.to_bits(), 1, st, 0xdead, s2.len() as u64];
        let recs = params_event(&types, &words, &[s1.as_bytes(), s2.as_bytes()]);
        let e = decode_event(&recs, 0).unwrap();
        assert_eq!(e.len, recs.len());
        assert_eq!(e.args, [None, None]);
        let p = e.params.expect("params");
        assert_eq!(p.len(), 8);
        let got: Vec<ArgWord<'_>> = p.iter().collect();
        assert_eq!(
            got,
            [
                ArgWord::I64(-3),
                ArgWord::Str(s1),
                ArgWord::U64(7),
                ArgWord::F64(1.5),
                ArgWord::Bool(true),
                ArgWord::StaticStr { addr: 0x1234, len: 5 },
                ArgWord::Pointer(0xdead),
                ArgWord::Str(s2),
            ]
        );
        assert_eq!(p.word_index(0), 1, "parameter 0 sits in slot 1, after the descriptor");
    }

    #[test]
    fn three_int_params_take_two_records_and_none_decode_empty() {
        let recs = params_event(&[ArgType::I64; 3], &[1, 2, 3], &[]);
        assert_eq!(recs.len(), 2);
        let p = decode_event(&recs, 0).unwrap().params.unwrap();
        assert_eq!(p.iter().collect::<Vec<_>>(), [ArgWord::I64(1), ArgWord::I64(2), ArgWord::I64(3)]);
        let recs = params_event(&[], &[], &[]);
        let p = decode_event(&recs, 0).unwrap().params.unwrap();
        assert!(p.is_empty() && p.iter().next().is_none());
        let sixteen = [ArgType::U64; 16];
        let recs = params_event(&sixteen, &[9; 16], &[]);
        assert_eq!(decode_event(&recs, 0).unwrap().params.unwrap().iter().count(), 16);
    }

    #[test]
    fn bad_descriptors_misplaced_params_and_bad_param_strings_are_errors() {
        let meta = Meta::new(0, ArgType::Params, ArgType::None);
        for desc in [0x8u64, 0xf, 0x101, 0x90] {
            let recs = encode(meta, &[desc, 0], &[]);
            assert_eq!(
                decode_event(&recs, 0),
                Err(DecodeError::BadParamDescriptor { index: 0, desc }),
                "{desc:#x}"
            );
        }
        let recs = encode(Meta::new(0, ArgType::Params, ArgType::U64), &[0x2, 1, 2], &[]);
        assert_eq!(decode_event(&recs, 0), Err(DecodeError::MisplacedParams { index: 0 }));
        let recs = encode(Meta::new(0, ArgType::U64, ArgType::Params), &[1, 0], &[]);
        assert_eq!(decode_event(&recs, 0), Err(DecodeError::MisplacedParams { index: 0 }));
        // Five params announced, but no continuation record for words 2..6.
        let recs = [Record::new(0, 20, meta, [0x22222, 1])];
        assert!(matches!(decode_event(&recs, 0), Err(DecodeError::PayloadOverrun { .. })));
        let recs = params_event(&[ArgType::U64, ArgType::DynStr], &[1, 2], &[&[0xc3, 0x28]]);
        assert_eq!(decode_event(&recs, 0), Err(DecodeError::InvalidParamUtf8 { index: 0, param: 1 }));
        let recs = params_event(&[ArgType::DynStr], &[40], &[b"short"]);
        assert!(matches!(decode_event(&recs, 0), Err(DecodeError::PayloadOverrun { .. })));
    }

    #[test]
    fn a_continuation_of_words_is_what_encode_continuation_writes() {
        let w = [0x0102_0304_0506_0708, 0x1112_1314_1516_1718, 0x2122_2324_2526_2728, u64::MAX];
        let mut out = [MaybeUninit::uninit(); 1];
        assert_eq!(encode_continuation(&w, &[], &mut out), 1);
        // SAFETY: encode_continuation wrote the record, as asserted.
        let encoded = unsafe { out[0].assume_init() };
        assert_eq!(Record::continuation_of_words(w), encoded);
    }

    #[test]
    fn params_desc_packs_nibbles_in_order() {
        assert_eq!(crate::params_desc(&[ArgType::I64, ArgType::DynStr, ArgType::Bool]), 0x471);
        const D: u64 = crate::params_desc(&[ArgType::U64]);
        assert_eq!(D, 2);
    }
}
