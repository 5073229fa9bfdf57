#!/usr/bin/env bash
# Instructions per event on the hot path, counted by callgrind.
#
# Builds crates/phosphor/examples/callgrind_instant.rs with the bench profile (fat LTO, one codegen
# unit: the same code the divan benchmark runs) and runs every scenario twice under
# `valgrind --tool=callgrind`, with N and 2N iterations. The difference of the two totals, divided
# by N, is the cost of one iteration with every setup cost (process start, buffer allocation,
# clock calibration, the warm-up pass over the ring, stop) cancelled out. Chunk swaps, which
# happen once per 127 records, are included pro rata, as they are in a real trace.
#
# Usage, from the repository root:
#   scripts/callgrind.sh                 # N = 1,000,000
#   N=200000 scripts/callgrind.sh        # quicker
#   BREAKDOWN=scope scripts/callgrind.sh # per-function breakdown of another scenario
#   FEATURES=F scripts/callgrind.sh      # with features F of the phosphor crate (the tag
#                                        # experiment/fdr16-records has `compact-records`)
#   UPDATE_BENCHMARKS=1 N=200000 scripts/callgrind.sh
#                                        # also writes the table into BENCHMARKS.md (section
#                                        # `bench:callgrind`, through `bench-record`)
# It builds into $CARGO_TARGET_DIR if set (else target/).
#
# It prints one line per scenario, then a per-function breakdown (instructions per event, from the
# difference of the two runs' `callgrind_annotate` listings) of the `BREAKDOWN` scenario
# (default: instant). The raw profiles stay in target/callgrind/ for `callgrind_annotate`.
# Not part of CI: it needs valgrind, and takes a minute or two. The harness (the runs, the
# quotient, the breakdown) is scripts/callgrind-lib.sh, shared with scripts/callgrind-tracing.sh.
set -euo pipefail

N=${N:-1000000}
BREAKDOWN=${BREAKDOWN:-instant}
FEATURES=${FEATURES:-}
TARGET=${CARGO_TARGET_DIR:-target}
OUT=$TARGET/callgrind${FEATURES:+-$FEATURES}
BIN=$TARGET/release/examples/callgrind_instant

source "$(dirname "$0")/callgrind-lib.sh"
callgrind_require crates/phosphor

cargo build --quiet --profile bench -p phosphor --example callgrind_instant ${FEATURES:+--features "$FEATURES"}
mkdir -p "$OUT"

MODES=(instant scope counter dynstr log3 interned disabled limit empty)
for mode in "${MODES[@]}"; do
    run_mode "$mode"
done

echo
echo "Instructions per iteration (callgrind, (Ir(2N) - Ir(N)) / N, N = $N):"
printf '  %-10s %12s %22s\n' scenario "instr/iter" "minus empty loop"
for mode in "${MODES[@]}"; do
    printf '  %-10s %12s %22s\n' "$mode" "${PER_OP[$mode]}" \
        "$(awk -v a="${PER_OP[$mode]}" -v e="${PER_OP[empty]}" 'BEGIN { printf "%.1f", a - e }')"
done
FELL_BACK=0
if grep -q 'not using the CPU counter' "$OUT"/*.log; then
    echo "  note: phosphor fell back from the TSC under valgrind; figures include clock_gettime" >&2
    FELL_BACK=1
fi

# The same figures as a Markdown table, kept beside the profiles; with UPDATE_BENCHMARKS=1 it
# replaces BENCHMARKS.md's `bench:callgrind` table (crates/phosphor-readme's `bench-record`).
{
    echo "| scenario | instructions/iteration | minus the empty loop |"
    echo "|---|---:|---:|"
    for mode in "${MODES[@]}"; do
        echo "| \`$mode\` | ${PER_OP[$mode]} | $(awk -v a="${PER_OP[$mode]}" -v e="${PER_OP[empty]}" 'BEGIN { printf "%.1f", a - e }') |"
    done
} >"$OUT/table.md"
if [[ ${UPDATE_BENCHMARKS:-0} == 1 ]]; then
    if [[ -n $FEATURES || $FELL_BACK == 1 ]]; then
        echo "not recording: BENCHMARKS.md's table is of the default features with the TSC" >&2
        exit 1
    fi
    cargo run --quiet -p phosphor-readme --bin bench-record -- callgrind --input "$OUT/table.md" \
        --command "UPDATE_BENCHMARKS=1 N=$N scripts/callgrind.sh"
fi

callgrind_breakdown "$BREAKDOWN"
