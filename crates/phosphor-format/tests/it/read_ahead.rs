//! Read-ahead (`Reader::read_ahead`): the same blocks, offsets and errors as reading on one
//! thread, for whole, cut, flipped and over-long files, and random access after it.

use std::io::Cursor;

use phosphor_format::file::{Block, Compression, ErrorKind, Reader};

use crate::compressed::many_chunks;
use crate::golden::{golden_v1, golden_v1_with};

/// Everything a reader says of `bytes`, block by block, with where it stood after each; then the
/// error it stopped at, if any. With `ahead`, read ahead.
fn story(bytes: &[u8], ahead: bool) -> Vec<String> {
    let mut r = match Reader::new(Cursor::new(bytes.to_vec())) {
        Ok(r) => r,
        Err(e) => return vec![format!("error {e} at {}", e.offset())],
    };
    if ahead {
        r = r.read_ahead();
    }
    let mut out = Vec::new();
    loop {
        let line = match r.next_block() {
            Ok(Some(Block::Chunk(c))) => {
                let events: Vec<String> = c
                    .events()
                    .map(|e| match e {
                        Ok(e) => format!(
                            "{} {} {} {:?} {:?} {}",
                            e.tid, e.ts, e.callsite.id, e.args, e.params, e.offset
                        ),
                        Err(e) => format!("event error {e} at {}", e.offset()),
                    })
                    .collect();
                format!(
                    "chunk {:?} at {} to {} (stored {}): {events:?}",
                    c.extents,
                    c.offset,
                    c.end_offset(),
                    c.stored_end()
                )
            }
            Ok(Some(b)) => format!("{b:?}"),
            Ok(None) => break,
            Err(e) => {
                out.push(format!("error {e} at {} ({:?})", e.offset(), e.decoded_offset()));
                break;
            }
        };
        out.push(format!(
            "{line} | offset {} stored {} decoded {}",
            r.offset(),
            r.stored_bytes(),
            r.decoded_bytes()
        ));
    }
    out.push(format!("{:?} {:?} {:?}", r.trailer(), r.codecs(), r.aggregates()));
    out.extend(r.callsites().map(|c| format!("{c:?}")));
    out
}

fn files() -> Vec<(String, Vec<u8>)> {
    let mut files = vec![("plain".to_string(), golden_v1())];
    for codec in [Compression::Zstd { level: 1 }, Compression::Lz4] {
        files.push((format!("golden {codec}"), golden_v1_with(codec)));
        files.push((format!("long {codec}"), many_chunks(codec, 120)));
    }
    files
}

#[test]
fn reading_ahead_tells_the_same_story_as_reading_on_one_thread() {
    for (name, file) in files() {
        let one = story(&file, false);
        assert!(one.len() > 10 && !one.iter().any(|l| l.contains("error")), "{name}: {one:?}");
        assert_eq!(story(&file, true), one, "{name}");
    }
}

#[test]
fn a_cut_flipped_or_over_long_file_fails_at_the_same_place_read_ahead() {
    for (name, file) in files() {
        let step = (file.len() / 53).max(1);
        for cut in (0..file.len()).step_by(step) {
            let one = story(&file[..cut], false);
            assert!(one.iter().any(|l| l.contains("error")), "{name} cut at {cut}");
            assert_eq!(story(&file[..cut], true), one, "{name} cut at {cut}");
        }
        for at in (0..file.len()).step_by(step) {
            let mut bad = file.clone();
            bad[at] ^= 0x5a;
            assert_eq!(story(&bad, true), story(&bad, false), "{name} flipped at {at}");
        }
        let mut long = file.clone();
        long.push(0);
        let one = story(&long, false);
        assert!(one.iter().any(|l| l.contains(&format!("at {}", file.len()))), "{name}: {one:?}");
        assert_eq!(story(&long, true), one, "{name} with a byte past the trailer");
    }
}

#[test]
fn chunk_at_works_after_reading_ahead() {
    let file = many_chunks(Compression::Zstd { level: 1 }, 200);
    let mut r = Reader::new(Cursor::new(file.clone())).unwrap().read_ahead();
    let mut chunks = Vec::new();
    while let Some(c) = r.next_chunk().unwrap() {
        chunks.push((c.offset, c.records.to_vec()));
    }
    assert_eq!(chunks.len(), 200);
    for (offset, records) in chunks.iter().rev().step_by(17) {
        assert_eq!(r.chunk_at(*offset).unwrap().records, &records[..], "at {offset}");
    }
    assert!(r.next_chunk().unwrap().is_none(), "finished after random access");
    let e = r.chunk_at(3).map(|_| ()).unwrap_err();
    assert!(!matches!(e.kind(), ErrorKind::Truncated { .. }) || e.offset() == 3, "{e}");
}

/// An input that says when it is dropped.
struct Told(Cursor<Vec<u8>>, std::sync::mpsc::Sender<()>);

impl std::io::Read for Told {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Drop for Told {
    fn drop(&mut self) {
        let _ = self.1.send(());
    }
}

#[test]
fn a_reader_dropped_mid_file_stops_its_read_ahead_thread() {
    // A file far longer than the queue: the thread waits for room, and must end (dropping the
    // input it owns) when the reader goes.
    let file = many_chunks(Compression::Zstd { level: 1 }, 6000);
    let (tx, dropped) = std::sync::mpsc::channel();
    let mut r = Reader::new(Told(Cursor::new(file), tx)).unwrap().read_ahead();
    assert!(r.next_chunk().unwrap().is_some());
    assert!(dropped.try_recv().is_err(), "the thread still reads");
    drop(r);
    dropped.recv_timeout(std::time::Duration::from_secs(60)).expect("the thread ended and dropped its input");
}

#[test]
fn a_plain_file_is_read_on_the_callers_thread_and_a_compressed_one_ahead_from_its_first_group() {
    for (name, file) in files() {
        let mut r = Reader::new(Cursor::new(file)).unwrap().read_ahead();
        assert!(!r.reads_ahead(), "{name}: nothing read yet");
        while r.next_block().unwrap().is_some() {}
        assert_eq!(r.reads_ahead(), name != "plain", "{name}");
    }
}
