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
read -r -a MODES <<<"${MODES:-event event_msg event_global span span_life event_layer noop macro log2 limit}"

if [[ ! -f Cargo.toml || ! -d crates/phosphor-tracing ]]; then
    echo "run this from the repository root" >&2
    exit 2
fi
for tool in valgrind callgrind_annotate; do
    command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install valgrind)" >&2; exit 2; }
done

cargo build --quiet --profile bench -p phosphor-tracing --example callgrind_tracing
mkdir -p "$OUT"

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

for mode in "${MODES[@]}"; do
    run_mode "$mode"
done

echo "Instructions per iteration (callgrind, (Ir(2N) - Ir(N)) / N, N = $N):"
for mode in "${MODES[@]}"; do
    printf '  %-12s %10s\n' "$mode" "${PER_OP[$mode]}"
done

listing() {
    callgrind_annotate --threshold=100 --auto=no "$1" 2>/dev/null |
        awk '/^ *[0-9,]+ +\([ 0-9.]+%\) +[^ ]/ && !/PROGRAM TOTALS/ {
            ir = $1; gsub(",", "", ir)
            sub(/^ *[0-9,]+ +\([ 0-9.]+%\) +/, ""); sub(/ \[[^]]*\]$/, ""); sub(/^\/rustc\/[0-9a-f]+\/library\//, "rust:")
            print ir "\t" $0 }'
}
if [[ -f "$OUT/$BREAKDOWN.$N.out" ]]; then
    echo
    echo "Breakdown of '$BREAKDOWN' (instructions per event by source file:function, >= 0.5 shown):"
    join -t $'\t' -j 2 -a 1 -a 2 -e 0 -o 0,1.1,2.1 \
        <(listing "$OUT/$BREAKDOWN.$N.out" | sort -t $'\t' -k 2) \
        <(listing "$OUT/$BREAKDOWN.$((2 * N)).out" | sort -t $'\t' -k 2) |
        awk -F '\t' -v n="$N" '{ d = ($3 - $2) / n; if (d >= 0.5 || d <= -0.5) printf "%8.1f  %s\n", d, $1 }' |
        sort -rn
fi
