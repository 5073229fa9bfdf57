//! `trace_lock_guard!`: a lock acquisition recorded as two events, the wait and the hold.
//!
//! Each invocation has two callsites, a lock-wait one (`<name>.wait`) and a lock-held one
//! (`<name>.held`), both with the macro's argument names. A `dyn` name is argument 0 of both
//! events (their callsites flagged as named at run time, as `trace_scope!`'s `dyn` form is), so a
//! `dyn` lock takes one argument more at most. The arguments are evaluated once, before the lock
//! is taken and only when traced, and the guard keeps them for the held event. With the `usdt`
//! feature its probe (`category__name`, or `category__dyn`) fires at acquisition, with no
//! arguments.

/// Wraps a lock acquisition: records `<name>.wait` (the time to acquire) and `<name>.held` (the
/// time held, ending when the returned guard drops). The guard derefs to what the lock's guard
/// derefs to.
///
/// ```
/// let m = std::sync::Mutex::new(0);
/// let mut g = phosphor::trace_lock_guard!("sync", "counter", m.lock().unwrap());
/// *g += 1;
/// ```
///
/// Up to two `"name" => value` arguments follow the lock expression, recorded on both events and
/// evaluated before the lock is taken. A name chosen at run time follows `dyn`, as in the other
/// macros (then one argument at most); tools show it with the phase, e.g. `shard-3 (wait)`.
///
/// ```
/// use phosphor::{pstr, trace_lock_guard, PString};
///
/// const SHARDS: [PString; 2] = [pstr!("shard-0"), pstr!("shard-1")];
/// let shards = [std::sync::Mutex::new(0u64), std::sync::Mutex::new(0u64)];
/// let key = 7u64;
/// let i = (key % 2) as usize;
/// let mut g = trace_lock_guard!("sync", dyn SHARDS[i], shards[i].lock().unwrap(), "key" => key);
/// *g += 1;
/// drop(g);
/// let g = trace_lock_guard!("sync", "table", shards[0].lock().unwrap(), "key" => key, "retry" => false);
/// assert_eq!(*g, 0);
/// ```
#[macro_export]
macro_rules! trace_lock_guard {
    (@guard $log:expr, $cat:expr, $probe:expr, $wait:expr, $held:expr, $lock:expr, $args:expr) => {{
        $crate::__phosphor_callsite!(__PHOSPHOR_WAIT, $wait);
        $crate::__phosphor_callsite!(__PHOSPHOR_HELD, $held);
        let __phosphor_log: &$crate::TraceLog = $log;
        $crate::__phosphor_probe!($cat, $probe);
        let __phosphor_on = $crate::__macro_support::check(__phosphor_log, &__PHOSPHOR_WAIT).is_some()
            | $crate::__macro_support::check(__phosphor_log, &__PHOSPHOR_HELD).is_some();
        // The arguments first, so that evaluating them is not timed as waiting for the lock.
        let __phosphor_start = if __phosphor_on {
            let (__phosphor_a, __phosphor_b) = $args;
            Some((__phosphor_log.now(), __phosphor_a, __phosphor_b))
        } else {
            None
        };
        $crate::__macro_support::LockGuard::new(
            __phosphor_log, &__PHOSPHOR_WAIT, &__PHOSPHOR_HELD, __phosphor_start, $lock,
        )
    }};
    (@lit $log:expr, $cat:expr, $name:literal, $lock:expr, [$n0:expr, $n1:expr], $args:expr) => {
        $crate::trace_lock_guard!(@guard $log, $cat, $name,
            $crate::__macro_support::CallsiteMeta::new($cat, concat!($name, ".wait"),
                $crate::__macro_support::Phase::LockWait, [$n0, $n1], file!(), line!()),
            $crate::__macro_support::CallsiteMeta::new($cat, concat!($name, ".held"),
                $crate::__macro_support::Phase::LockHeld, [$n0, $n1], file!(), line!()),
            $lock, $args)
    };
    (@dyn $log:expr, $cat:expr, $name:expr, $lock:expr, $n1:expr, $v1:expr) => {
        $crate::trace_lock_guard!(@guard $log, $cat, "dyn",
            $crate::__macro_support::CallsiteMeta::new($cat, concat!(stringify!($name), ".wait"),
                $crate::__macro_support::Phase::LockWait, ["name", $n1], file!(), line!()).with_dynamic_name(),
            $crate::__macro_support::CallsiteMeta::new($cat, concat!(stringify!($name), ".held"),
                $crate::__macro_support::Phase::LockHeld, ["name", $n1], file!(), line!()).with_dynamic_name(),
            $lock, ($crate::__macro_support::name_arg($name), $v1))
    };
    (@on log: $log:expr, $cat:expr, dyn $name:expr, $lock:expr $(,)?) => {
        $crate::trace_lock_guard!(@dyn $log, $cat, $name, $lock, "", $crate::__macro_support::NoArg)
    };
    (@on log: $log:expr, $cat:expr, dyn $name:expr, $lock:expr, $k1:literal => $v1:expr $(,)?) => {
        $crate::trace_lock_guard!(@dyn $log, $cat, $name, $lock, $k1, $v1)
    };
    (@off log: $log:expr, $cat:expr, dyn $name:expr, $lock:expr $(,)?) => {{
        if false {
            let _ = $log;
        }
        $crate::__macro_support::LockGuard::untraced_as($lock, || {
            ($crate::__macro_support::name_arg($name), $crate::__macro_support::NoArg)
        })
    }};
    (@off log: $log:expr, $cat:expr, dyn $name:expr, $lock:expr, $k1:literal => $v1:expr $(,)?) => {{
        if false {
            let _ = $log;
        }
        $crate::__macro_support::LockGuard::untraced_as($lock, || ($crate::__macro_support::name_arg($name), $v1))
    }};
    (@on log: $log:expr, $cat:expr, $name:literal, $lock:expr $(,)?) => {
        $crate::trace_lock_guard!(@lit $log, $cat, $name, $lock, ["", ""],
            ($crate::__macro_support::NoArg, $crate::__macro_support::NoArg))
    };
    (@on log: $log:expr, $cat:expr, $name:literal, $lock:expr, $k0:literal => $v0:expr $(,)?) => {
        $crate::trace_lock_guard!(@lit $log, $cat, $name, $lock, [$k0, ""], ($v0, $crate::__macro_support::NoArg))
    };
    (@on log: $log:expr, $cat:expr, $name:literal, $lock:expr, $k0:literal => $v0:expr, $k1:literal => $v1:expr $(,)?) => {
        $crate::trace_lock_guard!(@lit $log, $cat, $name, $lock, [$k0, $k1], ($v0, $v1))
    };
    (@off log: $log:expr, $cat:expr, $name:literal, $lock:expr $(,)?) => {{
        if false {
            let _ = $log;
        }
        $crate::__macro_support::LockGuard::untraced($lock)
    }};
    (@off log: $log:expr, $cat:expr, $name:literal, $lock:expr, $k0:literal => $v0:expr $(,)?) => {{
        if false {
            let _ = $log;
        }
        $crate::__macro_support::LockGuard::untraced_as($lock, || ($v0, $crate::__macro_support::NoArg))
    }};
    (@off log: $log:expr, $cat:expr, $name:literal, $lock:expr, $k0:literal => $v0:expr, $k1:literal => $v1:expr $(,)?) => {{
        if false {
            let _ = $log;
        }
        $crate::__macro_support::LockGuard::untraced_as($lock, || ($v0, $v1))
    }};
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_lock_guard, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_lock_guard, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_lock_guard, log: $($rest)*)
    };
    ($cat:expr, dyn $name:expr, $lock:expr $(, $k:literal => $v:expr)? $(,)?) => {
        $crate::__phosphor_gate!(trace_lock_guard, log: $crate::TraceLog::global(), $cat, dyn $name, $lock $(, $k => $v)?)
    };
    ($cat:expr, $name:literal, $lock:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_gate!(trace_lock_guard, log: $crate::TraceLog::global(), $cat, $name, $lock $(, $k => $v)*)
    };
}
