//! `trace_scope!`: the rest of the enclosing block as one complete event, and its guard
//! expression (`__phosphor_scope!`).

/// Internal: the guard expression of a scope.
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_scope {
    (@guard $log:expr, $cat:expr, $name:expr, [$n0:expr, $n1:expr], $args:expr) => {{
        $crate::__phosphor_callsite!(__PHOSPHOR_CS, $cat, $name, Complete, [$n0, $n1]);
        let __phosphor_log: &$crate::TraceLog = $log;
        let __phosphor_on = $crate::__macro_support::check_scope(__phosphor_log, &__PHOSPHOR_CS).is_some();
        $crate::__phosphor_scope_open!(__phosphor_log, __PHOSPHOR_CS, $cat, $name, __phosphor_on, $args)
    }};
    (@guard_dyn $log:expr, $cat:expr, $name:expr, $n1:expr, $v1:expr) => {{
        $crate::__phosphor_callsite!(__PHOSPHOR_CS, $crate::__macro_support::CallsiteMeta::new(
            $cat, stringify!($name), $crate::__macro_support::Phase::Complete, ["name", $n1], file!(), line!(),
        ).with_dynamic_name());
        let __phosphor_log: &$crate::TraceLog = $log;
        let __phosphor_on = $crate::__macro_support::check_scope(__phosphor_log, &__PHOSPHOR_CS).is_some();
        $crate::__phosphor_scope_open!(__phosphor_log, __PHOSPHOR_CS, $cat, "dyn", __phosphor_on,
            ($crate::__macro_support::name_arg($name), $v1))
    }};
    ($log:expr, $cat:expr, dyn $name:expr $(,)?) => {
        $crate::__phosphor_scope!(@guard_dyn $log, $cat, $name, "", $crate::__macro_support::NoArg)
    };
    ($log:expr, $cat:expr, dyn $name:expr, $k1:literal => $v1:expr $(,)?) => {
        $crate::__phosphor_scope!(@guard_dyn $log, $cat, $name, $k1, $v1)
    };
    ($log:expr, $cat:expr, $name:expr $(,)?) => {
        $crate::__phosphor_scope!(@guard $log, $cat, $name, ["", ""],
            ($crate::__macro_support::NoArg, $crate::__macro_support::NoArg))
    };
    ($log:expr, $cat:expr, $name:expr, $k0:literal => $v0:expr $(,)?) => {
        $crate::__phosphor_scope!(@guard $log, $cat, $name, [$k0, ""], ($v0, $crate::__macro_support::NoArg))
    };
    ($log:expr, $cat:expr, $name:expr, $k0:literal => $v0:expr, $k1:literal => $v1:expr $(,)?) => {
        $crate::__phosphor_scope!(@guard $log, $cat, $name, [$k0, $k1], ($v0, $v1))
    };
}

/// Records the rest of the enclosing block as one complete event. Arguments are evaluated at the
/// start of the scope.
///
/// ```
/// fn handle() {
///     phosphor::trace_scope!("db", "query", "rows" => 10u32);
///     // ... the work being measured ...
/// }
/// # handle();
/// ```
#[macro_export]
macro_rules! trace_scope {
    (@on log: $log:expr, $cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        let __phosphor_scope_guard = $crate::__phosphor_scope!($log, $cat, dyn $name $(, $k => $v)?);
    };
    (@off log: $log:expr, $cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        if false {
            let _ = $log;
            let _ = &$name;
            $(let _ = &$v;)?
        }
    };
    (@on log: $log:expr, $cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        let __phosphor_scope_guard = $crate::__phosphor_scope!($log, $cat, $name $(, $k => $v)*);
    };
    (@off log: $log:expr, $cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        if false {
            let _ = $log;
            $(let _ = &$v;)*
        }
    };
    (group: $g:ident, log: $($rest:tt)*) => {
        $g!(trace_scope, log: $($rest)*)
    };
    (group: $g:ident, $($rest:tt)*) => {
        $g!(trace_scope, log: $crate::TraceLog::global(), $($rest)*)
    };
    (log: $($rest:tt)*) => {
        $crate::__phosphor_gate!(trace_scope, log: $($rest)*)
    };
    ($cat:expr, dyn $name:expr $(, $k:literal => $v:expr)? $(,)?) => {
        $crate::__phosphor_gate!(trace_scope, log: $crate::TraceLog::global(), $cat, dyn $name $(, $k => $v)?)
    };
    ($cat:expr, $name:expr $(, $k:literal => $v:expr)* $(,)?) => {
        $crate::__phosphor_gate!(trace_scope, log: $crate::TraceLog::global(), $cat, $name $(, $k => $v)*)
    };
}
