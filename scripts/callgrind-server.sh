#!/usr/bin/env bash
# Instructions per request of the tokio server benchmark (bench/benches/tokio_server.rs: an axum
# server on a two-worker runtime, a load generator on a runtime of its own), counted by callgrind:
# untraced, Phosphor with everything on (`phosphor::tokio`'s task and poll hooks, tokio's schedule
# latency, a flight recorder's ring and long-poll trigger), the same without `wait_ns` (so without
# tokio's schedule latency: `TaskHooks::wait_ns(false)`) and tokio-console's subscriber.
#
# The method of scripts/callgrind.sh applied to a server: each mode runs `--count MODE`, a fixed
# number of requests (closed loop: each connection sends its next request when the last response
# is in), under `valgrind --tool=callgrind --separate-threads=yes`, with N and 2N requests; the
# difference of the two counts divided by N is one request's instructions with the setup (process
# start, runtimes, the ring's allocation, tokio-console's server) cancelled out. Each thread's
# count is kept apart, so three figures are given per mode:
#   process  every thread;
#   server   every thread but the main one (which runs the load generator): the server's workers,
#            and the tracer's own threads (Phosphor's trigger thread, tokio-console's aggregator);
#   workers  the threads that ran tokio's multi-thread worker loop (the server's two workers).
# Ratios are to the untraced run of the same repeat and load. Each load (CONNECTIONS: 32, close to
# the saturating load of the timed benchmark; 1, where every request wakes the server from idle)
# runs REPEATS times, to show how far the counts move between identical runs.
#
# Usage, from the repository root:
#   scripts/callgrind-server.sh                                  # features tokio-server,console
#   FEATURES=tokio-server scripts/callgrind-server.sh            # untraced and Phosphor only, with
#                                                                # tokio built without `tracing`
#   N=1600 CONNECTIONS=32 REPEATS=1 scripts/callgrind-server.sh  # quicker
#   LONG_POLL_MS=10 scripts/callgrind-server.sh                  # Phosphor's long-poll threshold
#   BIN=path/to/tokio_server-HASH scripts/callgrind-server.sh    # that bench binary, not rebuilt
#                                                                # (FEATURES must say its features)
# It builds the bench (bench profile, `--cfg tokio_unstable`) into $CARGO_TARGET_DIR if set (else
# target/); the profiles stay in $CARGO_TARGET_DIR/callgrind-server/.
#
# Caveats: callgrind counts instructions, not cycles: cache misses, branch mispredictions, the
# cost of a system call inside the kernel and of waiting are not in it. It runs one thread at a
# time, so the interleaving of the server's threads (how many requests one wake-up serves) is not
# the real one and moves a little between runs (the repeats show how much). Under valgrind a
# program runs about 50 times slower: work done by time (tokio-console's aggregator publishing
# every second, a poll measured against the long-poll threshold) weighs more per request than at
# full speed, which is why the workers' figure is given apart; the long-poll threshold defaults
# to 500 ms here (50 times 10 ms) so that the flight recorder's trigger does not fire on polls
# only valgrind made slow (the script prints how often it fired). `rdtsc` runs natively under
# valgrind: Phosphor's clock reads are counted as the one instruction each.
# Not part of CI: it needs valgrind, and takes several minutes.
set -euo pipefail

N=${N:-16000}
REPEATS=${REPEATS:-2}
LONG_POLL_MS=${LONG_POLL_MS:-500}
FEATURES=${FEATURES:-tokio-server,console}
read -r -a LOADS <<<"${CONNECTIONS:-32 1}"
if [[ -z ${MODES:-} ]]; then
    MODES="untraced phosphor phosphor-nowait"
    [[ $FEATURES == *console* ]] && MODES+=" console"
fi
read -r -a MODES <<<"$MODES"
[[ " ${MODES[*]} " == *" untraced "* ]] || { echo "MODES needs untraced (the ratios' base)" >&2; exit 2; }
TARGET=${CARGO_TARGET_DIR:-target}
OUT=$TARGET/callgrind-server/${FEATURES//,/+}

if [[ ! -f Cargo.toml || ! -d bench/benches ]]; then
    echo "run this from the repository root" >&2
    exit 2
fi
for tool in valgrind callgrind_annotate; do
    command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install valgrind)" >&2; exit 2; }
done

export LC_ALL=C RUSTFLAGS="--cfg tokio_unstable"
[[ -n ${BIN:-} ]] || BIN=$(cargo bench --quiet -p phosphor-bench --features "$FEATURES" --bench tokio_server --no-run \
    --message-format=json | grep -o '"executable":"[^"]*tokio_server[^"]*"' | tail -1 | cut -d'"' -f4)
[[ -x $BIN ]] || { echo "no tokio_server bench binary built" >&2; exit 1; }
mkdir -p "$OUT"

# total_of <profile>: the Ir total callgrind wrote.
total_of() {
    awk '/^(summary|totals):/ { print $2; exit }' "$1"
}

# counts <prefix>: "process server workers" totals over the per-thread profiles <prefix>-NN.
counts() {
    local f process=0 server=0 workers=0 t
    for f in "$1"-[0-9]*; do
        t=$(total_of "$f")
        process=$((process + t))
        [[ $f == *-01 ]] && continue
        server=$((server + t))
        if grep -q 'multi_thread::worker' "$f"; then workers=$((workers + t)); fi
    done
    echo "$process $server $workers"
}

# run <tag> <mode> <requests> <connections>: one process under callgrind; prints its line.
run() {
    local tag=$1 mode=$2 n=$3 c=$4
    rm -f "$OUT/$tag".out*
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$OUT/$tag.out" \
        "$BIN" --count "$mode" --requests "$n" --connections "$c" --long-poll-ms "$LONG_POLL_MS" \
        >"$OUT/$tag.stdout" 2>"$OUT/$tag.log" || { cat "$OUT/$tag.log" >&2; exit 1; }
    grep -q '^mode ' "$OUT/$tag.stdout" || { cat "$OUT/$tag.log" >&2; exit 1; }
}

declare -A PER
echo "tokio server under callgrind: features $FEATURES, N = $N requests (and 2N), long poll ${LONG_POLL_MS} ms, $(git rev-parse --short HEAD), $(date -u +%FT%TZ), load:$(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$REPEATS"); do
    for c in "${LOADS[@]}"; do
        for mode in "${MODES[@]}"; do
            run "$mode.c$c.r$r.$N" "$mode" "$N" "$c"
            run "$mode.c$c.r$r.$((2 * N))" "$mode" "$((2 * N))" "$c"
            read -r p1 s1 w1 <<<"$(counts "$OUT/$mode.c$c.r$r.$N.out")"
            read -r p2 s2 w2 <<<"$(counts "$OUT/$mode.c$c.r$r.$((2 * N)).out")"
            PER[$mode.$c.$r]="$(((p2 - p1) / N)) $(((s2 - s1) / N)) $(((w2 - w1) / N))"
            echo "  repeat $r, $c connections, $mode: $(cat "$OUT/$mode.c$c.r$r.$((2 * N)).stdout")" \
                "(instructions/request: process server workers = ${PER[$mode.$c.$r]})"
        done
    done
done

echo
echo "Instructions per request ((Ir(2N) - Ir(N)) / N), and the ratio to untraced of the same repeat:"
printf '  %-12s %-16s %-7s %12s %12s %12s %8s %8s %8s\n' connections mode repeat process server workers \
    "process" "server" "workers"
for c in "${LOADS[@]}"; do
    for mode in "${MODES[@]}"; do
        for r in $(seq 1 "$REPEATS"); do
            read -r p s w <<<"${PER[$mode.$c.$r]}"
            read -r up us uw <<<"${PER[untraced.$c.$r]}"
            printf '  %-12s %-16s %-7s %12s %12s %12s %8.3f %8.3f %8.3f\n' "$c" "$mode" "$r" "$p" "$s" "$w" \
                "$(bc -l <<<"$p / $up")" "$(bc -l <<<"$s / $us")" "$(bc -l <<<"$w / $uw")"
        done
    done
done

# Where the traced modes' instructions go: each function's own (exclusive) instructions on the
# server's threads (all but the main one), summed over the files it was inlined from, in the last
# repeat's 2N run of the first load, less the untraced run's, per request (>= 2 shown).
listing() {
    local f
    for f in "$1"-[0-9]*; do
        [[ $f == *-01 ]] && continue
        callgrind_annotate --threshold=100 --auto=no "$f" 2>/dev/null |
            awk '/^ *[0-9,]+ +\([ 0-9.]+%\) +[^ ]/ && !/PROGRAM TOTALS/ {
                ir = $1; gsub(",", "", ir)
                sub(/^ *[0-9,]+ +\([ 0-9.]+%\) +/, ""); sub(/ \[[^]]*\]$/, ""); sub(/^[^:]*:/, "")
                print ir "\t" $0 }'
    done | awk -F '\t' '{ s[$2] += $1 } END { for (k in s) print k "\t" s[k] }' | sort -t $'\t' -k 1,1
}
base=$OUT/untraced.c${LOADS[0]}.r$REPEATS.$((2 * N)).out
for mode in "${MODES[@]}"; do
    [[ $mode == untraced ]] && continue
    echo
    echo "$mode less untraced, instructions per request by function (exclusive; server threads; repeat $REPEATS, ${LOADS[0]} connections, $((2 * N)) requests):"
    join -t $'\t' -j 1 -a 1 -a 2 -e 0 -o 0,1.2,2.2 <(listing "$base") \
        <(listing "$OUT/$mode.c${LOADS[0]}.r$REPEATS.$((2 * N)).out") |
        awk -F '\t' -v n="$((2 * N))" '{ d = ($3 - $2) / n; if (d >= 2 || d <= -2) printf "%8.1f  %s\n", d, $1 }' |
        sort -rn | head -25
done
