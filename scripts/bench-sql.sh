#!/usr/bin/env bash
# `phosphor sql` and Parquet output (issue 31's targets): wall, user CPU and peak RSS of a GROUP BY
# over a trace file and over its Parquet folder, of `convert --to parquet` and of `phosphor stats`
# (the same model, the reference), and the folder's size against the trace's.
#
#   scripts/bench-sql.sh [TRACE.phos]                # prints the table
#   UPDATE_BENCHMARKS=1 scripts/bench-sql.sh [TRACE] # also writes it into BENCHMARKS.md (`bench:sql`)
#
# Builds the release CLI with `--features sql` (PHOSPHOR=path runs that binary instead). Without
# TRACE it uses the viewer benchmark's demo trace (11.5 M events: `phosphor demo --events 2500000
# --buffer-mib 1024`, in $CARGO_TARGET_DIR/bench-view/demo, made when missing). The queries run
# RUNS times (3) and each figure is the range over the runs; the GROUP BY's groups from the file
# and from the folder must be the same (sorted CSV) or nothing is recorded. Everything else stays
# in $CARGO_TARGET_DIR/bench-sql/ (the folder is removed at the end unless KEEP=1).
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
out="$target/bench-sql"
runs=${RUNS:-3}
query="SELECT name, count(*), sum(dur) FROM slices GROUP BY name"
mkdir -p "$out"
if [ -n "${PHOSPHOR:-}" ]; then
    if [ "${UPDATE_BENCHMARKS:-0}" = 1 ]; then
        echo "UPDATE_BENCHMARKS=1 records this tree's build (its commit is the stamp's): unset PHOSPHOR" >&2
        exit 2
    fi
    bin=$PHOSPHOR
else
    cargo build --release -q -p phosphor-cli --features sql
    bin="$(cd "$target/release" && pwd)/phosphor"
fi
trace=${1:-}
if [ -z "$trace" ]; then
    dir="$target/bench-view/demo"
    trace="$dir/trace.phos"
    if [ ! -s "$trace" ] || [ ! -s "$dir/done" ]; then
        rm -rf "$dir" && mkdir -p "$(dirname "$dir")"
        echo "making the demo trace: phosphor demo --events 2500000 --buffer-mib 1024 --out $dir" >&2
        "$bin" demo --events 2500000 --buffer-mib 1024 --out "$dir" >"$dir.log"
        rm -f "$dir/trace.pftrace" "$dir/trace.json" "$dir/flame.svg"
        echo "2500000 1024" >"$dir/done"
    fi
fi
[ -s "$trace" ] || { echo "no trace at $trace" >&2; exit 1; }
pq="$out/parquet"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$pq"' EXIT

# `timed NAME CMD...`: runs CMD with its output to $out/NAME.out, appends "wall user KiB" to $out/NAME.time.
timed() {
    local name=$1
    shift
    /usr/bin/time -f "%e %U %M" -a -o "$out/$name.time" "$@" >"$out/$name.out"
}
# `range NAME`: "a–b s wall, c–d s user, M MiB" over NAME's runs (the highest peak RSS).
range() {
    awk '{ w[NR] = $1; u[NR] = $2; if ($3 > m) m = $3 }
         function lo(a, n,  i, x) { x = a[1]; for (i = 2; i <= n; i++) if (a[i] < x) x = a[i]; return x }
         function hi(a, n,  i, x) { x = a[1]; for (i = 2; i <= n; i++) if (a[i] > x) x = a[i]; return x }
         function span(a, n,  l, h) { l = lo(a, n); h = hi(a, n); return l == h ? sprintf("%.2f", l) : sprintf("%.2f–%.2f", l, h) }
         END { printf "%s s wall, %s s user, %.0f MiB", span(w, NR), span(u, NR), m / 1024 }' "$out/$1.time"
}

rm -f "$out"/*.time
rm -rf "$pq"
echo "phosphor $(git rev-parse --short HEAD), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), trace $trace" >&2
events=$("$bin" info "$trace" | awk '$1 == "events" { gsub(",", "", $2); print $2; exit }')
timed convert "$bin" convert "$trace" --to parquet -o "$pq"
for _ in $(seq "$runs"); do
    timed file "$bin" sql --csv "$trace" "$query"
    timed folder "$bin" sql --csv "$pq" "$query"
    timed stats "$bin" stats "$trace"
done
if ! cmp -s <(sort "$out/file.out") <(sort "$out/folder.out"); then
    echo "the GROUP BY's groups differ between $trace and its Parquet folder: not recording" >&2
    exit 1
fi
trace_bytes=$(stat -c %s "$trace")
pq_bytes=$(du -sb "$pq" | cut -f1)
convert_rate=$(awk -v e="$events" '{ printf "%.2f", e / $1 / 1e6 }' "$out/convert.time")
table="$out/table.md"
{
    echo "| figure | measured | target |"
    echo "|---|---:|---|"
    echo "| \`$query\` from the \`.phos\` ($(awk -v e="$events" 'BEGIN { printf "%.2f", e / 1e6 }') M events), $runs runs | $(range file) | ≤ 1.5 s |"
    echo "| the same query from the Parquet folder (the same groups) | $(range folder) | ≤ 0.3 s |"
    echo "| \`convert --to parquet\` | $(range convert): **$convert_rate M events/s** | ≥ 5 M events/s |"
    echo "| the Parquet folder | $(awk -v p="$pq_bytes" -v t="$trace_bytes" 'BEGIN { printf "%.1f MiB, %.2f× the `.phos`", p / 1048576, p / t }') | ≤ 1.5× |"
    echo "| \`phosphor stats\` (the same model: the reference) | $(range stats) | |"
} >"$table"
cat "$table"
echo "load at the end: $(cut -d' ' -f1 /proc/loadavg)" >&2
if [ "${UPDATE_BENCHMARKS:-0}" = 1 ]; then
    cargo run --quiet -p phosphor-readme --bin bench-record -- sql --input "$table" \
        --command "UPDATE_BENCHMARKS=1 scripts/bench-sql.sh"
fi
