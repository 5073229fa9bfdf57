//! The records of one event, built as the recorder builds them (`Record::new`,
//! `encode_continuation`), for [`ChunkStream::push`](crate::ChunkStream::push).
//!
//! Each function returns the event's main record followed by its continuation records.

use std::mem::MaybeUninit;

use phosphor_format::{encode_continuation, params_desc, ArgType, Meta, Record};

/// A begin (phase 1) of callsite `id` at `ts`.
pub fn begin(ts: u64, id: u32) -> [Record; 1] {
    [Record::new(ts, id, Meta::new(0, ArgType::None, ArgType::None), [0, 0])]
}

/// An end (phase 2).
pub fn end(ts: u64, id: u32) -> [Record; 1] {
    begin(ts, id)
}

/// A complete slice (phase 3, also lock events) from `ts` lasting `dur` ticks.
pub fn complete(ts: u64, id: u32, dur: u64) -> [Record; 1] {
    [Record::new(ts, id, Meta::new(1, ArgType::None, ArgType::None), [dur, 0])]
}

/// An instant (phase 4) with no argument.
pub fn instant(ts: u64, id: u32) -> [Record; 1] {
    begin(ts, id)
}

/// A counter sample (phase 5) or data value (phase 11): argument 0 is `value`.
pub fn counter(ts: u64, id: u32, value: f64) -> [Record; 1] {
    [Record::new(ts, id, Meta::new(0, ArgType::F64, ArgType::None), [value.to_bits(), 0])]
}

/// An async begin or end (phases 6, 7) of slice `async_id`.
pub fn async_edge(ts: u64, id: u32, async_id: u64) -> [Record; 1] {
    [Record::new(ts, id, Meta::new(1, ArgType::None, ArgType::None), [async_id, 0])]
}

/// A thread-switch marker: the records after it were written by `tid` (pool streams only).
pub fn thread_switch(tid: u32) -> [Record; 1] {
    [Record::new(0, phosphor_format::ID_THREAD_SWITCH, Meta(0), [u64::from(tid), 0])]
}

/// An event whose argument 0 is the dynamic string `s` (cut to what 255 continuation records
/// hold, 8,160 bytes, at a char boundary) and argument 1 the static string of string index
/// `static_index` (when given).
pub fn with_string(ts: u64, id: u32, s: &str, static_index: Option<u32>) -> Vec<Record> {
    let max = 255 * 32 - 8;
    let mut cut = s.len().min(max);
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    let s = &s[..cut];
    let (arg1, word1) = match static_index {
        Some(i) => (ArgType::StaticStr, phosphor_format::pack_static_str(i as usize, 0).0),
        None => (ArgType::None, 0),
    };
    let meta = Meta::new(0, ArgType::DynStr, arg1);
    event(ts, id, meta, &[s.len() as u64, word1], &[s.as_bytes()])
}

/// A log event (phase 8) whose packed parameters are the unsigned integers `params` (at most 16).
pub fn log(ts: u64, id: u32, params: &[u64]) -> Vec<Record> {
    let params = &params[..params.len().min(phosphor_format::MAX_PARAMS)];
    let types = vec![ArgType::U64; params.len()];
    let mut words = vec![params_desc(&types)];
    words.extend_from_slice(params);
    let meta = Meta::new(0, ArgType::Params, ArgType::None);
    event(ts, id, meta, &words, &[])
}

/// An event of `meta` with payload `words` and string bytes `strs`: two words in the slots, the
/// rest in continuation records.
fn event(ts: u64, id: u32, meta: Meta, words: &[u64], strs: &[&[u8]]) -> Vec<Record> {
    let extra = words.get(2..).unwrap_or(&[]);
    let bytes: usize = strs.iter().map(|s| s.len()).sum();
    let n = phosphor_format::continuation_records(extra.len(), bytes);
    let mut cont = vec![MaybeUninit::uninit(); n];
    let written = encode_continuation(extra, strs, &mut cont);
    let slots = [words.first().copied().unwrap_or(0), words.get(1).copied().unwrap_or(0)];
    let mut out = vec![Record::new(ts, id, meta.with_continuation(written as u32), slots)];
    // SAFETY: [1] `encode_continuation` initialised the first `written` records of `cont`.
    out.extend(cont[..written].iter().map(|r| unsafe { r.assume_init() }));
    out
}
