//! Trace files for the agreement tests: threads of scopes (begin/end pairs and complete events),
//! lock waits and holds and instants, written in the order the recorder writes them (a begin at its
//! start, a complete event or a lock at its end, after what it encloses), with many equal
//! timestamps: the crafted cases by name, and random trees from a seed. Async slices too (begins
//! and ends of two names, on any threads): the crafted async cases.

use phosphor::format::file::{CallsiteInfo, ClockInfo, ClockKind, Header, Trailer, Writer};
use phosphor::format::{Meta, Phase, Record};

/// The scope names (each with a begin, an end and a complete callsite), then the lock's and the
/// instant's.
const SCOPES: [&str; 4] = ["a", "b", "c", "d"];
const LOCK: &str = "q";
const MARK: &str = "mark";
/// The async slices' names (each with a begin and an end callsite).
const ASYNCS: [&str; 2] = ["job", "req"];
const FIRST_ID: u32 = 16;

/// A trace's threads: each tid and its events in record order.
pub type Threads = Vec<(u32, Vec<Ev>)>;

/// One event as recorded.
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    Begin(&'static str, u64),
    End(&'static str, u64),
    /// Name, start, duration (ticks).
    Complete(&'static str, u64, u64),
    Wait(u64, u64),
    Held(u64, u64),
    Instant(u64),
    /// Name, time, async id.
    AsyncBegin(&'static str, u64, u64),
    AsyncEnd(&'static str, u64, u64),
}

fn async_index(name: &str) -> u32 {
    ASYNCS.iter().position(|&s| s == name).unwrap_or_else(|| panic!("no async {name:?}")) as u32
}

fn scope_index(name: &str) -> u32 {
    SCOPES.iter().position(|&s| s == name).unwrap_or_else(|| panic!("no scope {name:?}")) as u32
}

impl Ev {
    fn record(self) -> Record {
        let none = Meta(0);
        let with_duration = Meta::new(1, phosphor::format::ArgType::None, phosphor::format::ArgType::None);
        let base = |name| FIRST_ID + 3 * scope_index(name);
        let after_scopes = FIRST_ID + 3 * SCOPES.len() as u32;
        match self {
            Ev::Begin(n, ts) => Record::new(ts, base(n), none, [0, 0]),
            Ev::End(n, ts) => Record::new(ts, base(n) + 1, none, [0, 0]),
            Ev::Complete(n, ts, d) => Record::new(ts, base(n) + 2, with_duration, [d, 0]),
            Ev::Wait(ts, d) => Record::new(ts, after_scopes, with_duration, [d, 0]),
            Ev::Held(ts, d) => Record::new(ts, after_scopes + 1, with_duration, [d, 0]),
            Ev::Instant(ts) => Record::new(ts, after_scopes + 2, none, [0, 0]),
            // The async id is the record's first word, flagged by one argument word.
            Ev::AsyncBegin(n, ts, id) => {
                Record::new(ts, after_scopes + 3 + 2 * async_index(n), with_duration, [id, 0])
            }
            Ev::AsyncEnd(n, ts, id) => {
                Record::new(ts, after_scopes + 4 + 2 * async_index(n), with_duration, [id, 0])
            }
        }
    }
}

fn callsites() -> Vec<CallsiteInfo<String>> {
    let site = |id, name: String, phase| CallsiteInfo {
        id,
        category: "craft".into(),
        name,
        phase,
        arg_names: Default::default(),
        file: "agreement.rs".into(),
        line: id,
        name_hash: u64::from(id),
        level: None,
        dynamic_name: false,
        flow: false,
    };
    let mut sites = Vec::new();
    for (i, s) in SCOPES.iter().enumerate() {
        let id = FIRST_ID + 3 * i as u32;
        for (k, phase) in [Phase::Begin, Phase::End, Phase::Complete].into_iter().enumerate() {
            sites.push(site(id + k as u32, (*s).to_owned(), phase));
        }
    }
    let id = FIRST_ID + 3 * SCOPES.len() as u32;
    // As the runtime names a lock's two callsites.
    sites.push(site(id, format!("{LOCK}.wait"), Phase::LockWait));
    sites.push(site(id + 1, format!("{LOCK}.held"), Phase::LockHeld));
    sites.push(site(id + 2, MARK.to_owned(), Phase::Instant));
    for (i, a) in ASYNCS.iter().enumerate() {
        let id = id + 3 + 2 * i as u32;
        sites.push(site(id, (*a).to_owned(), Phase::AsyncBegin));
        sites.push(site(id + 1, (*a).to_owned(), Phase::AsyncEnd));
    }
    sites
}

/// A clock of `ns_per_tick` from origin 0.
pub fn clock(ns_per_tick: f64) -> ClockInfo {
    ClockInfo {
        kind: if ns_per_tick == 1.0 { ClockKind::Monotonic } else { ClockKind::Tsc },
        ns_per_tick,
        origin_ticks: 0,
        origin_monotonic_ns: 0,
        origin_wall_ns: 1_700_000_000_000_000_000,
        fallback_reason: None,
    }
}

/// The file of `threads` (tid, events in record order).
pub fn file(clock: ClockInfo, threads: &[(u32, Vec<Ev>)]) -> Vec<u8> {
    let header = Header { clock, pid: 7, process_name: "craft".into(), boot_id: None, host_name: None };
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    w.write_callsites(&callsites()).unwrap();
    let names: Vec<(u32, String)> = threads.iter().map(|(tid, _)| (*tid, format!("t{tid}"))).collect();
    w.write_thread_names(names.iter().map(|(t, n)| (*t, n.as_str()))).unwrap();
    for (tid, events) in threads {
        let records: Vec<Record> = events.iter().map(|e| e.record()).collect();
        for (seq, chunk) in records.chunks(127).enumerate() {
            w.write_chunk(*tid, seq as u64, chunk, |_, _| "").unwrap();
        }
    }
    w.finish(&Trailer::default()).unwrap()
}

/// The crafted cases: a name and a thread's events each.
pub fn cases() -> Vec<(&'static str, Vec<Ev>)> {
    use Ev::*;
    vec![
        // A parent and its first child start in the same nanosecond.
        (
            "parent and first child begin together",
            vec![Begin("a", 10), Begin("b", 10), End("b", 20), End("a", 30)],
        ),
        (
            "complete parent and first child start together",
            vec![Complete("b", 10, 10), Complete("a", 10, 20)],
        ),
        (
            "begin parent, complete first child at its start",
            vec![Begin("a", 10), Complete("b", 10, 5), End("a", 30)],
        ),
        (
            "complete parent, begin/end first child at its start",
            vec![Begin("b", 10), End("b", 15), Complete("a", 10, 20)],
        ),
        // Chains of three and four scopes starting at once.
        (
            "four begins at one nanosecond",
            vec![
                Begin("a", 10),
                Begin("b", 10),
                Begin("c", 10),
                Begin("d", 10),
                End("d", 15),
                End("c", 16),
                End("b", 17),
                End("a", 18),
            ],
        ),
        (
            "four complete events starting at one nanosecond",
            vec![Complete("d", 10, 5), Complete("c", 10, 6), Complete("b", 10, 7), Complete("a", 10, 8)],
        ),
        (
            "a chain of begins and complete events starting at one nanosecond",
            vec![
                Begin("a", 10),
                Begin("b", 10),
                Complete("c", 10, 5),
                End("b", 16),
                Complete("d", 16, 0),
                End("a", 18),
            ],
        ),
        // Starting and ending together: the parent is the one recorded around the child.
        (
            "complete parent and child with the same start and end",
            vec![Complete("b", 10, 10), Complete("a", 10, 10)],
        ),
        (
            "begin parent and child with the same start and end",
            vec![Begin("a", 10), Begin("b", 10), End("b", 20), End("a", 20)],
        ),
        (
            "three of one name nested with the same start and end",
            vec![Complete("a", 10, 10), Complete("a", 10, 10), Complete("a", 10, 10)],
        ),
        // Zero-length children at the parent's start and end.
        (
            "zero-length children at the start and the end",
            vec![Begin("a", 10), Complete("b", 10, 0), Complete("c", 20, 0), End("a", 20)],
        ),
        (
            "zero-length complete parent and child",
            vec![Complete("b", 10, 0), Complete("a", 10, 0), Complete("c", 10, 0)],
        ),
        (
            "zero-length begin/end children at the start and the end",
            vec![Begin("a", 10), Begin("b", 10), End("b", 10), Begin("c", 20), End("c", 20), End("a", 20)],
        ),
        ("a child ending with its parent", vec![Complete("b", 15, 5), Complete("a", 10, 10)]),
        // Siblings touching.
        (
            "complete siblings touching",
            vec![
                Begin("a", 0),
                Complete("b", 10, 10),
                Complete("c", 20, 10),
                Complete("b", 30, 10),
                End("a", 40),
            ],
        ),
        (
            "begin/end siblings touching",
            vec![Begin("a", 0), Begin("b", 10), End("b", 20), Begin("c", 20), End("c", 30), End("a", 30)],
        ),
        (
            "top-level siblings touching",
            vec![Complete("a", 0, 10), Begin("b", 10), End("b", 20), Complete("a", 20, 5)],
        ),
        // Locks: the wait ends where the hold begins; inside a scope, at its start, at its end.
        ("a lock's wait then hold", vec![Begin("a", 0), Wait(5, 5), Held(10, 10), End("a", 20)]),
        ("a lock at a scope's start", vec![Begin("a", 10), Wait(10, 0), Held(10, 5), End("a", 20)]),
        ("a lock ending with its scope", vec![Wait(10, 2), Held(12, 8), Complete("a", 10, 10)]),
        ("a scope inside a lock's hold", vec![Wait(0, 10), Complete("b", 10, 5), Held(10, 10)]),
        // Begin/end pairs mixed with complete events, and instants at the ties.
        (
            "mixed pairs, complete events and instants at equal times",
            vec![
                Begin("a", 0),
                Instant(0),
                Begin("b", 0),
                Complete("c", 0, 0),
                Instant(5),
                Complete("d", 5, 5),
                End("b", 10),
                Begin("c", 10),
                Instant(10),
                End("c", 10),
                Complete("b", 10, 10),
                End("a", 20),
            ],
        ),
    ]
}

/// The crafted async cases: threads whose chunks are written in the order listed (so an end on an
/// earlier thread is read before its begin on a later one), each with a scope, so that every
/// output has a thread slice too.
pub fn async_cases() -> Vec<(&'static str, Threads)> {
    use Ev::*;
    let scope = || Complete("a", 0, 5);
    vec![
        (
            "async ends read before their begins",
            vec![
                (1, vec![scope(), AsyncEnd("job", 30, 1), AsyncEnd("job", 45, 2), AsyncEnd("req", 60, 1)]),
                (2, vec![AsyncBegin("job", 10, 1), AsyncBegin("job", 20, 2), AsyncBegin("req", 40, 1)]),
            ],
        ),
        (
            "a duplicate async begin leaves the first unended",
            vec![(
                1,
                vec![scope(), AsyncBegin("job", 10, 1), AsyncBegin("job", 20, 1), AsyncEnd("job", 30, 1)],
            )],
        ),
        (
            "a duplicate async begin on another thread, and an id reused",
            vec![
                (
                    1,
                    vec![scope(), AsyncBegin("job", 10, 7), AsyncEnd("job", 15, 7), AsyncBegin("job", 40, 7)],
                ),
                (2, vec![AsyncBegin("job", 50, 7), AsyncEnd("job", 60, 7)]),
            ],
        ),
        (
            "async slices at equal timestamps, begins read first",
            vec![(
                1,
                vec![
                    scope(),
                    AsyncBegin("job", 10, 1),
                    AsyncEnd("job", 10, 1),
                    AsyncBegin("job", 10, 2),
                    AsyncBegin("req", 10, 2),
                    AsyncEnd("job", 20, 2),
                    AsyncBegin("job", 20, 3),
                    AsyncEnd("req", 20, 2),
                    AsyncEnd("job", 30, 3),
                ],
            )],
        ),
        (
            "an async slice never ended and an end never begun",
            vec![
                (1, vec![scope(), AsyncBegin("req", 5, 9), AsyncBegin("job", 8, 1), AsyncEnd("job", 12, 1)]),
                (2, vec![AsyncEnd("req", 50, 8), AsyncEnd("job", 70, 4)]),
            ],
        ),
        (
            "a duplicate async end: the first is never begun",
            vec![
                (1, vec![scope(), AsyncEnd("job", 30, 1)]),
                (2, vec![AsyncEnd("job", 40, 1)]),
                (3, vec![AsyncBegin("job", 35, 1)]),
            ],
        ),
    ]
}

/// A small deterministic generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// Random slices inside [start, end] at `depth`, appended to `out` in record order: children
/// on a coarse grid (so that starts and ends tie often, zero lengths included), each a begin/end
/// pair, a complete event, a lock's wait and hold, or an instant.
pub fn tree(rng: &mut Rng, start: u64, end: u64, depth: u32, out: &mut Vec<Ev>) {
    if depth == 0 {
        return;
    }
    let children = rng.below(4);
    // Sorted cut points: child k spans cuts[2k]..cuts[2k+1].
    let mut cuts: Vec<u64> = (0..2 * children).map(|_| start + rng.below(end - start + 1)).collect();
    cuts.sort_unstable();
    for k in 0..children as usize {
        let (s, e) = (cuts[2 * k], cuts[2 * k + 1]);
        let name = SCOPES[rng.below(SCOPES.len() as u64) as usize];
        match rng.below(10) {
            0..=3 => {
                out.push(Ev::Begin(name, s));
                tree(rng, s, e, depth - 1, out);
                out.push(Ev::End(name, e));
            }
            4..=7 => {
                tree(rng, s, e, depth - 1, out);
                out.push(Ev::Complete(name, s, e - s));
            }
            8 => {
                let mid = s + rng.below(e - s + 1);
                out.push(Ev::Wait(s, mid - s));
                out.push(Ev::Held(mid, e - mid));
            }
            _ => out.push(Ev::Instant(s)),
        }
    }
}

/// A random trace of one to three threads from `seed`.
pub fn random(seed: u64) -> Threads {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let threads = 1 + rng.below(3) as u32;
    (0..threads)
        .map(|t| {
            let mut events = Vec::new();
            // A few top-level stretches, each a tree on a grid of 40 ticks.
            for r in 0..1 + rng.below(3) {
                tree(&mut rng, r * 40, r * 40 + 40, 4, &mut events);
            }
            (100 + t, events)
        })
        .collect()
}
