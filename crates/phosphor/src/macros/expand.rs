//! The internal macros every public one expands through: the `static` callsite and its
//! registration (`__phosphor_callsite!`), the `off`/group switch (`__phosphor_gate!`), the event
//! (`__phosphor_event!`), and the call sites with their USDT probes under the `usdt` feature
//! (`__phosphor_site!`, `__phosphor_scope_open!`, `__phosphor_probe!`, each defined twice, by `cfg`).

/// Internal: the `static` callsite of one macro invocation, registered in the linker section that
/// [`points`](crate::points) lists.
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_callsite {
    ($cs:ident, $cat:expr, $name:expr, $phase:ident, [$n0:expr, $n1:expr]) => {
        $crate::__phosphor_callsite!(
            $cs,
            $crate::__macro_support::CallsiteMeta::new(
                $cat,
                $name,
                $crate::__macro_support::Phase::$phase,
                [$n0, $n1],
                file!(),
                line!(),
            )
        );
    };
    ($cs:ident, $meta:expr) => {
        static $cs: $crate::__macro_support::Callsite = $crate::__macro_support::Callsite::new($meta);
        $crate::__phosphor_register!($cs);
    };
}

/// Internal: routes a public macro to its recording arms (`@on`) or to its compiled-out arms
/// (`@off`, under the `off` feature), which only type-check the arguments in dead code.
#[cfg(not(feature = "off"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_gate {
    ($m:ident, $($rest:tt)*) => { $crate::$m!(@on $($rest)*) };
}

/// Internal: routes a public macro to its compiled-out arms: the `off` feature is on.
#[cfg(feature = "off")]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_gate {
    ($m:ident, $($rest:tt)*) => { $crate::$m!(@off $($rest)*) };
}

/// Internal: one event with 0, 1 or 2 arguments.
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_event {
    (@emit $log:expr, $phase:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*], [$n0:expr, $n1:expr], $v0:expr, $v1:expr) => {{
        $crate::__phosphor_callsite!(__PHOSPHOR_CS, $cat, $name, $phase, [$n0, $n1]);
        let __phosphor_log: &$crate::TraceLog = $log;
        $crate::__phosphor_site!($phase, __phosphor_log, __PHOSPHOR_CS, $cat, $name, $stamp, [$($lead),*], $v0, $v1);
    }};
    (@emit_dyn $log:expr, $phase:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*], $n1:expr, $v1:expr) => {{
        $crate::__phosphor_callsite!(__PHOSPHOR_CS, $crate::__macro_support::CallsiteMeta::new(
            $cat, stringify!($name), $crate::__macro_support::Phase::$phase, ["name", $n1], file!(), line!(),
        ).with_dynamic_name());
        let __phosphor_log: &$crate::TraceLog = $log;
        $crate::__phosphor_site!($phase, __phosphor_log, __PHOSPHOR_CS, $cat, "dyn", $stamp, [$($lead),*],
            $crate::__macro_support::name_arg($name), $v1);
    }};
    ($log:expr, $phase:ident, $cat:expr, dyn $name:expr, $stamp:expr, [$($lead:expr),*] $(,)?) => {
        $crate::__phosphor_event!(@emit_dyn $log, $phase, $cat, $name, $stamp, [$($lead),*], "",
            $crate::__macro_support::NoArg)
    };
    ($log:expr, $phase:ident, $cat:expr, dyn $name:expr, $stamp:expr, [$($lead:expr),*], $k1:literal => $v1:expr $(,)?) => {
        $crate::__phosphor_event!(@emit_dyn $log, $phase, $cat, $name, $stamp, [$($lead),*], $k1, $v1)
    };
    ($log:expr, $phase:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*] $(,)?) => {
        $crate::__phosphor_event!(@emit $log, $phase, $cat, $name, $stamp, [$($lead),*], ["", ""],
            $crate::__macro_support::NoArg, $crate::__macro_support::NoArg)
    };
    ($log:expr, $phase:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*], $k0:literal => $v0:expr $(,)?) => {
        $crate::__phosphor_event!(@emit $log, $phase, $cat, $name, $stamp, [$($lead),*], [$k0, ""],
            $v0, $crate::__macro_support::NoArg)
    };
    ($log:expr, $phase:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*], $k0:literal => $v0:expr, $k1:literal => $v1:expr $(,)?) => {
        $crate::__phosphor_event!(@emit $log, $phase, $cat, $name, $stamp, [$($lead),*], [$k0, $k1], $v0, $v1)
    };
}

/// Internal: checks a callsite and records its event (without the `usdt` feature).
#[cfg(not(feature = "usdt"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_site {
    ($phase:ident, $log:ident, $cs:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*], $v0:expr, $v1:expr) => {
        if let Some(__phosphor_state) = $crate::__macro_support::check($log, &$cs) {
            $crate::__phosphor_emit!($phase, $log, &$cs, __phosphor_state, $stamp, [$($lead),*], $v0, $v1);
        }
    };
}

/// Internal: checks a callsite and records its event, and fires its USDT probe
/// (`phosphor:category__name`) while a tool is attached to it. The arguments are evaluated once,
/// and only when one of the two wants them.
#[cfg(feature = "usdt")]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_site {
    ($phase:ident, $log:ident, $cs:ident, $cat:expr, $name:expr, $stamp:expr, [$($lead:expr),*], $v0:expr, $v1:expr) => {
        $crate::__macro_support::usdt::__sdt_local_semaphore!(__PHOSPHOR_USDT);
        let __phosphor_state = $crate::__macro_support::check($log, &$cs);
        let __phosphor_tool = __PHOSPHOR_USDT.is_enabled();
        if __phosphor_state.is_some() || __phosphor_tool {
            let (__phosphor_v0, __phosphor_v1) = ($v0, $v1);
            if __phosphor_tool {
                $crate::__macro_support::usdt::__sdt_str_probe!(@semaphore __PHOSPHOR_USDT, phosphor, $cat, $name,
                    $crate::Arg::usdt(&__phosphor_v0), $crate::Arg::usdt(&__phosphor_v1));
            }
            if let Some(__phosphor_state) = __phosphor_state {
                $crate::__phosphor_emit!(
                    $phase, $log, &$cs, __phosphor_state, $stamp, [$($lead),*], __phosphor_v0, __phosphor_v1
                );
            }
        }
    };
}

/// Internal: records the event of a checked callsite: through `emit_watched` for the phases a
/// trigger can watch (a complete slice's duration, a counter's or data point's value), which then
/// tests the state's armed bit; through `emit`, which does not, for the others.
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_emit {
    (Complete, $($args:tt)*) => { $crate::__macro_support::emit_watched($($args)*) };
    (Counter, $($args:tt)*) => { $crate::__macro_support::emit_watched($($args)*) };
    (Data, $($args:tt)*) => { $crate::__macro_support::emit_watched($($args)*) };
    ($phase:ident, $($args:tt)*) => { $crate::__macro_support::emit($($args)*) };
}

/// Internal: the guard of a scope; its arguments are evaluated when the scope opens, if enabled.
#[cfg(not(feature = "usdt"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_scope_open {
    ($log:ident, $cs:ident, $cat:expr, $name:expr, $on:ident, $args:expr) => {{
        // Until the guard exists, an argument that panics takes the scope's mark back.
        let __phosphor_opening = $crate::__macro_support::Opening::new($log, &$cs, $on);
        __phosphor_opening.guard(if $on { Some($args) } else { None })
    }};
}

/// Internal: the guard of a scope, whose USDT probe fires when the scope opens.
#[cfg(feature = "usdt")]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_scope_open {
    ($log:ident, $cs:ident, $cat:expr, $name:expr, $on:ident, $args:expr) => {{
        $crate::__macro_support::usdt::__sdt_local_semaphore!(__PHOSPHOR_USDT);
        // Until the guard exists, an argument that panics takes the scope's mark back.
        let __phosphor_opening = $crate::__macro_support::Opening::new($log, &$cs, $on);
        let __phosphor_tool = __PHOSPHOR_USDT.is_enabled();
        let __phosphor_args = if $on || __phosphor_tool { Some($args) } else { None };
        if let (true, Some((__phosphor_a0, __phosphor_a1))) = (__phosphor_tool, &__phosphor_args) {
            $crate::__macro_support::usdt::__sdt_str_probe!(@semaphore __PHOSPHOR_USDT, phosphor, $cat, $name,
                $crate::Arg::usdt(__phosphor_a0), $crate::Arg::usdt(__phosphor_a1));
        }
        __phosphor_opening.guard(if $on { __phosphor_args } else { None })
    }};
}

/// Internal: a USDT probe with no arguments (the `usdt` feature), or nothing.
#[cfg(not(feature = "usdt"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_probe {
    ($cat:expr, $name:expr) => {};
}

/// Internal: a USDT probe with no arguments (the `usdt` feature), or nothing.
#[cfg(feature = "usdt")]
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_probe {
    ($cat:expr, $name:expr) => {
        $crate::__macro_support::usdt::__sdt_local_semaphore!(__PHOSPHOR_USDT);
        if __PHOSPHOR_USDT.is_enabled() {
            $crate::__macro_support::usdt::__sdt_str_probe!(@semaphore __PHOSPHOR_USDT, phosphor, $cat, $name);
        }
    };
}
