//! `phosphor recover`: what it refuses (a whole ring-file round trip is tested in the phosphor
//! crate, with a process killed by SIGKILL).

use std::path::PathBuf;

use crate::cli::{phosphor, scratch, stderr};

fn golden() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../phosphor-format/tests/data/golden-v1.2.phtrace")
}

#[test]
fn recover_refuses_a_trace_file_and_a_file_that_is_no_ring_file() {
    let out = phosphor("recover-trace", &["recover", golden().to_str().unwrap(), "-o", "x.phos"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("trace file already"), "{}", stderr(&out));
    let dir = scratch("recover-files");
    let junk = dir.join("junk.ring");
    std::fs::write(&junk, vec![7u8; 5000]).unwrap();
    let out = phosphor("recover-junk", &["recover", junk.to_str().unwrap(), "-o", "x.phos"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("junk.ring"), "{}", stderr(&out));
}
