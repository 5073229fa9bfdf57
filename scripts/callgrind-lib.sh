# The callgrind harness shared by scripts/callgrind.sh (the hot path's macros) and
# scripts/callgrind-tracing.sh (the `tracing` subscriber). Sourced, not run. The sourcing script
# sets N (iterations), OUT (where the profiles go) and BIN (the example, taking `MODE N`; it
# prints a line starting `mode ` to stderr when it ran), builds BIN, then calls
# `callgrind_require`, `run_mode` per scenario and `callgrind_breakdown`.
#
# The method: each scenario runs twice under `valgrind --tool=callgrind`, with N and 2N
# iterations; the difference of the two totals, divided by N, is the cost of one iteration with
# every setup cost (process start, buffer allocation, clock calibration, stop) cancelled out.

# callgrind_require <crate dir>: from the repository root, with valgrind and callgrind_annotate.
callgrind_require() {
    if [[ ! -f Cargo.toml || ! -d $1 ]]; then
        echo "run this from the repository root" >&2
        exit 2
    fi
    local tool
    for tool in valgrind callgrind_annotate; do
        command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install valgrind)" >&2; exit 2; }
    done
}

# total_of <profile>: the Ir total callgrind wrote.
total_of() {
    awk '/^(summary|totals):/ { print $2; exit }' "$1"
}

# run_mode <mode>: runs the scenario with N and 2N iterations; PER_OP[mode] is the instructions
# per iteration, one decimal.
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

# listing <profile>: instructions by function, "Ir<TAB>source-file:function".
listing() {
    callgrind_annotate --threshold=100 --auto=no "$1" 2>/dev/null |
        awk '/^ *[0-9,]+ +\([ 0-9.]+%\) +[^ ]/ && !/PROGRAM TOTALS/ {
            ir = $1; gsub(",", "", ir)
            sub(/^ *[0-9,]+ +\([ 0-9.]+%\) +/, ""); sub(/ \[[^]]*\]$/, ""); sub(/^\/rustc\/[0-9a-f]+\/library\//, "rust:")
            print ir "\t" $0 }'
}

# callgrind_breakdown <mode>: the per-function breakdown of one scenario, from the difference of
# its two runs' listings, per event. callgrind_annotate attributes inlined code to the source file
# it came from, so a line reads "instructions/event  source-file:function-it-was-inlined-into".
callgrind_breakdown() {
    local mode=$1
    echo
    echo "Breakdown of '$mode' (instructions per event by source file:function, >= 0.5 shown):"
    join -t $'\t' -j 2 -a 1 -a 2 -e 0 -o 0,1.1,2.1 \
        <(listing "$OUT/$mode.$N.out" | sort -t $'\t' -k 2) \
        <(listing "$OUT/$mode.$((2 * N)).out" | sort -t $'\t' -k 2) |
        awk -F '\t' -v n="$N" '{ d = ($3 - $2) / n; if (d >= 0.5 || d <= -0.5) printf "%8.1f  %s\n", d, $1 }' |
        sort -rn
}
