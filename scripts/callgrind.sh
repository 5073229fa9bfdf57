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
# Not part of CI: it needs valgrind, and takes a minute or two.
set -euo pipefail

N=${N:-1000000}
BREAKDOWN=${BREAKDOWN:-instant}
FEATURES=${FEATURES:-}
TARGET=${CARGO_TARGET_DIR:-target}
OUT=$TARGET/callgrind${FEATURES:+-$FEATURES}
BIN=$TARGET/release/examples/callgrind_instant

if [[ ! -f Cargo.toml || ! -d crates/phosphor ]]; then
    echo "run this from the repository root" >&2
    exit 2
fi
for tool in valgrind callgrind_annotate; do
    command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install valgrind)" >&2; exit 2; }
done

cargo build --quiet --profile bench -p phosphor --example callgrind_instant ${FEATURES:+--features "$FEATURES"}
mkdir -p "$OUT"

# total_of <profile>: the Ir total callgrind wrote.
total_of() {
    awk '/^(summary|totals):/ { print $2; exit }' "$1"
}

declare -A PER_OP
run_mode() {
    local mode=$1 n
    for n in "$N" "$((2 * N))"; do
        valgrind --tool=callgrind --callgrind-out-file="$OUT/$mode.$n.out" "$BIN" "$mode" "$n" \
            2>"$OUT/$mode.$n.log" || { cat "$OUT/$mode.$n.log" >&2; exit 1; }
        grep -q '^mode ' "$OUT/$mode.$n.log" || { cat "$OUT/$mode.$n.log" >&2; exit 1; }
    done
    local t1 t2
    t1=$(total_of "$OUT/$mode.$N.out")
    t2=$(total_of "$OUT/$mode.$((2 * N)).out")
    PER_OP[$mode]=$(awk -v a="$t1" -v b="$t2" -v n="$N" 'BEGIN { printf "%.1f", (b - a) / n }')
}

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

# Per-function breakdown of one scenario: the difference of the two runs' listings, per event.
# callgrind_annotate attributes inlined code to the source file it came from, so a line reads
# "instructions/event  source-file:function-it-was-inlined-into".
listing() {
    callgrind_annotate --threshold=100 --auto=no "$1" 2>/dev/null |
        awk '/^ *[0-9,]+ +\([ 0-9.]+%\) +[^ ]/ && !/PROGRAM TOTALS/ {
            ir = $1; gsub(",", "", ir)
            sub(/^ *[0-9,]+ +\([ 0-9.]+%\) +/, ""); sub(/ \[[^]]*\]$/, ""); sub(/^\/rustc\/[0-9a-f]+\/library\//, "rust:")
            print ir "\t" $0 }'
}
echo
echo "Breakdown of '$BREAKDOWN' (instructions per event by source file:function, >= 0.5 shown):"
join -t $'\t' -j 2 -a 1 -a 2 -e 0 -o 0,1.1,2.1 \
    <(listing "$OUT/$BREAKDOWN.$N.out" | sort -t $'\t' -k 2) \
    <(listing "$OUT/$BREAKDOWN.$((2 * N)).out" | sort -t $'\t' -k 2) |
    awk -F '\t' -v n="$N" '{ d = ($3 - $2) / n; if (d >= 0.5 || d <= -0.5) printf "%8.1f  %s\n", d, $1 }' |
    sort -rn
