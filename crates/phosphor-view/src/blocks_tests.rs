//! The compressed blocks (`blocks.rs`): records come back as they went in whatever their values,
//! and a damaged block is an error that names the index file and the byte, never a panic nor an
//! allocation of what the damage claims.

use crate::blocks::{
    check_frame, BlockTable, BlockWriter, Coding, Decoder, Encoder, Layout, FLOWS, FLOW_EVENTS,
    MAX_PER_BLOCK, POINTS, SAMPLES, SLICES, TABLE_HEAD,
};
use crate::records::{slice_flags, Point, Sample, Slice};
use crate::tests::{tree, write_trace, Rng};
use crate::{open, BuildOptions, Error, IndexFile, Window};

const LAYOUTS: [&Layout; 5] = [&SLICES, &POINTS, &SAMPLES, &FLOWS, &FLOW_EVENTS];

/// `records` through a block writer of `per` records a block, and each block decoded again.
fn round_trip(layout: &'static Layout, per: u32, records: &[u8]) -> Vec<u8> {
    let mut w = BlockWriter::new(Vec::new(), layout, per).unwrap();
    for r in records.chunks_exact(layout.bytes) {
        w.push(r).unwrap();
    }
    let (bytes, table) = w.finish().unwrap();
    let table = BlockTable::decode(&table.encode(), layout, bytes.len() as u64).unwrap();
    assert_eq!(table.records, (records.len() / layout.bytes) as u64);
    let mut d = Decoder::new().unwrap();
    let mut all = Vec::new();
    let mut out = Vec::new();
    for k in 0..table.ends.len() as u64 {
        let (at, len, n) = table.block(k);
        d.decode(layout, n, &bytes[at as usize..(at + len) as usize], &mut out).unwrap();
        all.extend_from_slice(&out);
    }
    all
}

/// A value that is often extreme: 0, 1, the most, one less, or anything.
fn extreme(rng: &mut Rng) -> u64 {
    match rng.below(6) {
        0 => 0,
        1 => 1,
        2 => u64::MAX,
        3 => u64::MAX - 1,
        4 => rng.below(1000),
        _ => rng.next(),
    }
}

#[test]
fn every_layout_covers_its_record_exactly_and_codes_a_field_only_from_one_before_it() {
    for layout in LAYOUTS {
        let mut covered = vec![0u32; layout.bytes];
        let mut at = 0;
        for (k, f) in layout.fields.iter().enumerate() {
            assert!((1..=8).contains(&f.width), "{f:?}");
            // In order of place: decoding writes a field's 8 bytes where it can, the next fields
            // writing over the spill.
            assert!(f.at >= at, "{f:?}");
            at = f.at + f.width;
            for c in &mut covered[f.at..f.at + f.width] {
                *c += 1;
            }
            if let Coding::From(g) = f.coding {
                assert!(g < k, "{f:?}");
            }
        }
        assert!(covered.iter().all(|&c| c == 1), "{layout:?}: {covered:?}");
    }
}

#[test]
fn any_bytes_come_back_as_they_went_in_whatever_the_block_size() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for layout in LAYOUTS {
        for n in [0usize, 1, 2, 7, 8, 9, 63, 64, 65, 600] {
            for per in [1u32, 7, 8, 64, 512] {
                let records: Vec<u8> = (0..n * layout.bytes)
                    .map(|_| match rng.below(4) {
                        0 => 0,
                        1 => 0xFF,
                        _ => rng.next() as u8,
                    })
                    .collect();
                assert_eq!(round_trip(layout, per, &records), records, "{n} records, {per} a block");
            }
        }
    }
}

#[test]
fn slices_points_and_samples_with_extreme_values_come_back_whole() {
    let mut rng = Rng(7);
    for n in [1usize, 2, 511, 512, 513, 1500] {
        let mut slices = Vec::new();
        let mut points = Vec::new();
        let mut samples = Vec::new();
        let mut start = extreme(&mut rng);
        for _ in 0..n {
            // Equal starts often, steps back (a new level) sometimes, ends up to u64::MAX.
            start = match rng.below(4) {
                0 => start,
                1 => extreme(&mut rng),
                _ => start.wrapping_add(rng.below(100)),
            };
            let end = match rng.below(3) {
                0 => u64::MAX,
                1 => start,
                _ => start.saturating_add(extreme(&mut rng)),
            };
            let event = extreme(&mut rng) & ((1 << 55) - 1);
            let flags = rng.below(32) as u8 | slice_flags::UNCLOSED;
            let s = Slice { start, end, name: rng.next() as u32, callsite: u32::MAX, event, flags };
            slices.extend_from_slice(&s.encode());
            slices.extend_from_slice(&(extreme(&mut rng) as u32).to_le_bytes());
            let kind = rng.below(5) as u8;
            let p = Point { ts: start, name: rng.below(3) as u32, callsite: 16, event, kind };
            points.extend_from_slice(&p.encode());
            let value = f64::from_bits(extreme(&mut rng));
            samples.extend_from_slice(&Sample { ts: end, value }.encode());
        }
        for per in [1u32, 64, 512] {
            assert_eq!(round_trip(&SLICES, per, &slices), slices, "{n} slices, {per} a block");
            assert_eq!(round_trip(&POINTS, per, &points), points, "{n} points");
            assert_eq!(round_trip(&SAMPLES, per, &samples), samples, "{n} samples");
        }
    }
}

/// Random records of `layout`: each field often extreme, often a small step from the record before.
fn random_records(rng: &mut Rng, layout: &Layout, n: usize) -> Vec<u8> {
    let mut records = vec![0u8; n * layout.bytes];
    let mut prev = vec![0u64; layout.fields.len()];
    for rec in records.chunks_exact_mut(layout.bytes) {
        for (k, f) in layout.fields.iter().enumerate() {
            let v = if rng.below(3) == 0 { prev[k].wrapping_add(rng.below(5)) } else { extreme(rng) };
            prev[k] = v;
            rec[f.at..f.at + f.width].copy_from_slice(&v.to_le_bytes()[..f.width]);
        }
    }
    records
}

#[test]
fn a_block_decoded_column_by_column_equals_the_block_decoded_whole() {
    let mut rng = Rng(0x5eed_c01d);
    let mut encoder = Encoder::new().unwrap();
    let mut d = Decoder::new().unwrap();
    let mut columns = Decoder::scratch();
    for layout in LAYOUTS {
        for n in [1usize, 2, 7, 63, 64, 65, 511, 512] {
            let records = random_records(&mut rng, layout, n);
            let frame = encoder.encode(layout, &records).unwrap().to_vec();
            let mut whole = Vec::new();
            d.decode(layout, n, &frame, &mut whole).unwrap();
            assert_eq!(whole, records, "{layout:?} {n}");
            // Some of the fields, in any order (a field coded from another decodes that one too).
            for _ in 0..4 {
                let fields: Vec<usize> =
                    (0..layout.fields.len()).filter(|_| rng.below(2) == 0).rev().collect();
                d.columns(layout, n, &frame, &mut columns).unwrap();
                columns.want(&fields);
                for &k in &fields {
                    let f = &layout.fields[k];
                    let want: Vec<u64> = records
                        .chunks_exact(layout.bytes)
                        .map(|r| {
                            let mut v = [0u8; 8];
                            v[..f.width].copy_from_slice(&r[f.at..f.at + f.width]);
                            u64::from_le_bytes(v)
                        })
                        .collect();
                    assert_eq!(columns.get(k), &want[..], "{layout:?} {n} field {k} of {fields:?}");
                }
            }
        }
    }
}

#[test]
fn a_frame_that_claims_another_size_or_is_cut_short_is_refused_before_it_is_decoded() {
    let mut e = Encoder::new().unwrap();
    let mut d = Decoder::new().unwrap();
    let mut out = Vec::new();
    // 64 MiB of zeros compress to a few KiB: said to be one 16-byte record, it is refused by its
    // header, before any of it is decoded.
    let huge = vec![0u8; 64 << 20];
    let frame = e.encode(&SAMPLES, &huge).unwrap().to_vec();
    assert!(frame.len() < 1 << 16, "{}", frame.len());
    let err = d.decode(&SAMPLES, 1, &frame, &mut out).unwrap_err();
    assert!(err.0.contains("67108864"), "{err:?}");
    assert!(out.capacity() < 1 << 20, "nothing allocated for the claim: {}", out.capacity());
    // Cut short, or with bytes after it.
    let frame = e.encode(&SAMPLES, &[7u8; 16 * 10]).unwrap().to_vec();
    for cut in [1, 4, frame.len() / 2, frame.len() - 1] {
        let err = check_frame(&frame[..cut], 160).unwrap_err();
        assert!(!err.0.is_empty());
        assert!(d.decode(&SAMPLES, 10, &frame[..cut], &mut out).is_err());
    }
    let mut longer = frame.clone();
    longer.extend_from_slice(&frame);
    assert!(check_frame(&longer, 160).is_err());
    // A byte changed inside: the frame's checksum (or its decoding) fails, it does not panic.
    for k in 0..frame.len() {
        let mut bad = frame.clone();
        bad[k] ^= 0x5A;
        let _ = d.decode(&SAMPLES, 10, &bad, &mut out);
    }
    let mut bad = frame.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert!(d.decode(&SAMPLES, 10, &bad, &mut out).is_err(), "the checksum is checked");
}

#[test]
fn a_block_table_that_does_not_fit_its_section_is_refused() {
    let layout = &POINTS;
    let mut w = BlockWriter::new(Vec::new(), layout, 4).unwrap();
    for k in 0..10u8 {
        w.push(&[k; 24]).unwrap();
    }
    let (bytes, table) = w.finish().unwrap();
    let good = table.encode();
    let len = bytes.len() as u64;
    assert_eq!(BlockTable::decode(&good, layout, len).unwrap(), table);
    let with = |at: usize, v: &[u8]| {
        let mut b = good.clone();
        b[at..at + v.len()].copy_from_slice(v);
        BlockTable::decode(&b, layout, len)
    };
    // Another record size, no or too many records a block, more records than blocks.
    assert_eq!(with(12, &32u32.to_le_bytes()).unwrap_err().1, 12);
    assert_eq!(with(8, &0u32.to_le_bytes()).unwrap_err().1, 8);
    assert_eq!(with(8, &(MAX_PER_BLOCK + 1).to_le_bytes()).unwrap_err().1, 8);
    assert!(with(0, &u64::MAX.to_le_bytes()).is_err());
    // (11 records fit three blocks of 4 as 10 do: the third block's frame, which says 2 records,
    // is what refuses that, when the index is opened.)
    assert!(with(0, &13u64.to_le_bytes()).is_err());
    // Ends out of order, or past the section.
    assert_eq!(with(TABLE_HEAD + 8, &0u64.to_le_bytes()).unwrap_err().1, TABLE_HEAD + 8);
    assert!(with(TABLE_HEAD + 16, &(len + 1).to_le_bytes()).is_err());
    assert!(BlockTable::decode(&good, layout, len + 1).is_err());
    assert!(BlockTable::decode(&good[..good.len() - 8], layout, len).is_err());
    assert!(BlockTable::decode(&good[..3], layout, len).is_err());
}

/// A trace of some 2,000 slices on one thread, indexed in blocks of 8 records.
fn small_blocks(d: &tempfile::TempDir) -> (std::path::PathBuf, IndexFile) {
    let path = d.path().join("t.phos");
    let mut events = Vec::new();
    tree(&mut Rng(11), 0, 1_000_000, 4, &mut events);
    let sites = [
        ("p", phosphor_format::Phase::Complete),
        ("q", phosphor_format::Phase::Complete),
        ("r", phosphor_format::Phase::Complete),
    ];
    write_trace(&path, &sites, &[(1, events)]);
    let index = open(&path, None, &BuildOptions { block_records: 8, ..BuildOptions::default() }).unwrap();
    (path, index)
}

/// Where the slices' section starts, and its block table's ends (the index's footer).
fn slice_blocks(index: &IndexFile) -> (usize, Vec<u64>) {
    let bytes = std::fs::read(index.path()).unwrap();
    let footer = u64::from_le_bytes(bytes[32..40].try_into().unwrap()) as usize;
    let section = |k: usize| {
        let at = footer + 16 * k;
        let o = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
        let l = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize;
        (o, l)
    };
    let (table, len) = section(15);
    let ends = bytes[table + TABLE_HEAD..table + len]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    (section(0).0, ends)
}

#[test]
fn an_index_in_small_blocks_answers_as_one_in_large_ones() {
    let d = tempfile::tempdir().unwrap();
    let (path, small) = small_blocks(&d);
    let large_path = d.path().join("u.phos");
    std::fs::copy(&path, &large_path).unwrap();
    let large = open(&large_path, None, &BuildOptions::default()).unwrap();
    assert!(small.slice_count() > 1000, "{}", small.slice_count());
    assert!(slice_blocks(&small).1.len() as u64 == small.slice_count().div_ceil(8));
    assert_eq!(small.threads, large.threads);
    for i in 0..small.slice_count() {
        assert_eq!(small.slice(i), large.slice(i), "slice {i}");
        assert_eq!(small.slice_path(i), large.slice_path(i), "slice {i}");
    }
    // A scan's columns across blocks of 8, from and to the middle of one: the slices read by number.
    let mut scanned = Vec::new();
    small.scan_slices(3, small.slice_count() - 5, |base, rows, c| {
        use crate::blocks::slice_fields as F;
        c.want(&[F::PATH, F::START, F::NAME, F::END, F::FLAGS]);
        for r in rows {
            let (s, e, n) = (c.get(F::START)[r], c.get(F::END)[r], c.get(F::NAME)[r] as u32);
            let (flags, path) = (c.get(F::FLAGS)[r] as u8, c.get(F::PATH)[r] as u32);
            scanned.push((base + r as u64, s, e, n, flags, path));
        }
    });
    let direct: Vec<_> = (3..small.slice_count() - 5)
        .map(|i| {
            let s = large.slice(i);
            (i, s.start, s.end, s.name, s.flags, large.slice_path(i).unwrap_or(u32::MAX))
        })
        .collect();
    assert_eq!(scanned, direct);
    for pixels in [1, 10, 800] {
        let w = Window::new(0, 1_000_000, pixels);
        assert_eq!(small.slices_in(&small.threads[0], w), large.slices_in(&large.threads[0], w));
    }
    // Past the section: zeros, never a block out of the table.
    assert_eq!(small.slice(small.slice_count()), Slice::default());
    assert_eq!(small.slice(u64::MAX), Slice::default());
    assert_eq!(small.get_slice(small.slice_count()), None);
    assert!(small.damage().is_none());
}

#[test]
fn a_damaged_block_names_the_index_file_and_its_offset_and_the_index_is_built_again() {
    let d = tempfile::tempdir().unwrap();
    let (path, index) = small_blocks(&d);
    let at = index.path().to_owned();
    let want: Vec<Slice> = (0..index.slice_count()).map(|i| index.slice(i)).collect();
    let (start, ends) = slice_blocks(&index);
    drop(index);
    let len = std::fs::metadata(&path).unwrap().len();
    let mtime = {
        let m = std::fs::metadata(&path).unwrap().modified().unwrap();
        m.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    };
    let good = std::fs::read(&at).unwrap();
    // Block 5's frame header says another size: refused when opened, at the block's offset.
    let block = start + ends[4] as usize;
    let mut bytes = good.clone();
    bytes[block + 5] ^= 0x40;
    std::fs::write(&at, &bytes).unwrap();
    match IndexFile::open(&at, len, mtime) {
        Err(Error::Index { path: p, offset, what }) => {
            assert_eq!((p, offset), (at.clone(), block as u64), "{what}");
            let shown = Error::Index { path: at.clone(), offset, what }.to_string();
            assert!(
                shown.contains(&at.display().to_string()) && shown.contains(&block.to_string()),
                "{shown}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Opened through the trace, it is built again, and reads as before.
    let rebuilt = open(&path, None, &BuildOptions { block_records: 8, ..BuildOptions::default() }).unwrap();
    assert_eq!((0..rebuilt.slice_count()).map(|i| rebuilt.slice(i)).collect::<Vec<_>>(), want);
    drop(rebuilt);

    // A byte changed in block 3's payload passes the opening checks (its frame is whole); reading
    // it fails its checksum: zeros, and the damage kept, naming the file and the block's offset.
    let block = start + ends[2] as usize;
    let last = start + ends[3] as usize - 1;
    let mut bytes = good.clone();
    bytes[last] ^= 0x01;
    std::fs::write(&at, &bytes).unwrap();
    let index = IndexFile::open(&at, len, mtime).unwrap().unwrap();
    assert_eq!(index.slice(8 * 3), Slice::default());
    assert_eq!(index.slice(8 * 3 - 1), want[8 * 3 - 1], "the blocks around it read as ever");
    assert_eq!(index.slice(8 * 4), want[8 * 4]);
    match index.damage() {
        Some(Error::Index { path: p, offset, .. }) => assert_eq!((p, *offset), (&at, block as u64)),
        other => panic!("{other:?}"),
    }
    let (mut seen, mut zeros) = (0, Vec::new());
    index.scan_slices(0, index.slice_count(), |base, rows, c| {
        c.want(&[crate::blocks::slice_fields::START]);
        seen += rows.len() as u64;
        let starts = c.get(crate::blocks::slice_fields::START);
        if starts.iter().all(|&v| v == 0) {
            zeros.push(base);
        }
    });
    assert_eq!(zeros, [8 * 3], "the damaged block's fields are zeros, the others not");
    assert_eq!(seen, index.slice_count(), "a scan goes past it");

    // The index cut short: refused (no footer where it says).
    std::fs::write(&at, &good[..block + 3]).unwrap();
    assert!(IndexFile::open(&at, len, mtime).is_err());
}
