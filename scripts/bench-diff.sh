#!/usr/bin/env bash
# The benchmark of `phosphor diff` against `phosphor stats` (issue 22: the diff of two 10 M-event
# traces in at most 2x the time `stats` takes on one).
#
#   scripts/bench-diff.sh [--events N] [--rounds R]
#
# Builds the release CLI, makes two demo traces (`phosphor demo --events N --buffer-mib 1024`, N
# per worker, default 2,200,000: about 10 M events each; in target/bench-diff, reused when there),
# then times, in R interleaved rounds (default 5), `phosphor stats BASE --json` and `phosphor diff
# BASE NEW --json` (JSON: no table formatting in either; output to /dev/null). Prints each round's
# wall times, the medians and their ratio diff/stats. The traces are read from the page cache.
set -euo pipefail
cd "$(dirname "$0")/.."

events=2200000
rounds=5
while [ $# -gt 0 ]; do
    case "$1" in
        --events) events="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

target="${CARGO_TARGET_DIR:-target}"
out="$target/bench-diff"
mkdir -p "$out"
cargo build --release -q -p phosphor-cli
bin="$(cd "$target/release" && pwd)/phosphor"

for side in base new; do
    dir="$out/$side-$events"
    if [ ! -s "$dir/trace.phos" ] || [ ! -s "$dir/done" ]; then
        rm -rf "$dir"
        echo "making $side: phosphor demo --events $events --buffer-mib 1024 --out $dir" >&2
        "$bin" demo --events "$events" --buffer-mib 1024 --out "$dir" > "$dir.log"
        rm -f "$dir/trace.pftrace" "$dir/trace.json" "$dir/flame.svg"
        echo done > "$dir/done"
    fi
done
base="$out/base-$events/trace.phos"
new="$out/new-$events/trace.phos"
count() { "$bin" stats "$1" --json | grep -m1 '"events"' | tr -dc '0-9'; }
echo "base: $(count "$base") events, $(du -m "$base" | cut -f1) MiB; new: $(count "$new") events, $(du -m "$new" | cut -f1) MiB"

# Wall seconds of one run of the command.
wall() {
    local start end
    start=$(date +%s.%N)
    "$@" > /dev/null
    end=$(date +%s.%N)
    echo "$end - $start" | bc -l
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

stats_times=()
diff_times=()
for r in $(seq 1 "$rounds"); do
    s=$(wall "$bin" stats "$base" --json)
    d=$(wall "$bin" diff "$base" "$new" --json)
    stats_times+=("$s")
    diff_times+=("$d")
    printf 'round %d: stats %.3f s, diff %.3f s\n' "$r" "$s" "$d"
done
ms=$(printf '%s\n' "${stats_times[@]}" | median)
md=$(printf '%s\n' "${diff_times[@]}" | median)
printf 'median: stats %.3f s, diff %.3f s; diff/stats = %.2f (target <= 2)\n' "$ms" "$md" "$(echo "$md / $ms" | bc -l)"
