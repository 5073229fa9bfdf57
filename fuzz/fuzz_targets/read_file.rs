//! Fuzzes the trace file reader: any input must read to the end or stop with an error that names
//! an offset inside the input, and never panic or allocate without bound. Also `ring::recover`
//! (ring files of file-backed traces): it must give a trace file that reads, or an error.

#![no_main]

use libfuzzer_sys::fuzz_target;
use phosphor_format::file::{Block, Reader};

fuzz_target!(|data: &[u8]| {
    if let Ok(trace) = phosphor_format::file::ring::recover(data) {
        let _ = Reader::new(&trace[..]).map(|mut r| r.for_each_event(|_| {}));
    }
    let mut r = match Reader::new(data) {
        Ok(r) => r,
        Err(e) => {
            assert!(e.offset() <= data.len() as u64);
            return;
        }
    };
    loop {
        match r.next_block() {
            Ok(Some(Block::Chunk(c))) => {
                for e in c.events() {
                    match e {
                        Ok(e) => {
                            let _ = (e.callsite.name.len(), e.arg("x"));
                        }
                        Err(e) => assert!(e.offset() <= data.len() as u64),
                    }
                }
            }
            Ok(Some(Block::System(s))) => {
                let frames = s.samples.iter().map(|s| s.frames.len()).max().unwrap_or(0);
                assert!(frames <= phosphor_format::system::MAX_FRAMES);
            }
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => {
                assert!(e.offset() <= data.len() as u64, "{e}");
                let _ = e.to_string();
                break;
            }
        }
    }
});
