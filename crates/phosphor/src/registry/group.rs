//! Compile-time groups (Palanteer's groups) and the `off` feature.
//!
//! A group is a switch, decided when the *user's* crate compiles, that keeps or removes every
//! instrumentation macro tagged with it. [`group!`](crate::registry::group!) defines a `macro_rules!` macro
//! named after the group; the instrumentation macros take `group: name,` first and hand themselves
//! to it. An enabled group forwards to the normal expansion; a disabled one to the compiled-out
//! expansion, which only type-checks the arguments inside `if false {}` so that variables used
//! only for tracing don't warn. Either way the decision is made by `cfg` while the user's crate is
//! compiled, so a disabled group leaves no callsite, no name and no category string in the binary.
//!
//! The `off` feature of the `phosphor` crate does the same to every macro at once.
//!
//! Both are proven on a real binary: `crates/phosphor/tests/it/groups.rs` builds the workspace crate
//! `phosphor-compile-out` with each feature set and checks that only the enabled group's unique
//! strings are in it (and none under `off`).

/// Defines a compile-time group: a macro named `$name` that instrumentation macros tagged
/// `group: $name` go through. The group is enabled when the `cfg` predicate holds in the crate
/// that defines it, usually one of its cargo features.
///
/// ```
/// // In the crate's root (before the modules that use it), with `[features] trace-net = []`:
/// phosphor::group!(net, feature = "trace-net");
/// // An always-on group and an always-off one:
/// phosphor::group!(core, all());
/// phosphor::group!(verbose, any());
///
/// fn recv() {
///     phosphor::trace_scope!(group: core, "net", "recv");
///     phosphor::trace_instant!(group: verbose, "net", "byte", "value" => 7u8);
/// }
/// # recv();
/// ```
///
/// The macro it defines is textually scoped like any `macro_rules!`: define groups before the
/// modules that use them (or `pub(crate) use name;` after the definition to import it by path).
#[macro_export]
macro_rules! group {
    ($name:ident, $($cfg:tt)+) => {
        $crate::__phosphor_group!(($) $name, ($($cfg)+));
    };
}

/// Internal: [`group!`](crate::registry::group!) with the `$` token passed in, so that the generated macro can
/// have repetitions of its own.
#[doc(hidden)]
#[macro_export]
macro_rules! __phosphor_group {
    (($d:tt) $name:ident, ($($cfg:tt)+)) => {
        #[cfg($($cfg)+)]
        #[allow(unused_macros)]
        macro_rules! $name {
            ($d m:ident, $d ($d rest:tt)*) => { $crate::__phosphor_gate!($d m, $d ($d rest)*) };
        }
        #[cfg(not($($cfg)+))]
        #[allow(unused_macros)]
        macro_rules! $name {
            ($d m:ident, $d ($d rest:tt)*) => { $crate::$d m!(@off $d ($d rest)*) };
        }
    };
}
