#!/usr/bin/env bash
# Runs Miri over the chunk, lock and buffer code and over phosphor-format.
#
#  1. `phosphor` unit tests, strict provenance: chunk_lock, buffer, and the other unit tests that
#     Miri can run (arg, callsite, category). The clock tests are skipped: TSC calibration runs
#     `cpuid` (inline assembly, which Miri cannot execute). Under Miri `barrier` reports no
#     membarrier, so the lock runs its symmetric (compare-and-swap) protocol. The interner's and the
#     aggregates' tests run apart (1b), because they leak their test instances on purpose.
# 1b. The interner's unit tests (its arena writes and reads are raw-pointer code), leaks ignored;
#     its multi-thread stress and table-filling tests are skipped (hundreds of thousands of
#     operations: hours under Miri; loom models the interner's concurrency instead).
#  2. `phosphor-format` unit and doc tests, strict provenance.
#  3. The one `phosphor` integration test that needs neither the TSC nor signals: it records through
#     the global log with the monotonic clock and pool tenants, which exercises the tenant write
#     path, eviction and decoding. Reading `CLOCK_REALTIME` needs `-Zmiri-disable-isolation`.
#
# Strict provenance holds for all of it because none of these tests turns an integer back into a
# pointer. The one place that does is `trace.rs`'s `static_str` (a static string's address, stored
# in a record slot, cast back to `*const u8` when a trace is decoded); tests that decode static
# string arguments need `-Zmiri-permissive-provenance`.
#
# Extra Miri flags can be added through MIRIFLAGS.
set -euo pipefail
cd "$(dirname "$0")/.."

strict="-Zmiri-strict-provenance"

echo "== phosphor unit tests (Miri, strict provenance) =="
MIRIFLAGS="$strict ${MIRIFLAGS:-}" cargo +nightly miri test -p phosphor --lib -- --skip clock:: --skip trace_file:: \
    --skip intern:: --skip aggregate::

echo "== phosphor interner unit tests (Miri, strict provenance, leaks ignored) =="
MIRIFLAGS="$strict -Zmiri-ignore-leaks ${MIRIFLAGS:-}" cargo +nightly miri test -p phosphor --lib -- intern:: \
    --skip intern::tests::threads_interning --skip intern::tests::a_full_table --skip intern::tests::memory_is_bounded

echo "== phosphor-format tests (Miri, strict provenance) =="
MIRIFLAGS="$strict ${MIRIFLAGS:-}" cargo +nightly miri test -p phosphor-format --lib

echo "== phosphor integration: global log, monotonic clock, pool tenants (Miri) =="
MIRIFLAGS="$strict -Zmiri-disable-isolation ${MIRIFLAGS:-}" \
    cargo +nightly miri test -p phosphor --test it -- the_global_log_is_configured_once

# The single-thread event tests drive the whole write path: macros, emit (one- and multi-record
# events), Tenant::write, chunk swaps, stop, decode. Static-string arguments are resolved from
# their recorded address (an integer-to-pointer cast), hence permissive provenance here.
echo "== phosphor integration: single-thread event tests (Miri, Stacked Borrows) =="
MIRIFLAGS="-Zmiri-permissive-provenance -Zmiri-disable-isolation -Zmiri-ignore-leaks ${MIRIFLAGS:-}" \
    cargo +nightly miri test -p phosphor --test it -- events::a_complete_event events::every_argument_type \
    events::a_dynamic_string --test-threads=1

