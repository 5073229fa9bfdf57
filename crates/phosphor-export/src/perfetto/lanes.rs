//! Async slices laid out on reused tracks in one pass, in file order: what the export does when
//! it has no [`AsyncPlan`](super::AsyncPlan) (`plan.rs` lays them out in the fewest lanes from a
//! first pass), or past the plan. A *lane* per async slice open at once, per name, as Perfetto's
//! own SDK lays out its async tracks. Begins and ends pair by the model's one rule
//! (`phosphor_model::asyncs`), as in the plan and the statistics.
//!
//! Chunks are written per thread, so file order is not time order: a lane is reused only by a
//! slice that begins strictly after the latest timestamp the lane has held, so slices never
//! overlap on a lane whatever order the file gives them in (at equal timestamps the file's order
//! could nest one in the other). A slice whose end comes before its begin in the file gets a lane
//! no other slice has used (its begin time is not known yet). So a file whose ends come before
//! their begins (the demo's) still gets about a lane per slice: hence the plan. A begin never
//! ended (given up by a second begin of its key, or at the end) keeps its lane for ever.
//!
//! Memory: the model's entry per half waiting, up to its cap (a half past it gets a lane of its
//! own and is not remembered, so its other half gets another: drawn unclosed, but bounded, and
//! counted in `untracked`), and per lane that is free (at most the most slices of one name ever
//! open at once); each step costs a few hash lookups and a tree operation.

use std::collections::BTreeSet;

use phosphor_model::asyncs::{self, Matched, Pairing};
use rustc_hash::FxHashMap as HashMap;

/// The most halves remembered waiting at once.
pub(super) const MAX_OPEN: usize = asyncs::DEFAULT_MAX_OPEN;

/// An async slice's identity: its category and name (as `plan::class_of` keys them) and id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) struct AsyncKey {
    pub(super) category: u32,
    pub(super) name: u64,
    pub(super) id: u64,
}

/// What [`Lanes::event`] found for an async begin or end.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Placed {
    /// The lane's track uuid.
    pub(super) lane: u64,
    /// The lane is new: its descriptor must be written first.
    pub(super) new: bool,
}

/// The lanes of every name.
#[derive(Debug)]
pub(super) struct Lanes {
    /// The model's pairing; a half's payload is its lane.
    pairing: Pairing<u64>,
    /// Each (category, name) numbered, for the model's key.
    classes: HashMap<(u32, u64), u32>,
    /// Free lanes per class number, by the latest timestamp they held.
    free: HashMap<u32, BTreeSet<(u64, u64)>>,
    /// Lanes made so far.
    pub(super) made: u64,
    /// Halves given a lane without being remembered, past the model's cap.
    pub(super) untracked: u64,
}

impl Default for Lanes {
    fn default() -> Lanes {
        Lanes::with_limit(MAX_OPEN)
    }
}

impl Lanes {
    fn with_limit(limit: usize) -> Lanes {
        Lanes {
            pairing: Pairing::new(limit),
            classes: HashMap::default(),
            free: HashMap::default(),
            made: 0,
            untracked: 0,
        }
    }

    /// An async begin (`begin`) or end of `key` at `ts`; `new_uuid` makes a lane's track uuid.
    pub(super) fn event(
        &mut self,
        key: AsyncKey,
        begin: bool,
        ts: u64,
        new_uuid: impl FnOnce() -> u64,
    ) -> Placed {
        let next = self.classes.len() as u32;
        let class = *self.classes.entry((key.category, key.name)).or_insert(next);
        let k = asyncs::AsyncKey { name: class, id: key.id };
        let placed = match self.pairing.waiting(&k) {
            // Its other half is on a lane: this one closes it there.
            Some((waiting_begin, half)) if waiting_begin != begin => {
                Placed { lane: half.payload, new: false }
            }
            // A free lane of this name whose slices all came before `ts` (the one free longest,
            // if any qualifies); an end seen before its begin takes a new lane.
            _ => {
                let reuse = match self.free.get_mut(&class) {
                    Some(free) if begin => match free.first() {
                        Some(&(latest, lane)) if latest < ts => {
                            free.remove(&(latest, lane));
                            Some(lane)
                        }
                        _ => None,
                    },
                    _ => None,
                };
                match reuse {
                    Some(lane) => Placed { lane, new: false },
                    None => {
                        self.made += 1;
                        Placed { lane: new_uuid(), new: true }
                    }
                }
            }
        };
        let free = &mut self.free;
        // A lane frees once what it holds is closed: a pair drawn as one (its begin first in
        // time, ties in file order), or an end alone. A begin left open keeps it for ever.
        self.pairing.add(k, begin, ts, placed.lane, &mut |k, m| {
            let (latest, lane) = match m {
                Matched::Pair { begin, end, end_first }
                    if end.ts > begin.ts || end.ts == begin.ts && !end_first =>
                {
                    (end.ts, begin.payload)
                }
                Matched::Unbegun(end) => (end.ts, end.payload),
                _ => return,
            };
            free.entry(k.name).or_default().insert((latest, lane));
        });
        self.untracked = self.pairing.overflowed();
        placed
    }

    /// Halves waiting for their other half now.
    #[cfg(test)]
    pub(super) fn open_slices(&self) -> usize {
        self.pairing.open()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: u64) -> AsyncKey {
        AsyncKey { category: 1, name: 2, id }
    }

    #[test]
    fn slices_share_lanes_only_when_they_do_not_overlap_in_time() {
        let mut lanes = Lanes::default();
        let mut next = 100;
        let mut uuid = || {
            next += 1;
            next
        };
        // 1 [10, 20] and 2 [15, 30] overlap: two lanes.
        let a = lanes.event(key(1), true, 10, &mut uuid);
        let b = lanes.event(key(2), true, 15, &mut uuid);
        assert!(a.new && b.new && a.lane != b.lane);
        assert_eq!(lanes.event(key(1), false, 20, &mut uuid).lane, a.lane);
        // 3 begins at 25: lane a (free since 20) is reused.
        let c = lanes.event(key(3), true, 25, &mut uuid);
        assert_eq!((c.lane, c.new), (a.lane, false));
        lanes.event(key(2), false, 30, &mut uuid);
        lanes.event(key(3), false, 40, &mut uuid);
        // 4 begins at 35 (written late, from another thread's chunk): lane b (free since 30) fits,
        // lane a (busy until 40) does not.
        let d = lanes.event(key(4), true, 35, &mut uuid);
        assert_eq!(d.lane, b.lane);
        // 5 begins at 5, before every free lane's last slice: a new lane.
        let e = lanes.event(key(5), true, 5, &mut uuid);
        assert!(e.new);
        // An end before its begin in the file: a new lane, which its begin then closes.
        let f = lanes.event(key(6), false, 50, &mut uuid);
        assert!(f.new);
        assert_eq!(lanes.event(key(6), true, 45, &mut uuid).lane, f.lane);
        assert_eq!(lanes.made, 4);
    }

    #[test]
    fn slices_that_begin_when_a_lane_frees_take_another() {
        let mut lanes = Lanes::default();
        let mut next = 0;
        let mut uuid = || {
            next += 1;
            next
        };
        let a = lanes.event(key(1), true, 10, &mut uuid);
        lanes.event(key(1), false, 20, &mut uuid);
        // Begins at 20, as 1 ended: sorted by time, the file's order could nest it in 1.
        let b = lanes.event(key(2), true, 20, &mut uuid);
        assert_ne!(a.lane, b.lane);
    }

    #[test]
    fn past_the_limit_open_slices_are_not_remembered_but_still_get_lanes_apart() {
        let mut lanes = Lanes::with_limit(2);
        let mut next = 0;
        let mut uuid = || {
            next += 1;
            next
        };
        let placed: Vec<Placed> = (0..4).map(|i| lanes.event(key(i), true, 10 + i, &mut uuid)).collect();
        assert_eq!(lanes.open_slices(), 2, "memory stays at the limit");
        assert_eq!(lanes.untracked, 2);
        assert!(placed.iter().all(|p| p.new), "each on a lane of its own");
        // The end of a slice not remembered: a lane of its own too, never shared.
        let end = lanes.event(key(3), false, 50, &mut uuid);
        assert!(end.new && placed.iter().all(|p| p.lane != end.lane));
        assert_eq!(lanes.untracked, 3);
    }
}
