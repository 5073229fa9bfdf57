//! Tests of `phosphor diff`: the rank test and the quantile bounds against hand-checked answers
//! and a brute-force enumeration, the gates' syntax, and diffs of trace files built here with
//! exact durations.

use phosphor_format::file::{CallsiteInfo, Trailer, Writer};
use phosphor_format::Phase;

use super::*;
use crate::diff_stats::{erfc, rank_test, Sample};
use crate::test_files::{clock, header, slice, Rng};
use crate::TraceStats;

fn exact(values: &[u64]) -> Sample {
    let mut v = values.to_vec();
    v.sort_unstable();
    Sample::exact(v)
}

#[test]
fn identical_samples_are_not_significant() {
    for n in [3u64, 20, 200] {
        let s = exact(&(1..=n).map(|v| v * 10).collect::<Vec<_>>());
        let t = rank_test(&s, &s);
        assert_eq!(
            (t.u, t.p_new_longer, t.p_value, t.significant),
            ((n * n) as f64 / 2.0, 0.5, 1.0, false),
            "{n}"
        );
    }
    // Every value tied: no variance, nothing to tell apart.
    let t = rank_test(&exact(&[5; 100]), &exact(&[5; 100]));
    assert_eq!((t.p_value, t.z), (1.0, 0.0));
}

#[test]
fn fully_separated_small_samples_get_the_exact_permutation_p_value() {
    // 3 and 3, all new ones longer: 2 of the C(6,3) = 20 splits are as extreme (either way).
    let t = rank_test(&exact(&[1, 2, 3]), &exact(&[4, 5, 6]));
    assert_eq!(t.method, RankMethod::Permutation);
    assert_eq!((t.u, t.p_new_longer), (9.0, 1.0));
    assert!((t.p_value - 0.1).abs() < 1e-12, "{}", t.p_value);
    assert!(!t.significant, "6 durations can never be significant at 0.001");
    // 5 and 5: 2 of C(10,5) = 252.
    let t = rank_test(&exact(&[10, 20, 30, 40, 50]), &exact(&[1, 2, 3, 4, 5]));
    assert!((t.p_value - 2.0 / 252.0).abs() < 1e-12, "{}", t.p_value);
    assert_eq!(t.p_new_longer, 0.0);
    // 8 and 8: 2 of C(16,8) = 12,870 < 0.001.
    let t = rank_test(&exact(&(1..=8).collect::<Vec<_>>()), &exact(&(9..=16).collect::<Vec<_>>()));
    assert!((t.p_value - 2.0 / 12_870.0).abs() < 1e-12, "{}", t.p_value);
    assert!(t.significant && t.slower());
}

#[test]
fn the_permutation_p_value_with_ties_matches_a_brute_force_count() {
    let mut rng = Rng(0x5eed);
    for case in 0..40 {
        let (n1, n2) = (1 + rng.below(7) as usize, 1 + rng.below(7) as usize);
        // Few distinct values: many ties.
        let a: Vec<u64> = (0..n1).map(|_| rng.below(4)).collect();
        let b: Vec<u64> = (0..n2).map(|_| rng.below(4) + rng.below(2)).collect();
        let t = rank_test(&exact(&a), &exact(&b));
        // Every split of the pooled values into n2 "new" and the rest, by bit mask.
        let pooled: Vec<u64> = a.iter().chain(&b).copied().collect();
        let u_of = |new: &[u64], base: &[u64]| -> f64 {
            new.iter()
                .flat_map(|x| {
                    base.iter().map(move |y| {
                        if x > y {
                            1.0
                        } else if x == y {
                            0.5
                        } else {
                            0.0
                        }
                    })
                })
                .sum()
        };
        let observed = u_of(&b, &a);
        assert!((observed - t.u).abs() < 1e-9, "case {case}: U {observed} vs {}", t.u);
        let mean = (n1 * n2) as f64 / 2.0;
        let (mut hit, mut all) = (0u64, 0u64);
        for mask in 0u32..(1 << pooled.len()) {
            if mask.count_ones() as usize != n2 {
                continue;
            }
            let new: Vec<u64> = (0..pooled.len()).filter(|i| mask >> i & 1 == 1).map(|i| pooled[i]).collect();
            let base: Vec<u64> =
                (0..pooled.len()).filter(|i| mask >> i & 1 == 0).map(|i| pooled[i]).collect();
            all += 1;
            hit += u64::from((u_of(&new, &base) - mean).abs() >= (observed - mean).abs() - 1e-9);
        }
        let expected = hit as f64 / all as f64;
        assert!((t.p_value - expected).abs() < 1e-9, "case {case} {a:?} {b:?}: {} vs {expected}", t.p_value);
    }
}

#[test]
fn large_samples_use_the_normal_approximation_with_the_tie_correction() {
    // 25 and 25 fully separated: U = 625, mean 312.5, σ² = 625·51/12; z = 312/σ = 6.0537.
    let t = rank_test(&exact(&(1..=25).collect::<Vec<_>>()), &exact(&(26..=50).collect::<Vec<_>>()));
    assert_eq!(t.method, RankMethod::Exact);
    assert!((t.z - 6.053_689).abs() < 1e-5, "{}", t.z);
    assert!(t.p_value > 1.0e-9 && t.p_value < 1.8e-9, "{}", t.p_value);
    // 30 and 30 in four tied groups: base 10×1, 10×2, 10×3; new 10×2, 10×3, 10×4. Midranks 5.5,
    // 20.5, 40.5, 55.5; the new rank sum 1165, U = 1165 − 465 = 700; Σ(t³−t) = 17,940, so
    // σ² = 75·(61 − 17,940/3,540) = 4,194.92; z = 249.5/σ = 3.8522, p = 1.1706e-4.
    let base: Vec<u64> = [1, 2, 3].iter().flat_map(|&v| [v; 10]).collect();
    let new: Vec<u64> = [2, 3, 4].iter().flat_map(|&v| [v; 10]).collect();
    let t = rank_test(&exact(&base), &exact(&new));
    assert_eq!(t.u, 700.0);
    assert!((t.z - 3.852_201).abs() < 1e-5, "{}", t.z);
    assert!((t.p_value - 1.170_6e-4).abs() < 2e-7, "{}", t.p_value);
    assert!(t.significant && t.slower());
    // The same by bins: one value per bin, so the same test.
    let b = rank_test(
        &Sample::binned([(1, 1, 10), (2, 2, 10), (3, 3, 10)]),
        &Sample::binned([(2, 2, 10), (3, 3, 10), (4, 4, 10)]),
    );
    assert_eq!((b.method, b.u), (RankMethod::Binned, 700.0));
    assert!((b.p_value - t.p_value).abs() < 1e-12);
}

#[test]
fn the_complementary_error_function_is_within_its_stated_error() {
    for (x, want) in [(0.0, 1.0), (0.5, 0.479_500_122), (1.0, 0.157_299_207), (2.0, 0.004_677_735)] {
        assert!((erfc(x) - want).abs() < 1.5e-7, "erfc({x}) = {}", erfc(x));
    }
}

#[test]
fn quantile_bounds_come_from_binomial_ranks_and_hold_at_their_confidence() {
    // 1..=1000: p50's ranks 500 ∓ 3.09·√250 = 451.1 and 548.9, one rank wider each way.
    let s = exact(&(1..=1000).collect::<Vec<_>>());
    assert_eq!(s.percentile(50, 1, 1000), 500);
    assert_eq!(s.percentile_bounds(50, 1, 1000), (450, Some(550)));
    // Too few to bound a p99 from above (rank 1001 of 1000), or a p50 of 3 at all.
    assert_eq!(s.percentile_bounds(99, 1, 1000).1, None);
    assert_eq!(exact(&[1, 2, 3]).percentile_bounds(50, 1, 3), (0, None));
    // Draws of 400 from 0..1,000,000: the true p90 (900,000) is below the lower bound or above
    // the upper one in about 0.1% of draws each; both bounds are checked on 3,000 draws.
    let mut rng = Rng(42);
    let (mut below, mut above) = (0, 0);
    for _ in 0..3000 {
        let s = exact(&(0..400).map(|_| rng.below(1_000_000)).collect::<Vec<_>>());
        let (lo, hi) = s.percentile_bounds(90, 0, u64::MAX);
        below += u32::from(lo > 900_000);
        above += u32::from(hi.is_some_and(|h| h < 900_000));
    }
    // Expected 3 each at 99.9%; a bound that held at only 99% would miss about 30 times.
    assert!(below <= 10 && above <= 10, "{below} {above}");
}

#[test]
fn fail_on_specs_parse_relative_absolute_and_count_thresholds() {
    let parse = |s: &str| s.parse::<FailOn>().map(|g| (g.metric, g.limit));
    assert_eq!(parse("p99>+10%").unwrap(), (Metric::P99, Limit::Relative(0.1)));
    assert_eq!(parse(" p50 > +2ms ").unwrap(), (Metric::P50, Limit::Absolute(2_000_000)));
    assert_eq!(parse("max>500us").unwrap(), (Metric::Max, Limit::Absolute(500_000)));
    assert_eq!(parse("p90>+1.5µs").unwrap(), (Metric::P90, Limit::Absolute(1_500)));
    assert_eq!(parse("total>+300ns").unwrap(), (Metric::Total, Limit::Absolute(300)));
    assert_eq!(parse("total>+1s").unwrap(), (Metric::Total, Limit::Absolute(1_000_000_000)));
    assert_eq!(parse("count>+100").unwrap(), (Metric::Count, Limit::Absolute(100)));
    assert_eq!(parse("count>+5%").unwrap(), (Metric::Count, Limit::Relative(0.05)));
    assert_eq!("P99>10%".parse::<FailOn>().unwrap().to_string(), "p99>+10%");
    for (bad, why) in [
        ("p99", "no '>'"),
        ("p95>+10%", "unknown metric"),
        ("p99>-10%", "an increase"),
        ("p99>+10", "needs a unit"),
        ("p99>+10h", "unknown unit"),
        ("p99>+x%", "not a number"),
        ("p99>+1e3%", "not a number"),
        ("count>+10ms", "whole number"),
        ("count>+", "whole number"),
        ("p50>+99999999999999999999s", "too long"),
    ] {
        let e = bad.parse::<FailOn>().unwrap_err().to_string();
        assert!(e.contains(why) && e.contains(bad.trim()) && e.contains("METRIC>+AMOUNT"), "{bad}: {e}");
    }
}

const STEP: u32 = 16;
const SETUP: u32 = 17;
const TEARDOWN: u32 = 18;
const TICK: u32 = 19;

fn callsite(id: u32, name: &str, phase: Phase) -> CallsiteInfo {
    CallsiteInfo {
        id,
        category: "test".into(),
        name: name.into(),
        phase,
        arg_names: [String::new(), String::new()],
        file: "diff_tests.rs".into(),
        line: id,
        name_hash: 0,
        level: None,
        dynamic_name: false,
        flow: false,
    }
}

/// A trace file on a clock of `ns_per_tick`: a `step` complete event of each duration (in
/// ticks), on threads 1 and 2 by turns, then a `tick` instant per step; and `extra` (`setup` or
/// `teardown`) once.
fn file(ns_per_tick: f64, durations: &[u64], extra: Option<u32>) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), &header(clock(ns_per_tick))).unwrap();
    w.write_callsites(&[
        callsite(STEP, "step", Phase::Complete),
        callsite(SETUP, "setup", Phase::Complete),
        callsite(TEARDOWN, "teardown", Phase::Complete),
        callsite(TICK, "tick", Phase::Instant),
    ])
    .unwrap();
    for tid in [1u32, 2] {
        let mut records = Vec::new();
        let mut ts = 1_000;
        for &d in durations.iter().skip(tid as usize - 1).step_by(2) {
            records.push(slice(STEP, ts, d));
            records.push(crate::test_files::mark(TICK, ts + d + 5));
            ts += d + 10;
        }
        if let (Some(id), 1) = (extra, tid) {
            records.push(slice(id, ts, 77));
        }
        for (seq, chunk) in records.chunks(100).enumerate() {
            w.write_chunk(tid, seq as u64, chunk, |_, _| "").unwrap();
        }
    }
    w.finish(&Trailer::default()).unwrap()
}

fn side(bytes: &[u8]) -> DiffSide {
    DiffSide::from_reader(Reader::new(bytes).unwrap()).unwrap()
}

fn diff(base: &[u8], new: &[u8], gates: &[&str], paths: &[&str]) -> TraceDiff {
    let options = DiffOptions {
        paths: paths.iter().map(|p| p.to_string()).collect(),
        fail_on: gates.iter().map(|g| g.parse().unwrap()).collect(),
    };
    TraceDiff::new(&side(base), &side(new), &options)
}

fn row<'d>(d: &'d TraceDiff, path: &str) -> &'d DiffRow {
    d.rows.iter().find(|r| r.path == path).unwrap_or_else(|| panic!("no {path} in {:?}", d.rows))
}

/// `n` durations around `base` ticks (±5%, spread evenly, shuffled).
fn durations(n: u64, base: u64, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed);
    let mut v: Vec<u64> = (0..n).map(|i| base - base / 20 + base / 10 * i / n).collect();
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
    v
}

const GATES: [&str; 4] = ["p50>+10%", "p99>+10%", "total>+10%", "max>+20%"];

#[test]
fn a_three_times_slower_scope_regresses_on_every_duration_gate() {
    for n in [40u64, 200, 5_000] {
        let (base, new) = (durations(n, 10_000, 1), durations(n, 30_000, 2));
        let d = diff(&file(1.0, &base, None), &file(1.0, &new, None), &GATES, &[]);
        let step = row(&d, "step");
        let test = step.test.unwrap();
        assert!(test.slower(), "{n}: {test:?}");
        assert_eq!(
            test.method,
            if n * 2 <= PERMUTATION_LIMIT {
                RankMethod::Permutation
            } else if n <= 256 {
                RankMethod::Exact
            } else {
                RankMethod::Binned
            }
        );
        let c = step.change(Metric::P50).unwrap();
        assert!((c.relative().unwrap() - 2.0).abs() < 0.01, "{n}: {c:?}");
        let past: Vec<String> =
            d.regressions().iter().filter(|x| x.row == 0).map(|x| d.fail_on[x.gate].to_string()).collect();
        // The largest change first; p99 is bounded from above only past about 1,100 durations.
        assert_eq!(d.rows[0].path, "step");
        let want: &[&str] = if n >= 5000 { &GATES } else { &["p50>+10%", "total>+10%", "max>+20%"] };
        assert_eq!(past, want, "{n}");
        // The instants at the same place only count: no duration gate, no regression.
        let tick = row(&d, "tick");
        assert_eq!((tick.kind, tick.test), (DiffKind::Event(EventType::Instant), None));
        assert!(!GATES.iter().any(|g| tick.past(&g.parse().unwrap())));
    }
}

#[test]
fn the_same_durations_in_another_order_or_a_tiny_shift_do_not_regress() {
    let n = 100_000;
    let base = durations(n, 10_000, 1);
    let same = durations(n, 10_000, 99);
    let d = diff(&file(1.0, &base, None), &file(1.0, &same, None), &GATES, &[]);
    let t = row(&d, "step").test.unwrap();
    assert_eq!((t.u, t.z, t.significant), (n as f64 * n as f64 / 2.0, 0.0, false));
    assert!(t.p_value > 0.999, "{t:?}");
    assert!(d.regressions().is_empty());
    // 2% longer: significant for a rank test on 100,000 durations, and well within the gates.
    let shifted: Vec<u64> = base.iter().map(|t| t + t / 50).collect();
    let d = diff(&file(1.0, &base, None), &file(1.0, &shifted, None), &GATES, &[]);
    let step = row(&d, "step");
    assert!(step.test.unwrap().slower());
    assert!(d.regressions().is_empty(), "{:?}", d.regressions());
    // And past a gate of 1%.
    let d = diff(&file(1.0, &base, None), &file(1.0, &shifted, None), &["p50>+1%", "p99>+50ns"], &[]);
    assert_eq!(d.regressions().len(), 2);
}

#[test]
fn absolute_and_count_gates_compare_their_own_units() {
    let (base, new) = (durations(400, 10_000, 1), durations(500, 13_000, 2));
    let d = diff(
        &file(1.0, &base, None),
        &file(1.0, &new, None),
        &["p50>+2us", "p50>+4us", "count>+99", "count>+100"],
        &[],
    );
    let past: Vec<&str> =
        d.regressions().iter().filter(|x| x.row == 0).map(|x| d.fail_on[x.gate].spec.as_str()).collect();
    assert_eq!(past, ["p50>+2us", "count>+99"]);
}

#[test]
fn sides_on_different_clocks_compare_in_nanoseconds() {
    // The same nanoseconds: ticks of 1 ns against ticks of 2 ns, half as many.
    let base = durations(1000, 20_000, 1);
    let half: Vec<u64> = base.iter().map(|t| t / 2).collect();
    let d = diff(&file(1.0, &base, None), &file(2.0, &half, None), &GATES, &[]);
    let step = row(&d, "step");
    let rel = step.change(Metric::P50).unwrap().relative().unwrap();
    assert!(rel.abs() < 0.002, "{rel}");
    assert!(!step.test.unwrap().significant, "{:?}", step.test);
    assert!(d.regressions().is_empty());
}

#[test]
fn paths_on_one_side_are_new_or_gone_and_never_regress() {
    let base = durations(100, 1_000, 1);
    let d = diff(
        &file(1.0, &base, Some(SETUP)),
        &file(1.0, &base, Some(TEARDOWN)),
        &["count>+0", "total>+0%"],
        &[],
    );
    let (setup, teardown) = (row(&d, "setup"), row(&d, "teardown"));
    assert_eq!((setup.status(), teardown.status()), (RowStatus::Gone, RowStatus::New));
    assert_eq!(teardown.new.unwrap().durations.unwrap().total_ns, 77);
    assert_eq!((setup.test, teardown.test), (None, None));
    assert!(d.regressions().is_empty());
    assert_eq!(row(&d, "step").status(), RowStatus::Both);
}

#[test]
fn path_globs_keep_only_the_matching_rows() {
    let base = durations(100, 1_000, 1);
    let (a, b) = (file(1.0, &base, Some(SETUP)), file(1.0, &base, Some(TEARDOWN)));
    let paths = |globs: &[&str]| -> Vec<String> {
        diff(&a, &b, &[], globs).rows.into_iter().map(|r| r.path).collect()
    };
    assert_eq!(paths(&["st*"]), ["step"]);
    assert_eq!(paths(&["s?tup", "tick"]), ["setup", "tick"]);
    assert_eq!(paths(&["nothing"]), Vec::<String>::new());
    assert_eq!(paths(&[]).len(), 4);
}

#[test]
fn figures_agree_with_phosphor_stats() {
    for n in [3u64, 200, 3000] {
        let bytes = file(1.5, &durations(n, 40_000, 7), None);
        let stats = TraceStats::from_reader(Reader::new(bytes.as_slice()).unwrap()).unwrap();
        let s = stats.path(&["step"]).unwrap().durations.unwrap();
        let d = diff(&bytes, &bytes, &[], &[]);
        let f = row(&d, "step").base.unwrap().durations.unwrap();
        assert_eq!(
            (f.samples, f.total_ns, f.p50_ns, f.p99_ns, f.max_ns, f.exact),
            (s.samples, s.total_ns, s.p50_ns, s.p99_ns, s.max_ns, s.exact_percentiles),
            "{n}"
        );
        assert!(f.p50_ns <= f.p90_ns && f.p90_ns <= f.p99_ns, "{f:?}");
        for (b, q) in f.bounds.iter().zip([f.p50_ns, f.p90_ns, f.p99_ns]) {
            assert!(b.lower_ns <= q && b.upper_ns.is_none_or(|u| u >= q), "{n}: {b:?} {q}");
        }
    }
}

#[test]
fn a_corrupt_side_is_an_error_with_its_offset() {
    let mut bytes = file(1.0, &durations(1000, 1_000, 1), None);
    let at = bytes.len() / 2;
    bytes[at..at + 64].fill(0xff);
    let e = DiffSide::from_reader(Reader::new(bytes.as_slice()).unwrap()).unwrap_err();
    assert!(e.offset() > 0 && e.offset() <= bytes.len() as u64, "{e}");
}

#[test]
fn the_json_document_follows_its_schema() {
    let (base, new) = (durations(300, 10_000, 1), durations(300, 30_000, 2));
    let d = diff(&file(1.0, &base, Some(SETUP)), &file(1.0, &new, None), &["p50>+10%"], &[]);
    let mut out = Vec::new();
    d.write_json(&mut out, ["a.phos", "b.phos"], None).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["schema"], DIFF_SCHEMA);
    assert_eq!((v["base"]["file"].as_str(), v["new"]["events"].as_u64()), (Some("a.phos"), Some(600)));
    assert_eq!(v["regressed"], true);
    assert_eq!(v["regressions"][0]["path"], "step");
    assert_eq!(v["regressions"][0]["gate"], "p50>+10%");
    let step = &v["rows"][0];
    assert_eq!(
        (step["path"].as_str(), step["status"].as_str(), step["type"].as_str()),
        (Some("step"), Some("both"), Some("scope"))
    );
    assert_eq!(step["regressions"][0], "p50>+10%");
    assert_eq!(step["test"]["method"], "rank-binned");
    assert_eq!(step["test"]["direction"], "slower");
    assert_eq!(step["base"]["count"], 300);
    assert!(step["base"]["bounds"]["p50_ns"]["upper_ns"].as_u64().is_some());
    assert!(step["change"]["p50_ns"]["relative"].as_f64().unwrap() > 1.9);
    assert!(step["conservative_change"]["p50_ns"]["new"].as_u64().is_some());
    let setup = v["rows"].as_array().unwrap().iter().find(|r| r["path"] == "setup").unwrap();
    assert_eq!((setup["status"].as_str(), setup["new"].is_null()), (Some("gone"), true));
    let mut out = Vec::new();
    d.write_table(&mut out, ["a.phos", "b.phos"], Some(1)).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("REGRESSED  step") && text.contains("REGRESSION: step (scope) past p50>+10%"),
        "{text}"
    );
    assert!(text.contains("more rows (--top)"), "{text}");
}

#[test]
fn a_side_kept_exactly_and_a_binned_side_are_compared_by_bin() {
    // 200 durations kept exactly against 2,000 in bins, from one distribution, then 3x longer.
    let base = durations(200, 10_000, 1);
    let d = diff(&file(1.0, &base, None), &file(1.0, &durations(2000, 10_000, 2), None), &GATES, &[]);
    let t = row(&d, "step").test.unwrap();
    assert_eq!(t.method, RankMethod::Binned);
    assert!(!t.significant, "{t:?}");
    assert!(d.regressions().is_empty());
    let d = diff(&file(1.0, &base, None), &file(1.0, &durations(2000, 30_000, 2), None), &GATES, &[]);
    assert!(row(&d, "step").test.unwrap().slower());
    let past: Vec<&str> = d.regressions().iter().map(|x| d.fail_on[x.gate].spec.as_str()).collect();
    // 200 base durations cannot bound a p99 from above.
    assert_eq!(past, ["p50>+10%", "total>+10%", "max>+20%"]);
}
