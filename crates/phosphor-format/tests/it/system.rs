//! System blocks (format 1.6): a batch reads back as written, a large one is split within the
//! caps, and a hostile block is an error at its byte offset, never a panic or a large allocation.

use phosphor_format::file::{
    kind, Block, ClockInfo, ErrorKind, Header, Reader, Trailer, Writer, MAX_SYSTEM_ENTRIES, MAX_SYSTEM_FRAMES,
};
use phosphor_format::system::{
    Mapping, Sample, SampleKind, Switch, SwitchKind, SystemBatch, MAX_FRAMES, UNKNOWN_CPU,
};

fn header() -> Header {
    Header {
        clock: ClockInfo::monotonic(0, 0),
        pid: 7,
        process_name: "system".into(),
        boot_id: None,
        host_name: None,
    }
}

/// Every system batch of a file, in order.
fn batches(bytes: &[u8]) -> Vec<SystemBatch> {
    let mut r = Reader::new(bytes).unwrap();
    let mut out = Vec::new();
    while let Some(b) = r.next_block().unwrap() {
        if let Block::System(s) = b {
            out.push(s.clone());
        }
    }
    assert!(r.trailer().is_some());
    out
}

fn sample(tid: u32, time_ns: u64, frames: Vec<u64>) -> Sample {
    Sample { tid, time_ns, cpu: 3, kind: SampleKind::Cpu, frames }
}

#[test]
fn extreme_values_read_back_exactly() {
    let batch = SystemBatch {
        mappings: vec![Mapping {
            start: 0,
            end: u64::MAX,
            file_offset: u64::MAX,
            path: "/é".into(),
            build_id: vec![0xff; 64],
        }],
        switches: vec![
            Switch { tid: u32::MAX, time_ns: u64::MAX, cpu: u32::MAX - 1, kind: SwitchKind::Preempted },
            Switch { tid: 0, time_ns: 0, cpu: UNKNOWN_CPU, kind: SwitchKind::Out },
        ],
        samples: vec![
            sample(1, 10, vec![u64::MAX, 0, u64::MAX / 2, 1]),
            sample(1, 5, (0..MAX_FRAMES as u64).collect()),
            Sample { kind: SampleKind::Allocation { bytes: u64::MAX }, ..sample(2, 0, vec![]) },
        ],
        ..SystemBatch::default()
    };
    let mut w = Writer::new(Vec::new(), &header()).unwrap();
    w.write_system(&batch).unwrap();
    w.write_system(&SystemBatch::default()).unwrap();
    let file = w.finish(&Trailer::default()).unwrap();
    assert_eq!(batches(&file), [batch], "one block: the empty batch writes nothing");
}

#[test]
fn a_batch_past_the_caps_is_split_over_blocks_that_read_back_as_the_batch() {
    let n = MAX_SYSTEM_ENTRIES + 10;
    let batch = SystemBatch {
        status: Some(Default::default()),
        switches: (0..n as u64)
            .map(|i| Switch { tid: 1, time_ns: i, cpu: 0, kind: SwitchKind::In })
            .collect(),
        samples: (0..n as u64).map(|i| sample(1, i, vec![i, i + 1])).collect(),
        ..SystemBatch::default()
    };
    let mut w = Writer::new(Vec::new(), &header()).unwrap();
    w.write_system(&batch).unwrap();
    let file = w.finish(&Trailer::default()).unwrap();
    let got = batches(&file);
    assert_eq!(got.len(), 4, "two blocks of switches, two of samples");
    assert!(got
        .iter()
        .all(|b| b.switches.len() <= MAX_SYSTEM_ENTRIES && b.samples.len() <= MAX_SYSTEM_ENTRIES));
    assert_eq!(got.iter().filter(|b| b.status.is_some()).count(), 1);
    assert!(got.last().unwrap().status.is_some(), "the status comes last");
    let switches: Vec<_> = got.iter().flat_map(|b| b.switches.clone()).collect();
    let samples: Vec<_> = got.iter().flat_map(|b| b.samples.clone()).collect();
    assert_eq!((switches, samples), (batch.switches, batch.samples));
}

#[test]
fn samples_past_the_frames_cap_of_a_block_are_split_over_blocks() {
    let n = MAX_SYSTEM_FRAMES / MAX_FRAMES + 10;
    let batch = SystemBatch {
        samples: (0..n as u64).map(|i| sample(2, i, vec![i; MAX_FRAMES])).collect(),
        ..SystemBatch::default()
    };
    let mut w = Writer::new(Vec::new(), &header()).unwrap();
    w.write_system(&batch).unwrap();
    let got = batches(&w.finish(&Trailer::default()).unwrap());
    assert_eq!(got.len(), 2);
    for b in &got {
        assert!(b.samples.iter().map(|s| s.frames.len()).sum::<usize>() <= MAX_SYSTEM_FRAMES);
    }
    let samples: Vec<_> = got.into_iter().flat_map(|b| b.samples).collect();
    assert_eq!(samples, batch.samples);
}

#[test]
fn the_writer_refuses_a_sample_deeper_than_the_cap() {
    let mut w = Writer::new(Vec::new(), &header()).unwrap();
    let at = w.offset();
    let batch =
        SystemBatch { samples: vec![sample(1, 0, vec![1; MAX_FRAMES + 1])], ..SystemBatch::default() };
    let e = w.write_system(&batch).unwrap_err();
    assert!(e.to_string().contains("128 frames"), "{e}");
    assert_eq!((e.offset(), w.offset()), (at, at), "nothing written");
}

/// A file whose only block after the header is a system block with `body`; and the file offset
/// of the body.
fn with_system_body(body: &[u8]) -> (Vec<u8>, u64) {
    let mut file = Writer::new(Vec::new(), &header()).unwrap().finish(&Trailer::default()).unwrap();
    // Drop the trailer block (8 bytes of framing and its body) and put the system block there.
    let mut r = Reader::new(&file[..]).unwrap();
    let trailer_at = r.offset() as usize;
    assert!(matches!(r.next_block().unwrap(), Some(Block::Trailer(_))));
    let trailer = file.split_off(trailer_at);
    file.extend_from_slice(&kind::SYSTEM.to_le_bytes());
    file.extend_from_slice(&(body.len() as u32).to_le_bytes());
    let base = file.len() as u64;
    file.extend_from_slice(body);
    file.extend_from_slice(&trailer);
    (file, base)
}

/// The error reading the file made of `body`, and its offset relative to the body.
fn error_in(body: &[u8]) -> (String, u64) {
    let (file, base) = with_system_body(body);
    let mut r = Reader::new(&file[..]).unwrap();
    let e = loop {
        match r.next_block() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("{body:?} read cleanly"),
            Err(e) => break e,
        }
    };
    assert!(matches!(e.kind(), ErrorKind::Malformed { what: "system block", .. }), "{e}");
    (e.to_string(), e.offset() - base)
}

#[test]
fn hostile_system_blocks_are_errors_at_their_offsets() {
    // Samples section (tag 4) of 5 bytes claiming 2^16 + 1 samples.
    let (msg, at) = error_in(&[4, 5, 0x81, 0x80, 0x04, 0, 0]);
    assert!(msg.contains("65537 samples"), "{msg}");
    assert_eq!(at, 2);
    // Switches (tag 3) claiming 1,000 entries in 3 bytes.
    let (msg, at) = error_in(&[3, 3, 0xe8, 0x07, 0]);
    assert!(msg.contains("cannot fit"), "{msg}");
    assert_eq!(at, 2);
    // One sample of 200 frames: tid, time, cpu, kind, frame count at offset 6.
    let (msg, at) = error_in(&[4, 8, 1, 1, 0, 0, 0, 0xc8, 0x01, 0]);
    assert!(msg.contains("200 frames"), "{msg}");
    assert_eq!(at, 7);
    // A section longer than the block.
    let (msg, at) = error_in(&[2, 50, 1]);
    assert!(msg.contains("section of 50 bytes"), "{msg}");
    assert_eq!(at, 1);
    // A section cut inside an entry: one mapping whose path says 9 bytes and has 1.
    let (msg, at) = error_in(&[2, 6, 1, 0, 0, 0, 9, b'/']);
    assert!(msg.contains("needs 9 more bytes"), "{msg}");
    assert_eq!(at, 7);
    // A path over the cap, a bad switch kind, a varint past 64 bits.
    let (msg, at) = error_in(&[2, 7, 1, 0, 0, 0, 0x81, 0x40, 0]);
    assert!(msg.contains("mapping path of 8193 bytes"), "{msg}");
    assert_eq!(at, 6);
    let (msg, at) = error_in(&[3, 5, 1, 1, 0, 0, 9]);
    assert!(msg.contains("switch kind 9"), "{msg}");
    assert_eq!(at, 6);
    let (_, at) = error_in(&[0xff; 12]);
    assert_eq!(at, 0);
}

#[test]
fn an_unknown_section_is_skipped() {
    // Tag 9 (a later minor version's), then one switch.
    let (file, _) = with_system_body(&[9, 2, 0xaa, 0xbb, 3, 5, 1, 7, 10, 0, 2]);
    let got = batches(&file);
    assert_eq!(got[0].switches, [Switch { tid: 7, time_ns: 5, cpu: UNKNOWN_CPU, kind: SwitchKind::In }]);
}
