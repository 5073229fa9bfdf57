use phosphor_format::file::Header;
use phosphor_format::ClockInfo;

use super::*;

const S: i64 = 1_000_000_000;

/// A header whose clock's origin is at `mono` ns on CLOCK_MONOTONIC and `wall` on the wall clock.
fn header(mono: u64, wall: u64, boot: Option<u8>) -> Header {
    Header {
        clock: ClockInfo::monotonic(mono, wall),
        pid: 1,
        process_name: "t".into(),
        boot_id: boot.map(|b| [b; 16]),
        host_name: None,
    }
}

fn offsets(placed: &[Placed]) -> Vec<i64> {
    placed.iter().map(|p| p.offset_ns).collect()
}

#[test]
fn runs_of_one_boot_minutes_apart_each_start_at_zero() {
    // Four 90 ms runs, four minutes apart, on one boot.
    let hs: Vec<Header> = (0..4).map(|k| header(100 * S as u64 + k * 240 * S as u64, 0, Some(7))).collect();
    let refs: Vec<&Header> = hs.iter().collect();
    let spans = vec![Some((0, 90_000_000)); 4];
    let placed = arrange(&refs, &spans, Align::Auto);
    assert_eq!(offsets(&placed), [0, 0, 0, 0]);
    assert_eq!(placed[0].by, PlacedBy::First);
    assert!(placed[1..].iter().all(|p| p.by == PlacedBy::OwnStart));
    // Before their spans are known they share the boot's clock, as `phosphor convert` places them.
    let unknown = arrange(&refs, &[None; 4], Align::Auto);
    assert_eq!(offsets(&unknown), [0, 240 * S, 480 * S, 720 * S]);
    assert_eq!(unknown[3].by, PlacedBy::Monotonic { with: 0 });
    // --align clock keeps that whatever the spans.
    assert_eq!(offsets(&arrange(&refs, &spans, Align::Clock)), offsets(&unknown));
}

#[test]
fn traces_of_one_moment_stay_together_and_the_others_start_at_zero() {
    // A server (0..10 s) and a client started 2 s later (2..5 s) on one boot; a run an hour
    // later on another machine, whose wall clock says so.
    let server = header(50 * S as u64, 1_000 * S as u64, Some(1));
    let client = header(52 * S as u64, 1_002 * S as u64 + 5, Some(1));
    let later = header(7 * S as u64, 4_600 * S as u64, Some(2));
    let refs = [&server, &client, &later];
    let spans = [Some((0, 10 * S)), Some((0, 3 * S)), Some((0, S))];
    let placed = arrange(&refs, &spans, Align::Auto);
    // The client exactly 2 s after the server (CLOCK_MONOTONIC, not the wall clock's 2 s + 5 ns).
    assert_eq!(offsets(&placed), [0, 2 * S, 0]);
    assert_eq!(placed[1].by, PlacedBy::Monotonic { with: 0 });
    assert_eq!(placed[2].by, PlacedBy::OwnStart);
    // --align start: each from its own start.
    assert_eq!(offsets(&arrange(&refs, &spans, Align::Start)), [0, 0, 0]);
}

#[test]
fn machines_recording_at_one_moment_are_placed_through_the_wall_clock() {
    // Two boots, overlapping on the wall clock: kept together, within the clocks' skew.
    let a = header(10 * S as u64, 1_000 * S as u64, Some(1));
    let b = header(900 * S as u64, 1_001 * S as u64, Some(2));
    let placed = arrange(&[&b, &a], &[Some((0, 5 * S)), Some((0, 5 * S))], Align::Auto);
    // `a` started a second before `b`: the group's zero is `a`'s origin.
    assert_eq!(offsets(&placed), [S, 0]);
    assert_eq!(placed[1].by, PlacedBy::WallClock { with: 0 });
}

#[test]
fn a_group_is_joined_through_any_of_its_members() {
    // 0..4 s, 3..8 s and 7..9 s: the first and last do not overlap but each overlaps the second.
    let hs: Vec<Header> = [0, 3, 7].iter().map(|&k| header(k * S as u64 + S as u64, 0, Some(4))).collect();
    let refs: Vec<&Header> = hs.iter().collect();
    let spans = [Some((0, 4 * S)), Some((0, 5 * S)), Some((0, 2 * S))];
    let placed = arrange(&refs, &spans, Align::Auto);
    assert_eq!(offsets(&placed), [0, 3 * S, 7 * S]);
    assert_eq!(placed[2].by, PlacedBy::Monotonic { with: 0 });
}

#[test]
fn align_parses_its_three_names_and_refuses_others() {
    assert_eq!("auto".parse(), Ok(Align::Auto));
    assert_eq!("clock".parse(), Ok(Align::Clock));
    assert_eq!("start".parse(), Ok(Align::Start));
    assert!("wall".parse::<Align>().unwrap_err().contains("auto, clock or start"));
}
