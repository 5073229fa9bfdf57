//! Decoding a run of records back into events, with every length checked.

use crate::record::{unpack_static_str, ArgType, Meta, Record, MAX_ARGS, MAX_LEAD_WORDS, RECORD_SIZE};

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
    /// Arguments in order; `None` where absent.
    pub args: [Option<ArgWord<'a>>; MAX_ARGS],
    /// Whether a string argument was cut when it was recorded.
    pub truncated: bool,
    /// Records the event occupies, main record included.
    pub len: usize,
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
    let nargs = types.iter().filter(|t| **t != ArgType::None).count();
    let nwords = lead_len + nargs;
    let payload = record_bytes(&records[index + 1..index + 1 + cont]);
    debug_assert_eq!(payload.len(), cont * RECORD_SIZE);
    let extra_words = nwords.saturating_sub(2);
    if extra_words * 8 > payload.len() {
        return Err(DecodeError::PayloadOverrun { index, needed: extra_words * 8, available: payload.len() });
    }
    let word = |i: usize| -> u64 {
        if i < 2 {
            record.slots[i]
        } else {
            let at = (i - 2) * 8;
            u64::from_le_bytes(payload[at..at + 8].try_into().expect("checked above"))
        }
    };
    let mut lead = [0u64; MAX_LEAD_WORDS];
    for (i, l) in lead.iter_mut().enumerate().take(lead_len) {
        *l = word(i);
    }
    let mut str_at = extra_words * 8;
    let mut args = [None; MAX_ARGS];
    let mut w = lead_len;
    for (i, t) in types.iter().enumerate() {
        if *t == ArgType::None {
            continue;
        }
        let v = word(w);
        w += 1;
        args[i] = Some(match t {
            ArgType::None => unreachable!("skipped above"),
            ArgType::I64 => ArgWord::I64(v as i64),
            ArgType::U64 => ArgWord::U64(v),
            ArgType::F64 => ArgWord::F64(f64::from_bits(v)),
            ArgType::Bool => ArgWord::Bool(v != 0),
            ArgType::Pointer => ArgWord::Pointer(v),
            ArgType::StaticStr => {
                let (addr, len) = unpack_static_str(v);
                ArgWord::StaticStr { addr, len }
            }
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
    Ok(RawEvent { record, lead, lead_len, args, truncated: meta.truncated(), len: 1 + cont })
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
}
