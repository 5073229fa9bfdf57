#!/usr/bin/env bash
# Phosphor beside the limit loop and its peers (fastrace, puffin, tracing + tracing-chrome), in one
# run of `phosphor-bench` (bench/): time per event on the calling thread, process CPU, instructions,
# and each figure's recorded-count check.
#
#   scripts/bench-peers.sh [ARGS]                # prints phosphor-bench's whole report (ARGS: --quick, --rounds N, ...)
#   UPDATE_BENCHMARKS=1 scripts/bench-peers.sh   # also writes its cost-per-event table into BENCHMARKS.md
#                                                # (section `bench:peers`): the full run only, no ARGS
#
# The report (scaling, 10,000 callsites, memory, targets) stays in $CARGO_TARGET_DIR/bench-peers.md
# (else target/). The table is the report's "Cost per event, one thread" table, handed to
# crates/phosphor-readme's `bench-record`, which fails (and writes nothing) when it is not one table.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
record=${UPDATE_BENCHMARKS:-0}
if [ "$record" = 1 ] && [ $# -gt 0 ]; then
    echo "UPDATE_BENCHMARKS=1 records the full run: run it without arguments" >&2
    exit 2
fi
out="$target/bench-peers.md"
mkdir -p "$target"
cargo build --release -q -p phosphor-bench
nice -n 10 "$target/release/phosphor-bench" "$@" | tee "$out"
if [ "$record" = 1 ]; then
    table="$target/bench-peers-table.md"
    # The first table after the heading "## Cost per event, one thread".
    awk '/^## Cost per event, one thread/ { on = 1; next }
         on && /^\|/ { print; seen = 1; next }
         on && seen { exit }' "$out" >"$table"
    cargo run --quiet -p phosphor-readme --bin bench-record -- peers --input "$table" \
        --command "UPDATE_BENCHMARKS=1 scripts/bench-peers.sh"
fi
