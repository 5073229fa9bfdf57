#!/usr/bin/env bash
# Conversion throughput and peak memory against trace size (issue 3's benchmark; BENCHMARKS.md).
#
#   scripts/bench-convert.sh [EVENTS_IN_MILLIONS ...]     (default: 1 10)
#
# For each size it records the demo workload with a Fixed buffer big enough to keep every event,
# then converts the trace file to each format with its output sent to /dev/null (so the disk is not
# measured), three times, and prints the median wall time, the events per second and the peak
# resident memory (from /usr/bin/time). Peak memory must stay flat as the trace grows: the
# exporters stream. Prints a Markdown table.
#
# Environment: PHOSPHOR_BIN=path converts with that binary instead of building this tree's (to
# compare two builds); KEEP_TRACES=1 reuses the traces a run before recorded, so that two binaries
# convert the same files; FORMATS="perfetto chrome" picks the formats (default: all three).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1 10)
target="${CARGO_TARGET_DIR:-target}"
if [ -n "${PHOSPHOR_BIN:-}" ]; then
    bin=$PHOSPHOR_BIN
else
    cargo build --release -q -p phosphor-cli
    bin=$target/release/phosphor
fi
dir=$target/bench-convert
formats=(${FORMATS:-perfetto chrome folded})
mkdir -p "$dir"

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "| events | file | bytes/event | format | output bytes/event | median time | events/s | median CPU time | events/CPU s | peak RSS |"
echo "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"
for m in "${sizes[@]}"; do
    out="$dir/${m}M"
    # 4 workers emit the events; 36 bytes per event of buffer leaves room for continuations.
    per_worker=$(( m * 1000000 / 4 ))
    buffer_mib=$(( m * 36 + 16 ))
    file="$out/trace.phos"
    if [ "${KEEP_TRACES:-0}" != 1 ] || [ ! -f "$file" ]; then
        "$bin" demo --events "$per_worker" --buffer-mib "$buffer_mib" --out "$out" > "$out.log"
    fi
    bytes=$(stat -c %s "$file")
    events=$("$bin" info "$file" | awk '$1 == "events" { gsub(",", "", $2); print $2; exit }')
    for fmt in "${formats[@]}"; do
        times=()
        cpus=()
        rss=0
        for _ in 1 2 3; do
            # CPU time (user + system) as well as wall time: on a machine shared with other work the
            # wall time measures the others too.
            read -r t kb u s < <( { /usr/bin/time -f "%e %M %U %S" "$bin" convert "$file" --to "$fmt" > /dev/null; } 2>&1 | tail -1)
            times+=("$t")
            cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')")
            [ "$kb" -gt "$rss" ] && rss=$kb
        done
        t=$(printf '%s\n' "${times[@]}" | median)
        c=$(printf '%s\n' "${cpus[@]}" | median)
        # The output's size, from one more run (a pipe, outside the timed runs).
        size=$("$bin" convert "$file" --to "$fmt" | wc -c)
        awk -v ev="$events" -v b="$bytes" -v f="$fmt" -v t="$t" -v c="$c" -v rss="$rss" -v o="$size" 'BEGIN {
            printf "| %.1f M | %.0f MiB | %.1f | %s | %.1f | %.2f s | %.2f M | %.2f s | %.2f M | %.1f MiB |\n",
                ev / 1e6, b / 1048576, b / ev, f, o / ev, t, (t > 0 ? ev / t / 1e6 : 0),
                c, (c > 0 ? ev / c / 1e6 : 0), rss / 1024 }'
    done
done
