#!/usr/bin/env bash
# Instructions per `tracing` event and span recorded by PhosphorSubscriber, counted by callgrind
# (immune to the machine's load): the `scripts/callgrind.sh` method applied to
# crates/phosphor-tracing/examples/callgrind_tracing.rs (bench profile), each scenario run with N
# and 2N iterations and the difference divided by N.
#
# Usage, from the repository root:
#   scripts/callgrind-tracing.sh                  # N = 200,000
#   BREAKDOWN=span scripts/callgrind-tracing.sh   # per-function breakdown of another scenario
#   MODES="event limit" scripts/callgrind-tracing.sh
# It builds into $CARGO_TARGET_DIR if set (else target/); the profiles stay in
# $CARGO_TARGET_DIR/callgrind-tracing/.
set -euo pipefail

N=${N:-200000}
BREAKDOWN=${BREAKDOWN:-event}
TARGET=${CARGO_TARGET_DIR:-target}
OUT=$TARGET/callgrind-tracing
BIN=$TARGET/release/examples/callgrind_tracing
read -r -a MODES <<<"${MODES:-event event_msg event_global span span_life event_layer noop empty empty_global visit visit_global record record_global macro log2 limit}"

source "$(dirname "$0")/callgrind-lib.sh"
callgrind_require crates/phosphor-tracing

cargo build --quiet --profile bench -p phosphor-tracing --example callgrind_tracing
mkdir -p "$OUT"

for mode in "${MODES[@]}"; do
    run_mode "$mode"
done

echo "Instructions per iteration (callgrind, (Ir(2N) - Ir(N)) / N, N = $N):"
for mode in "${MODES[@]}"; do
    printf '  %-12s %10s\n' "$mode" "${PER_OP[$mode]}"
done

if [[ -f "$OUT/$BREAKDOWN.$N.out" ]]; then
    callgrind_breakdown "$BREAKDOWN"
fi
