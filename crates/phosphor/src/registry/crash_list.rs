//! The callsites a fatal-signal handler may read: index `i` holds callsite id
//! `FIRST_CALLSITE_ID + i`, as the registry does, but in a fixed array of atomics that needs no
//! lock and never moves, so the crash dump (`recorder::dump_on_crash`) and the write path's cold
//! re-check can find a callsite by id without the registry lock. Filled by the registry as it
//! registers (`callsite.rs`).

use std::sync::atomic::Ordering;

use phosphor_format::FIRST_CALLSITE_ID;

use crate::registry::callsite::Callsite;

/// The most callsites the list holds; those registered past it are missing from crash dumps.
pub(crate) const CRASH_LIST_LEN: usize = 1 << 17;
static CRASH_LIST: [std::sync::atomic::AtomicPtr<Callsite>; CRASH_LIST_LEN] =
    [const { std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()) }; CRASH_LIST_LEN];
static CRASH_LIST_COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Publishes `cs` as the callsite of index `index` (id `FIRST_CALLSITE_ID + index`).
pub(crate) fn crash_list_push(index: usize, cs: &'static Callsite) {
    if index < CRASH_LIST_LEN {
        // Relaxed: published by the Release store of the count below.
        CRASH_LIST[index].store(std::ptr::from_ref(cs).cast_mut(), Ordering::Relaxed);
        // Release: a reader that acquires the count sees every pointer below it.
        CRASH_LIST_COUNT.store(index + 1, Ordering::Release);
    }
}

/// The callsites registered so far with their ids, for a signal handler: no lock, no allocation.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the crash dump's (Linux only)
pub(crate) fn crash_list() -> impl Iterator<Item = (u32, &'static Callsite)> {
    // Acquire: pairs with `crash_list_push`.
    let n = CRASH_LIST_COUNT.load(Ordering::Acquire);
    CRASH_LIST[..n].iter().enumerate().filter_map(|(i, p)| {
        // Relaxed: ordered by the Acquire load of the count. SAFETY: every pointer below the
        // count was stored from a `&'static Callsite` before the count was published.
        let cs = unsafe { p.load(Ordering::Relaxed).as_ref() }?;
        Some((FIRST_CALLSITE_ID + i as u32, cs))
    })
}

/// The callsite whose id is `id`, if it is registered and within the crash list: no lock, no
/// allocation (the write path's cold re-check of a racing event uses it).
pub(crate) fn by_id(id: u32) -> Option<&'static Callsite> {
    let i = id.checked_sub(FIRST_CALLSITE_ID)? as usize;
    // Acquire: pairs with `crash_list_push`.
    if i >= CRASH_LIST_COUNT.load(Ordering::Acquire).min(CRASH_LIST_LEN) {
        return None;
    }
    // Relaxed: ordered by the Acquire load of the count. SAFETY: every pointer below the count
    // was stored from a `&'static Callsite` before the count was published.
    unsafe { CRASH_LIST[i].load(Ordering::Relaxed).as_ref() }
}
