use phosphor_format::file::Header;
use phosphor_format::ClockInfo;

use super::*;
use crate::test_files::{clock, header};

const BOOT_A: [u8; 16] = [0xa; 16];
const BOOT_B: [u8; 16] = [0xb; 16];

/// A file's header: its origin on CLOCK_MONOTONIC and on the wall clock, its boot and host.
fn file(mono: u64, wall: u64, boot: Option<[u8; 16]>, host: Option<&str>) -> Header {
    let clock = ClockInfo { origin_monotonic_ns: mono, origin_wall_ns: wall, ..clock(1.0) };
    Header { boot_id: boot, host_name: host.map(String::from), ..header(clock) }
}

#[test]
fn files_of_one_boot_are_placed_on_monotonic_time_exactly_whatever_their_wall_clocks() {
    // The wall clock was stepped between the two starts (by 5 s): CLOCK_MONOTONIC was not.
    let a = file(1_000, 50_000_000_000, Some(BOOT_A), Some("h"));
    let b = file(3_500, 55_000_002_500, Some(BOOT_A), Some("h"));
    let t = align([&a, &b]);
    assert_eq!(t.warning, None);
    assert_eq!(t.files[0], Placement { by: AlignedBy::Reference, shift_ns: 0, origin_ns: 0 });
    assert_eq!(t.files[1], Placement { by: AlignedBy::Monotonic, shift_ns: 0, origin_ns: 2_500 });
}

#[test]
fn files_of_other_boots_are_placed_through_their_wall_clock_offsets_with_a_warning() {
    // B's machine booted later: its CLOCK_MONOTONIC is 1 s at the wall's 100 s, A's is 40 s at 90 s.
    let a = file(40_000_000_000, 90_000_000_000, Some(BOOT_A), Some("alpha"));
    let b = file(1_000_000_000, 100_000_000_000, Some(BOOT_B), Some("beta"));
    let t = align([&a, &b]);
    // On A's CLOCK_MONOTONIC, B started at 40 s + (100 s - 90 s) = 50 s.
    let b_place = t.files[1];
    assert_eq!(b_place.by, AlignedBy::Realtime(Reason::OtherHost));
    assert_eq!(1_000_000_000 + b_place.shift_ns, 50_000_000_000);
    assert_eq!(b_place.origin_ns, 10_000_000_000);
    assert_eq!(t.files[0].shift_ns, 0);
    let w = t.warning.expect("a skew warning");
    assert_eq!(w.files, [(1, Reason::OtherHost)]);
    let text = w.describe(|i| ["a.phos", "b.phos"][i].to_owned());
    assert!(text.contains("b.phos: another machine") && text.contains("CLOCK_REALTIME"), "{text}");
}

#[test]
fn another_boot_of_the_same_host_is_said_as_such() {
    let a = file(10, 1_000, Some(BOOT_A), Some("h"));
    let b = file(10, 2_000, Some(BOOT_B), Some("h"));
    assert_eq!(align([&a, &b]).files[1].by, AlignedBy::Realtime(Reason::OtherBoot));
}

#[test]
fn files_without_a_boot_id_are_placed_by_the_wall_clock_as_the_viewer_placed_them() {
    let a = file(5_000, 1_000_000, None, None);
    let b = file(9_000, 1_000_700, None, None);
    let c = file(100, 999_000, None, None);
    let t = align([&a, &b, &c]);
    let w = t.warning.expect("a warning");
    assert_eq!(w.files, [(1, Reason::NoBootId), (2, Reason::NoBootId)]);
    // The origins' differences are the wall clocks' differences, from the earliest (c).
    let origins: Vec<i64> = t.files.iter().map(|p| p.origin_ns).collect();
    assert_eq!(origins, [1_000, 1_700, 0]);
}

#[test]
fn a_new_file_with_an_old_one_is_aligned_by_the_wall_clock() {
    let old = file(5_000, 1_000_000, None, None);
    let new = file(5_000, 1_000_000, Some(BOOT_A), Some("h"));
    let t = align([&new, &old]);
    assert_eq!(t.files[1].by, AlignedBy::Realtime(Reason::NoBootId));
}

#[test]
fn files_of_one_other_boot_stay_exact_among_themselves() {
    let a = file(1_000_000, 10_000_000, Some(BOOT_A), Some("a"));
    // b1 and b2 share a boot; their wall offsets disagree by 300 ns (NTP slewed in between).
    let b1 = file(2_000, 20_000_000, Some(BOOT_B), Some("b"));
    let b2 = file(7_000, 20_005_300, Some(BOOT_B), Some("b"));
    let t = align([&a, &b1, &b2]);
    assert_eq!(t.files[1].shift_ns, t.files[2].shift_ns, "one offset for the boot");
    assert_eq!(t.files[2].origin_ns - t.files[1].origin_ns, 5_000, "their monotonic difference");
}

#[test]
fn a_file_that_would_start_before_the_timelines_zero_moves_the_timeline_later() {
    // B started 1 s before A by the wall clocks, and A only 1 µs after its boot.
    let a = file(1_000, 10_000_000_000, Some(BOOT_A), Some("a"));
    let b = file(1_000, 9_000_000_000, Some(BOOT_B), Some("b"));
    let t = align([&a, &b]);
    let start = |i: usize, h: &Header| h.clock.origin_monotonic_ns as i64 + t.files[i].shift_ns;
    assert_eq!(start(1, &b), 0, "the earliest origin is the zero");
    assert_eq!(start(0, &a) - start(1, &b), 1_000_000_000, "A starts 1 s after B");
    assert_eq!((t.files[0].origin_ns, t.files[1].origin_ns), (1_000_000_000, 0));
}

#[test]
fn no_file_is_an_empty_timeline() {
    assert_eq!(align([]), Timeline { files: Vec::new(), warning: None });
}

#[test]
fn a_machine_is_described_by_its_host_and_boot() {
    let h = file(0, 0, Some(BOOT_A), Some("h"));
    assert_eq!(machine_of(&h), "h (boot 0a0a0a0a-0a0a-0a0a-0a0a-0a0a0a0a0a0a)");
    assert_eq!(machine_of(&file(0, 0, None, None)), "unknown host (no boot id)");
}
