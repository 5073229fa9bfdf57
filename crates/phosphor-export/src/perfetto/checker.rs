//! The tests' bridge to `scripts/check_pftrace.py`, which decodes a `.pftrace` with the code
//! generated from the official `perfetto_trace.proto` and checks it as trace processor reads it;
//! and a test that the checker does reject what it should, on traces broken by hand.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value as Json;

use super::packets::SEQUENCE_ID;
use super::pb::Enc;
use super::proto::*;

const CHECKER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/check_pftrace.py");
const PYTHON_ENV: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/python-env.sh");

/// The interpreter with the official Perfetto protos: `$PHOSPHOR_PYTHON`, else the one
/// `scripts/python-env.sh` sets up (once per test process). No Python is a failure, not a skip.
pub(super) fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        if let Ok(p) = std::env::var("PHOSPHOR_PYTHON") {
            return p;
        }
        let out =
            Command::new("bash").arg(PYTHON_ENV).stderr(Stdio::inherit()).output().unwrap_or_else(|e| {
                panic!(
                    "cannot run {PYTHON_ENV} to set up the tests' Python (set PHOSPHOR_PYTHON instead): {e}"
                )
            });
        assert!(
            out.status.success(),
            "{PYTHON_ENV} failed ({}); the Perfetto tests need its Python environment \
             (or PHOSPHOR_PYTHON pointing at a Python with `perfetto` and `protobuf`)",
            out.status
        );
        let stdout = String::from_utf8(out.stdout).expect("python-env.sh prints a path");
        stdout
            .lines()
            .last()
            .unwrap_or_else(|| panic!("{PYTHON_ENV} printed no interpreter path"))
            .trim()
            .to_owned()
    })
}

/// Runs the checker with `args` and `stdin`; returns its stdout (whatever its exit status: the
/// results say what was wrong).
pub(super) fn run_checker(args: &[&str], stdin: &[u8]) -> String {
    let mut child = Command::new(python())
        .arg(CHECKER)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {} {CHECKER}: {e}", python()));
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let feeder = std::thread::spawn(move || input.write_all(&stdin));
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some_and(|c| c <= 1), "the checker crashed ({}):\n{stderr}", out.status);
    String::from_utf8(out.stdout).unwrap()
}

/// The checker's results for several traces (one Python start).
pub(super) fn check_all(traces: &[Vec<u8>]) -> Vec<Json> {
    let mut stdin = Vec::new();
    for t in traces {
        stdin.extend_from_slice(&(t.len() as u64).to_le_bytes());
        stdin.extend_from_slice(t);
    }
    let out = run_checker(&["--batch"], &stdin);
    let results: Vec<Json> =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("bad checker output ({e}): {out}"));
    assert_eq!(results.len(), traces.len());
    results
}

/// The checker's result for one trace, which must be valid.
pub(super) fn check(trace: &[u8]) -> Json {
    let result = check_all(&[trace.to_vec()]).pop().unwrap();
    assert_eq!(result["ok"], true, "the official schema check failed: {:#}", result["errors"]);
    result
}

// ---- Reading the checker's results ----

/// The tracks the checker found, by kind.
pub(super) fn tracks<'a>(doc: &'a Json, kind: &str) -> Vec<&'a Json> {
    doc["tracks"].as_array().unwrap().iter().filter(|t| t["kind"] == kind).collect()
}

pub(super) fn thread(doc: &Json, tid: u64) -> &Json {
    tracks(doc, "thread").into_iter().find(|t| t["tid"] == tid).unwrap_or_else(|| panic!("no thread {tid}"))
}

pub(super) fn named<'a>(doc: &'a Json, kind: &str, name: &str) -> Vec<&'a Json> {
    tracks(doc, kind).into_iter().filter(|t| t["name"] == name).collect()
}

/// A track's slices as `(name, ts, dur, depth)`; `dur` is `None` for a slice left open.
pub(super) fn slices(track: &Json) -> Vec<(String, u64, Option<u64>, u64)> {
    track["slices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_owned(),
                s["ts"].as_u64().unwrap(),
                s["dur"].as_u64(),
                s["depth"].as_u64().unwrap(),
            )
        })
        .collect()
}

pub(super) fn slice<'a>(track: &'a Json, name: &str) -> &'a Json {
    track["slices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no slice {name}"))
}

pub(super) fn s(name: &str, ts: u64, dur: Option<u64>, depth: u64) -> (String, u64, Option<u64>, u64) {
    (name.to_owned(), ts, dur, depth)
}

// ---- The checker itself ----

/// A packet on sequence 1, built by `f`.
fn packet(f: impl FnOnce(&mut Enc)) -> Vec<u8> {
    let mut p = Enc::default();
    p.uint(PACKET_TRUSTED_SEQUENCE_ID, SEQUENCE_ID);
    f(&mut p);
    p.as_slice().to_vec()
}

fn trace_of(packets: &[Vec<u8>]) -> Vec<u8> {
    let mut t = Enc::default();
    for p in packets {
        t.bytes(TRACE_PACKET, p);
    }
    t.as_slice().to_vec()
}

fn message(p: &mut Enc, field: u32, f: impl FnOnce(&mut Enc)) {
    let m = p.begin(field);
    f(p);
    p.end(m);
}

/// A valid trace, made by hand: the clock, a process and a thread, and an instant named by an
/// interned iid. Each `(index, packet)` of `replace` takes the place of a packet.
fn handmade(replace: &[(usize, Vec<u8>)]) -> Vec<u8> {
    let mut packets = vec![
        packet(|p| {
            p.uint(PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
            message(p, PACKET_DEFAULTS, |p| p.uint(DEFAULTS_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_MONOTONIC));
            snapshot(p, &[]);
        }),
        packet(|p| {
            message(p, PACKET_TRACK_DESCRIPTOR, |p| {
                p.uint(TRACK_UUID, 1);
                message(p, TRACK_PROCESS, |p| p.int(PROCESS_PID, 7));
            })
        }),
        packet(|p| {
            message(p, PACKET_TRACK_DESCRIPTOR, |p| {
                p.uint(TRACK_UUID, 2);
                message(p, TRACK_THREAD, |p| {
                    p.int(THREAD_PID, 7);
                    p.int(THREAD_TID, 8);
                });
            })
        }),
        instant(2, SEQ_NEEDS_INCREMENTAL_STATE, |_| {}),
    ];
    for (i, p) in replace {
        packets[*i] = p.clone();
    }
    trace_of(&packets)
}

/// A clock snapshot: `CLOCK_MONOTONIC` at 0 and `more` (clock id, reading, incremental), with
/// the primary trace clock.
fn snapshot(p: &mut Enc, more: &[(u64, u64, bool)]) {
    message(p, PACKET_CLOCK_SNAPSHOT, |p| {
        for &(id, ts, incremental) in [(BUILTIN_CLOCK_MONOTONIC, 0, false)].iter().chain(more) {
            message(p, SNAPSHOT_CLOCKS, |p| {
                p.uint(CLOCK_ID, id);
                p.uint(CLOCK_TIMESTAMP, ts);
                if incremental {
                    p.boolean(CLOCK_IS_INCREMENTAL, true);
                }
            });
        }
        p.uint(SNAPSHOT_PRIMARY_TRACE_CLOCK, BUILTIN_CLOCK_MONOTONIC);
    });
}

#[test]
fn the_checker_adds_up_incremental_timestamps_from_the_snapshot_and_converts_them_to_the_primary_clock() {
    // Clock 64 reads 1000 when CLOCK_MONOTONIC reads 0; clock 65 is absolute, at 7 then.
    let clocks = [(64, 1000, true), (65, 7, false)];
    let at = |ts: u64, clock: Option<u64>| {
        packet(|p| {
            p.uint(PACKET_TIMESTAMP, ts);
            if let Some(c) = clock {
                p.uint(PACKET_TIMESTAMP_CLOCK_ID, c);
            }
            message(p, PACKET_TRACK_EVENT, |p| {
                p.uint(EVENT_TYPE, TYPE_INSTANT);
                p.uint(EVENT_TRACK_UUID, 2);
                p.uint(EVENT_NAME_IID, 1);
            });
        })
    };
    let mut trace = handmade(&[(
        0,
        packet(|p| {
            p.uint(PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
            message(p, PACKET_DEFAULTS, |p| p.uint(DEFAULTS_TIMESTAMP_CLOCK_ID, 64));
            snapshot(p, &clocks);
        }),
    )]);
    // `handmade`'s own instant is at +10 on clock 64; then +5, an absolute 4 in CLOCK_MONOTONIC
    // (which leaves clock 64 alone), +1, and 9 on clock 65.
    for (ts, clock) in [(5, None), (4, Some(BUILTIN_CLOCK_MONOTONIC)), (1, None), (9, Some(65))] {
        trace.extend(trace_of(&[at(ts, clock)]));
    }
    let doc = check(&trace);
    let times: Vec<u64> =
        thread(&doc, 8)["slices"].as_array().unwrap().iter().map(|s| s["ts"].as_u64().unwrap()).collect();
    // In CLOCK_MONOTONIC: 1000 + 10 and + 5 on clock 64 are 10 and 15, then 4 as written, 1016
    // is 16, and 9 on clock 65 is 2; sorted by time.
    let want = vec![2, 4, 10, 15, 16];
    assert_eq!(times, want);
}

/// An instant named "x" (iid 1, interned here) on `track`; `extra` adds to the track event.
fn instant(track: u64, flags: u64, extra: impl FnOnce(&mut Enc)) -> Vec<u8> {
    packet(|p| {
        p.uint(PACKET_TIMESTAMP, 10);
        p.uint(PACKET_SEQUENCE_FLAGS, flags);
        message(p, PACKET_TRACK_EVENT, |p| {
            p.uint(EVENT_TYPE, TYPE_INSTANT);
            p.uint(EVENT_TRACK_UUID, track);
            p.uint(EVENT_NAME_IID, 1);
            extra(p);
        });
        message(p, PACKET_INTERNED_DATA, |p| {
            message(p, INTERNED_EVENT_NAMES, |p| {
                p.uint(INTERNED_IID, 1);
                p.bytes(INTERNED_NAME, b"x");
            })
        });
    })
}

#[test]
fn the_checker_rejects_what_the_schema_or_trace_processor_would_not_accept() {
    let no_sequence = {
        let mut p = Enc::default();
        message(&mut p, PACKET_TRACK_DESCRIPTOR, |p| p.uint(TRACK_UUID, 9));
        p.as_slice().to_vec()
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("", handmade(&[])),
        ("unknown field 999", handmade(&[(1, packet(|p| p.uint(999, 1)))])),
        (
            "trace.packet[3].track_event.debug_annotations[0]: unknown field 99",
            handmade(&[(3, instant(2, SEQ_NEEDS_INCREMENTAL_STATE, |p| message(p, 4, |p| p.uint(99, 1))))]),
        ),
        ("packet 1: no trusted_packet_sequence_id", handmade(&[(1, no_sequence)])),
        // trusted_packet_sequence_id = 1 as the two-byte varint 0x81 0x00.
        ("re-serialised size", handmade(&[(1, vec![0x50, 0x81, 0x00])])),
        (
            "packet 3: uses interned data before the sequence was cleared",
            handmade(&[(0, packet(|p| snapshot(p, &[]))), (3, instant(2, 0, |_| {}))]),
        ),
        (
            "timestamp in sequence clock 64, which no ClockSnapshot of this sequence defines",
            handmade(&[(3, instant(2, 0, |_| {}).into_iter().chain([0xd0, 0x03, 64]).collect())]),
        ),
        (
            "track_uuid 5 has no TrackDescriptor",
            handmade(&[(3, instant(5, SEQ_NEEDS_INCREMENTAL_STATE, |_| {}))]),
        ),
        (
            "category iid 4 is not interned",
            handmade(&[(3, instant(2, SEQ_NEEDS_INCREMENTAL_STATE, |p| p.uint(EVENT_CATEGORY_IIDS, 4)))]),
        ),
        (
            "timestamp in clock 6",
            handmade(&[(
                3,
                instant(2, SEQ_NEEDS_INCREMENTAL_STATE, |_| {}).into_iter().chain([0xd0, 0x03, 6]).collect(),
            )]),
        ),
        (
            "counter event on thread track",
            handmade(&[(
                3,
                packet(|p| {
                    p.uint(PACKET_TIMESTAMP, 10);
                    message(p, PACKET_TRACK_EVENT, |p| {
                        p.uint(EVENT_TYPE, TYPE_COUNTER);
                        p.uint(EVENT_TRACK_UUID, 2);
                        p.int(EVENT_COUNTER_VALUE, 1);
                    })
                }),
            )]),
        ),
        ("iid 1 redefined from 'x' to 'y'", {
            let mut t = handmade(&[]);
            t.extend(trace_of(&[packet(|p| {
                message(p, PACKET_INTERNED_DATA, |p| {
                    message(p, INTERNED_EVENT_NAMES, |p| {
                        p.uint(INTERNED_IID, 1);
                        p.bytes(INTERNED_NAME, b"y");
                    })
                })
            })]));
            t
        }),
        (
            "the first packet is not a ClockSnapshot",
            handmade(&[(0, packet(|p| p.uint(PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED)))]),
        ),
    ];
    let results = check_all(&cases.iter().map(|(_, t)| t.clone()).collect::<Vec<_>>());
    for ((want, _), got) in cases.iter().zip(&results) {
        if want.is_empty() {
            assert_eq!(got["ok"], true, "{got:#}");
            continue;
        }
        assert_eq!(got["ok"], false, "{want}: {got:#}");
        let errors = got["errors"].as_array().unwrap();
        assert!(errors.iter().any(|e| e.as_str().unwrap().contains(want)), "{want}: {errors:#?}");
    }
}
