//! Async slices laid out on reused tracks in one pass, in file order: what the export does when
//! it has no [`AsyncPlan`](super::AsyncPlan) (`plan.rs` lays them out in the fewest lanes from a
//! first pass), or past the plan. A *lane* per async slice open at once, per (category, name), as
//! Perfetto's own SDK lays out its async tracks.
//!
//! Chunks are written per thread, so file order is not time order: a lane is reused only by a
//! slice that begins strictly after the latest timestamp the lane has held, so slices never
//! overlap on a lane whatever order the file gives them in (at equal timestamps the file's order
//! could nest one in the other). A slice whose end comes before its begin in the file gets a lane
//! no other slice has used (its begin time is not known yet). So a file whose ends come before
//! their begins (the demo's) still gets about a lane per slice: hence the plan.
//!
//! Memory: an entry per open slice, up to [`MAX_OPEN`] (a slice opened past it gets a lane of its
//! own and is not remembered, so its other end gets another: drawn unclosed, but bounded, and
//! counted in `untracked`), and per lane that is free (at most the most slices of one name ever
//! open at once); each step costs one hash lookup and a tree operation.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

/// The most slices remembered open at once.
pub(super) const MAX_OPEN: usize = 1 << 20;

/// An async slice's identity: category and name (as `plan::class_of` keys them) and id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) struct AsyncKey {
    pub(super) category: u32,
    pub(super) name: u64,
    pub(super) id: u64,
}

/// An open async slice (begins minus ends not 0): its lane, and what it has held.
#[derive(Debug)]
struct Open {
    lane: u64,
    /// Begins minus ends seen so far.
    open: i64,
    /// The latest timestamp of its events.
    latest: u64,
}

/// What [`Lanes::event`] found for an async begin or end.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Placed {
    /// The lane's track uuid.
    pub(super) lane: u64,
    /// The lane is new: its descriptor must be written first.
    pub(super) new: bool,
}

/// The lanes of every (category, name).
#[derive(Debug)]
pub(super) struct Lanes {
    open: HashMap<AsyncKey, Open>,
    /// Free lanes per (category, name), by the latest timestamp they held.
    free: HashMap<(u32, u64), BTreeSet<(u64, u64)>>,
    /// Lanes made so far.
    pub(super) made: u64,
    /// Slices given a lane without being remembered, past `limit`.
    pub(super) untracked: u64,
    /// The most slices remembered open at once: [`MAX_OPEN`].
    limit: usize,
}

impl Default for Lanes {
    fn default() -> Lanes {
        Lanes { open: HashMap::default(), free: HashMap::default(), made: 0, untracked: 0, limit: MAX_OPEN }
    }
}

impl Lanes {
    /// An async begin (`begin`) or end of `key` at `ts`; `new_uuid` makes a lane's track uuid.
    pub(super) fn event(
        &mut self,
        key: AsyncKey,
        begin: bool,
        ts: u64,
        new_uuid: impl FnOnce() -> u64,
    ) -> Placed {
        let step = if begin { 1 } else { -1 };
        if let Some(o) = self.open.get_mut(&key) {
            o.open += step;
            o.latest = o.latest.max(ts);
            let lane = o.lane;
            if o.open == 0 {
                let o = self.open.remove(&key).expect("just found");
                self.free.entry((key.category, key.name)).or_default().insert((o.latest, lane));
            }
            return Placed { lane, new: false };
        }
        // A free lane of this name whose slices all came before `ts` (the one free longest, if
        // any qualifies); an end seen before its begin takes a new lane.
        let reuse = match self.free.get_mut(&(key.category, key.name)) {
            Some(free) if begin => match free.first() {
                Some(&(latest, lane)) if latest < ts => {
                    free.remove(&(latest, lane));
                    Some(lane)
                }
                _ => None,
            },
            _ => None,
        };
        let (lane, new) = match reuse {
            Some(lane) => (lane, false),
            None => {
                self.made += 1;
                (new_uuid(), true)
            }
        };
        if self.open.len() >= self.limit {
            // Not remembered: the lane is used by this event only (and never freed).
            self.untracked += 1;
            return Placed { lane, new };
        }
        self.open.insert(key, Open { lane, open: step, latest: ts });
        Placed { lane, new }
    }

    /// Async slices open now.
    #[cfg(test)]
    pub(super) fn open_slices(&self) -> usize {
        self.open.len()
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
        let mut lanes = Lanes { limit: 2, ..Lanes::default() };
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
