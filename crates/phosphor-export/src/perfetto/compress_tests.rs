//! `compressed_packets`: the packets inside are the uncompressed export, byte for byte, and the
//! official schema reads them as it reads that export.

use std::io::{Read, Write};

use flate2::read::ZlibDecoder;
use phosphor_format::file::Reader;

use super::super::checker::check;
use super::{CompressedPackets, PacketCompression, PACKET_COMPRESSED_PACKETS};

const GOLDEN: &[u8] = include_bytes!("../../../phosphor-format/tests/data/golden-v1.phtrace");

fn plain() -> Vec<u8> {
    let mut out = Vec::new();
    crate::perfetto::write_perfetto(Reader::new(GOLDEN).unwrap(), &mut out).unwrap();
    out
}

fn compressed(options: PacketCompression) -> Vec<u8> {
    let mut z = CompressedPackets::new(Vec::new(), options);
    crate::perfetto::write_perfetto(Reader::new(GOLDEN).unwrap(), &mut z).unwrap();
    z.finish().unwrap()
}

/// Reads a varint at `*at`.
fn varint(b: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = b[*at];
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte < 0x80 {
            return v;
        }
    }
}

/// The inflated contents of each outer packet, which must hold only `compressed_packets`.
fn inflate_each(trace: &[u8]) -> Vec<Vec<u8>> {
    let mut bundles = Vec::new();
    let mut at = 0;
    while at < trace.len() {
        assert_eq!(trace[at], 0x0a, "a Trace.packet field at byte {at}");
        at += 1;
        let len = varint(trace, &mut at) as usize;
        let end = at + len;
        assert_eq!(varint(trace, &mut at), u64::from(PACKET_COMPRESSED_PACKETS << 3 | 2));
        let zlen = varint(trace, &mut at) as usize;
        assert_eq!(at + zlen, end, "the packet holds compressed_packets and nothing else");
        let mut inner = Vec::new();
        ZlibDecoder::new(&trace[at..end]).read_to_end(&mut inner).unwrap();
        bundles.push(inner);
        at = end;
    }
    bundles
}

#[test]
fn the_inflated_packets_are_the_uncompressed_export_byte_for_byte() {
    let plain = plain();
    for thread in [false, true] {
        for bundle_bytes in [1, 300, 4096, 1 << 20] {
            let options = PacketCompression { level: 1, bundle_bytes, thread };
            let z = compressed(options);
            let bundles = inflate_each(&z);
            assert_eq!(bundles.concat(), plain, "{options:?}");
            let most = bundles.iter().map(Vec::len).max().unwrap();
            if bundle_bytes >= plain.len() {
                assert_eq!(bundles.len(), 1, "{options:?}");
            } else {
                assert!(bundles.len() > 1, "{options:?}: {} bundles", bundles.len());
                // A bundle is cut at the first packet boundary past `bundle_bytes`.
                assert!(bundles[..bundles.len() - 1].iter().all(|b| b.len() >= bundle_bytes));
                assert!(most < bundle_bytes + 2048, "{options:?}: a bundle of {most} bytes");
            }
        }
    }
}

#[test]
fn the_official_schema_reads_the_compressed_export_as_the_plain_one() {
    let plain = check(&plain());
    let options = PacketCompression { bundle_bytes: 500, ..PacketCompression::default() };
    let z = compressed(options);
    assert!(z.len() < self::plain().len());
    let doc = check(&z);
    assert!(doc["compressed_packets"].as_u64().unwrap() > 1, "{}", doc["compressed_packets"]);
    assert_eq!(plain["compressed_packets"], 0);
    for key in ["tracks", "packets", "samples"] {
        assert_eq!(doc[key], plain[key], "{key}");
    }
}

#[test]
fn a_trace_ending_inside_a_packet_or_not_made_of_packets_is_an_error() {
    for thread in [false, true] {
        let options = PacketCompression { thread, ..PacketCompression::default() };
        let mut z = CompressedPackets::new(Vec::new(), options);
        z.write_all(&[0x0a, 5, 1, 2]).unwrap();
        let e = z.finish().unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("ends inside a packet (4 bytes"), "{e}");

        let mut z = CompressedPackets::new(Vec::new(), options);
        z.write_all(&[0x0a, 1, 7]).unwrap();
        let e = z.write_all(&[0x12, 0]).unwrap_err();
        assert!(e.to_string().contains("field key 0x12 at byte 3"), "{e}");
    }
}

#[test]
fn an_empty_trace_stays_empty_and_dropping_unfinished_writes_what_was_held() {
    assert!(CompressedPackets::new(Vec::new(), PacketCompression::default()).finish().unwrap().is_empty());
    let plain = plain();
    let mut out = Vec::new();
    {
        let mut z = CompressedPackets::new(&mut out, PacketCompression::default());
        z.write_all(&plain).unwrap();
    }
    assert_eq!(inflate_each(&out).concat(), plain);
}
