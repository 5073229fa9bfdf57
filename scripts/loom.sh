#!/usr/bin/env bash
# Runs the loom models of the ChunkLock protocol and the tenant/chunk hand-off
# (crates/phosphor/src/loom_tests.rs).
#
# Under `--cfg loom` only the lock, barrier, buffer and tenant code (and the config/clock types
# they use) is compiled; the rest of the crate is gated out because loom's atomics are not
# const-constructible. A separate target dir keeps the loom build from invalidating the normal one.
#
# The first argument filters the models (default: all of them); further arguments go to the test
# harness, e.g. `scripts/loom.sh handoff_ring` or `scripts/loom.sh loom_tests --include-ignored`
# (the ignored models and why are listed at the top of loom_tests.rs).
# LOOM_MAX_PREEMPTIONS overrides the per-model preemption bounds (unset: the models' defaults).
set -euo pipefail
cd "$(dirname "$0")/.."

filter="${1:-loom_tests}"
shift || true

RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}" \
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/loom}" \
    cargo test -p phosphor --lib --release -- "$filter" --nocapture --test-threads=1 "$@"
