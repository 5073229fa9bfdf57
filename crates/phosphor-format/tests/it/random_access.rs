//! `Reader::chunk_at`: a chunk read again by its offset gives the events it gave in order.

use std::io::Cursor;

use phosphor_format::file::Reader;

#[test]
fn a_chunk_read_again_at_its_offset_gives_the_same_events() {
    for file in ["golden-v1.2.phtrace", "golden-v1.3.phtrace", "golden-v1.4.phtrace"] {
        let bytes = std::fs::read(format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let mut reader = Reader::new(Cursor::new(&bytes[..])).unwrap();
        let mut chunks = Vec::new();
        while let Some(chunk) = reader.next_chunk().unwrap() {
            let events: Vec<String> = chunk.events().map(|e| format!("{:?}", e.unwrap())).collect();
            chunks.push((chunk.offset, events));
        }
        assert!(chunks.len() >= 2, "{file}");
        // In any order, and again.
        for (offset, events) in chunks.iter().rev().chain(&chunks) {
            let chunk = reader.chunk_at(*offset).unwrap();
            let again: Vec<String> = chunk.events().map(|e| format!("{:?}", e.unwrap())).collect();
            assert_eq!(&again, events, "{file} at {offset}");
        }
        // Not a chunk's start: an error that names the offset.
        let Err(e) = reader.chunk_at(chunks[0].0 + 1) else { panic!("a chunk at a block's second byte") };
        assert!(e.offset() > chunks[0].0, "{e}");
        assert!(reader.chunk_at(bytes.len() as u64 + 100).is_err());
        assert!(reader.next_chunk().unwrap().is_none());
    }
}
