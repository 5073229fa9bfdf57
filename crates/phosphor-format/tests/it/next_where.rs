//! `ChunkEvents::next_where`: the events a pass asks for, and only those, decoded as `next`
//! decodes them, from every golden file that has async slices (plain and compressed).

use phosphor_format::file::{Block, Reader};
use phosphor_format::Phase;

const FILES: [(&str, &[u8]); 5] = [
    ("1.3", include_bytes!("../data/golden-v1.3.phtrace")),
    ("1.6", include_bytes!("../data/golden-v1.6.phtrace")),
    ("1.7", include_bytes!("../data/golden-v1.7.phtrace")),
    ("1.7 zstd", include_bytes!("../data/golden-v1.7-zstd.phtrace")),
    ("1.7 lz4", include_bytes!("../data/golden-v1.7-lz4.phtrace")),
];

fn is_async(p: Phase) -> bool {
    matches!(p, Phase::AsyncBegin | Phase::AsyncEnd)
}

/// Per chunk: what `events()` filtered by `keep` gives, and what `next_where(keep)` gives.
fn both(bytes: &[u8], keep: fn(Phase) -> bool) -> (Vec<String>, Vec<String>) {
    let mut r = Reader::new(bytes).unwrap();
    let (mut all, mut picked) = (Vec::new(), Vec::new());
    while let Some(b) = r.next_block().unwrap() {
        let Block::Chunk(c) = b else { continue };
        for e in c.events() {
            let e = e.unwrap();
            if keep(e.callsite.phase) {
                all.push(format!("{} {} {} {:?} {:?}", e.tid, e.ts, e.callsite.id, e.async_id, e.args));
            }
        }
        let mut events = c.events();
        while let Some(e) = events.next_where(keep) {
            let e = e.unwrap();
            picked.push(format!("{} {} {} {:?} {:?}", e.tid, e.ts, e.callsite.id, e.async_id, e.args));
        }
    }
    (all, picked)
}

#[test]
fn next_where_gives_exactly_the_events_asked_for() {
    for (name, bytes) in FILES {
        let (all, picked) = both(bytes, is_async);
        assert!(!all.is_empty(), "{name}: the golden file has async events");
        assert_eq!(picked, all, "{name}");
        // Everything, and nothing.
        let (all, picked) = both(bytes, |_| true);
        assert_eq!(picked, all, "{name}");
        let (all, picked) = both(bytes, |_| false);
        assert!(all.is_empty() && picked.is_empty(), "{name}");
    }
}
