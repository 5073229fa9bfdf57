//! Building records and files for the tests.

use std::mem::MaybeUninit;

use phosphor_format::file::{Error, Reader};
use phosphor_format::{continuation_records, encode_continuation, Meta, Record};

/// An event's records: the main record, then its continuation records. `words` are the lead words
/// and argument words in order; `strs` the bytes of its dynamic strings.
pub fn event(ts: u64, id: u32, meta: Meta, words: &[u64], strs: &[&[u8]]) -> Vec<Record> {
    let extra = if words.len() > 2 { &words[2..] } else { &[][..] };
    let n = continuation_records(extra.len(), strs.iter().map(|s| s.len()).sum());
    let mut cont = vec![MaybeUninit::uninit(); n];
    assert_eq!(encode_continuation(extra, strs, &mut cont), n);
    let mut slots = [0; 2];
    for (s, w) in slots.iter_mut().zip(words) {
        *s = *w;
    }
    let mut v = vec![Record::new(ts, id, meta.with_continuation(n as u32), slots)];
    // SAFETY: encode_continuation initialized all `n` records, as asserted above.
    v.extend(cont.into_iter().map(|r| unsafe { r.assume_init() }));
    v
}

/// What reading a whole file gave: `(chunk offset, chunk end, events in it)` per chunk, and the
/// error it stopped at, if any. Every event of every chunk is decoded.
pub struct ReadOutcome {
    pub chunks: Vec<(u64, u64, usize)>,
    pub error: Option<Error>,
    pub trailer: bool,
}

pub fn read_all(bytes: &[u8]) -> ReadOutcome {
    let mut out = ReadOutcome { chunks: Vec::new(), error: None, trailer: false };
    let mut r = match Reader::new(bytes) {
        Ok(r) => r,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    loop {
        match r.next_chunk() {
            Ok(Some(c)) => {
                let mut n = 0;
                for e in c.events() {
                    match e {
                        Ok(_) => n += 1,
                        Err(e) => {
                            out.error = Some(e);
                            return out;
                        }
                    }
                }
                out.chunks.push((c.offset, c.end_offset(), n));
            }
            Ok(None) => break,
            Err(e) => {
                out.error = Some(e);
                return out;
            }
        }
    }
    out.trailer = r.trailer().is_some();
    out
}
