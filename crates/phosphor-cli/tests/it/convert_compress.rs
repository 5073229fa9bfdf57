//! `phosphor convert --to perfetto --compress`: the packets in zlib `compressed_packets`, read by
//! the official schema as the plain export, a file or several, to a file or stdout.

use crate::cli::{check_pftrace, phosphor, scratch, stderr};

#[test]
fn a_compressed_perfetto_export_is_smaller_and_reads_as_the_plain_one() {
    let dir = scratch("convert-compress-files").join("out");
    let out = phosphor(
        "convert-compress-demo",
        // 5,000 events a thread: some 330 KB of packets, more than one 256 KiB bundle (checked
        // below); more only made the Python reader's three parses slower.
        &["demo", "--threads", "2", "--events", "5000", "--out", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let trace = dir.join("trace.phos");
    let trace = trace.to_str().unwrap();
    let convert = |name: &str, extra: &[&str]| {
        let file = dir.join(name);
        let mut args = vec!["convert", trace, "--to", "perfetto", "-o", file.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = phosphor("convert-compress", &args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        file
    };
    let plain = convert("plain.pftrace", &[]);
    let packed = convert("packed.pftrace", &["--compress"]);
    let (plain_len, packed_len) =
        (std::fs::metadata(&plain).unwrap().len(), std::fs::metadata(&packed).unwrap().len());
    assert!(packed_len * 2 < plain_len, "{packed_len} compressed bytes for {plain_len}");

    let a = check_pftrace(&plain);
    let b = check_pftrace(&packed);
    assert_eq!(b["ok"], true, "{:#}", b["errors"]);
    assert_eq!(a["compressed_packets"], 0);
    // Several bundles, each a packet of `compressed_packets`, read back in order as one stream.
    assert!(b["compressed_packets"].as_u64().unwrap() >= 2, "{}", b["compressed_packets"]);
    for key in ["packets", "tracks", "async_tracks"] {
        assert_eq!(a[key], b[key], "{key}");
    }

    // Two files make one merged trace, compressed the same way.
    let merged = convert("merged.pftrace", &[trace, "--compress"]);
    let m = check_pftrace(&merged);
    assert_eq!(m["ok"], true, "{:#}", m["errors"]);
    let processes = m["tracks"].as_array().unwrap().iter().filter(|t| t["kind"] == "process").count();
    assert_eq!(processes, 2);
}

#[test]
fn compress_is_refused_for_other_formats() {
    let golden = concat!(env!("CARGO_MANIFEST_DIR"), "/../phosphor-format/tests/data/golden-v1.phtrace");
    for to in ["chrome", "folded"] {
        let out = phosphor("convert-compress-refused", &["convert", golden, "--to", to, "--compress"]);
        assert_eq!(out.status.code(), Some(2), "{to}");
        assert!(stderr(&out).contains("--compress applies to --to perfetto only"), "{}", stderr(&out));
    }
}
