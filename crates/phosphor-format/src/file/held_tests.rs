use super::*;
use crate::file::Reader;

/// Every event of the golden file, held `copies` times as it is read: (slot, the event as it
/// read, in `Debug` form).
fn hold_all(held: &mut HeldEvents, reader: &mut Reader<&[u8]>, copies: usize) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    while let Some(chunk) = reader.next_chunk().unwrap() {
        for e in chunk.events() {
            let e = e.unwrap();
            for _ in 0..copies {
                out.push((held.hold(&chunk, &e), format!("{e:?}")));
            }
        }
    }
    out
}

#[test]
fn a_held_event_decodes_as_it_read_after_its_chunk_is_gone_and_the_buffer_is_compacted() {
    let bytes = include_bytes!("../../tests/data/golden-v1.8.phtrace");
    let mut reader = Reader::new(&bytes[..]).unwrap();
    let mut held = HeldEvents::default();
    let mut all = hold_all(&mut held, &mut reader, 400);
    assert!(held.records.len() > 8192, "{} records: too few to compact", held.records.len());
    assert_eq!(held.len(), all.len());
    // Release three in four: the buffer is compacted on the way.
    let mut kept = Vec::new();
    for (i, item) in all.drain(..).enumerate() {
        if i % 4 == 0 {
            kept.push(item);
        } else {
            held.release(item.0);
        }
        if i % 1000 == 999 {
            for (n, want) in &kept {
                assert_eq!(&format!("{:?}", held.get(*n, reader.tables()).unwrap()), want);
            }
        }
    }
    assert_eq!(held.len(), kept.len());
    assert!(
        held.records.len() < held.live * 2 + 4096,
        "{} records for {} live",
        held.records.len(),
        held.live
    );
    for (n, want) in &kept {
        assert_eq!(&format!("{:?}", held.get(*n, reader.tables()).unwrap()), want);
    }
    // Freed slots are reused: holding as many again adds none.
    let slots = held.slots.len();
    let mut reader = Reader::new(&bytes[..]).unwrap();
    let again = hold_all(&mut held, &mut reader, 200);
    assert_eq!(held.slots.len(), slots);
    for (n, want) in &again {
        assert_eq!(&format!("{:?}", held.get(*n, reader.tables()).unwrap()), want);
    }
    for (n, _) in kept.iter().chain(&again) {
        held.release(*n);
    }
    assert!(held.is_empty());
    assert_eq!(held.records.len(), 0);
}
