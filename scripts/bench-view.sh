#!/usr/bin/env bash
# The benchmark of the trace viewer, `phosphor view` (issue 21's targets).
#
#   scripts/bench-view.sh [--trace FILE] [--big] [--keep] [--query-runs N] [--frames]
#
# Builds the release CLI, makes the demo trace unless --trace is given (11.5 M events, ~354 MiB:
# `phosphor demo --events 2500000 --buffer-mib 1024`, in target/bench-view/demo, reused when there;
# with --big ~3.5 GiB instead, in target/bench-view/demo-big, deleted afterwards unless --keep),
# removes a stale index beside it, and runs scripts/browser/view-bench.mjs in headless Chromium:
#
# - cold launch (no index) and warm launch (the index kept): from the server's start to the page's
#   coarse view and to its complete view drawn, canvases 1600 px wide; the server's peak RSS
#   (VmHWM) at the complete view and over the whole run, in MiB and as a share of the trace file;
# - window queries over HTTP: every track at the whole trace, 1/10, 1/1000 and 1/100000 of it at
#   seeded random places, 1600 px; max and median time, max answer size; the median of N runs
#   (default 3; 1 with --big); /api/search and /api/stats of the whole trace;
# - panning in the browser: phosphorView.pan(±0.02) with a frame between, on the whole trace and
#   zoomed in 100x; median, p95 and max of the page's synchronous redraws (phosphorView.frames);
# - issue 39's figures: frame intervals (requestAnimationFrame, Chromium's frame rate uncapped)
#   while 200 pans and 100 zooms run, p99, and split by what each frame drew (new answers, only
#   the move, nothing: the page's `phosphorView.work` log); new detail drawn after a move (10 pans
#   and 10 zooms each waited for until every track is drawn from fresh answers, and until those in
#   sight are: the page's `phosphorView.fresh` stamp); the statistics of the middle
#   tenth of the trace and the histogram (/api/kind) of its busiest row over it; the server's
#   peak RSS against the trace decoded (`phosphor info`'s compression ratio); the index on disk
#   against the trace file.
#
# With --frames, only the panning and zooming figures (frame intervals, redraws, new detail), on
# one launch that keeps the trace's index (made first if there is none): no cold launch, no
# window queries, no warm launch.
#
# Prints Markdown tables; writes every figure as JSON to target/bench-view/results.json
# (results-big.json with --big). The trace is read from the page cache: "cold" means no index, not
# a cold disk cache.
set -euo pipefail
cd "$(dirname "$0")/.."

trace=""
big=0
keep=0
runs=""
only=""
while [ $# -gt 0 ]; do
    case "$1" in
        --trace) trace="$2"; shift 2 ;;
        --big) big=1; shift ;;
        --keep) keep=1; shift ;;
        --query-runs) runs="$2"; shift 2 ;;
        --frames) only=frames; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

target="${CARGO_TARGET_DIR:-target}"
out="$target/bench-view"
mkdir -p "$out"
cargo build --release -q -p phosphor-cli
bin="$(cd "$target/release" && pwd)/phosphor"
env_dir="$(scripts/browser-env.sh)"

made=""
if [ -z "$trace" ]; then
    if [ "$big" = 1 ] && [ "$keep" = 0 ]; then
        made="$out/demo-big"
    fi
    if [ "$big" = 1 ]; then
        dir="$out/demo-big"
        # 4 workers of 25 M events: ~115 M events, ~3.5 GiB; the buffer must hold all of them.
        events=25000000 buffer=10240 need_gib=24
    else
        dir="$out/demo"
        events=2500000 buffer=1024 need_gib=4
    fi
    trace="$dir/trace.phos"
    if [ ! -s "$trace" ] || [ ! -s "$dir/done" ]; then
        free_gib=$(df -P --block-size=1G "$out" | awk 'NR == 2 { print $4 }')
        # The demo also writes the trace as Perfetto and Chrome JSON (removed right after).
        if [ "$free_gib" -lt "$need_gib" ]; then
            echo "only ${free_gib} GiB free under $out; the demo needs about ${need_gib} GiB" >&2
            exit 1
        fi
        rm -rf "$dir"
        echo "making the demo trace: phosphor demo --events $events --buffer-mib $buffer --out $dir" >&2
        "$bin" demo --events "$events" --buffer-mib "$buffer" --out "$dir" > "$dir.log"
        rm -f "$dir/trace.pftrace" "$dir/trace.json" "$dir/flame.svg"
        echo "$events $buffer" > "$dir/done"
    fi
fi
[ -s "$trace" ] || { echo "no trace at $trace" >&2; exit 1; }
[ "$only" = frames ] || rm -f "$trace.phview"

if [ "$big" = 1 ]; then
    results="$out/results-big.json"
    runs="${runs:-1}"
else
    results="$out/results.json"
    runs="${runs:-3}"
fi
[ "$only" = frames ] && results="${results%.json}-frames.json"
events=$("$bin" info "$trace" | awk '$1 == "events" { gsub(",", "", $2); print $2; exit }')
# The trace decoded (its blocks uncompressed): the file's size times `info`'s compression ratio
# (the file's size when it is not compressed), for the server's RSS as a share of it.
file_bytes=$(stat -c %s "$trace")
decoded=$("$bin" info "$trace" | awk -v f="$file_bytes" '$1 == "compression" { for (i = 2; i < NF; i++) if ($i == "ratio") { r = $(i + 1); gsub(",", "", r); printf "%.0f", f * r; exit } } END { }')
decoded="${decoded:-$file_bytes}"
label="$(awk -v e="${events:-0}" 'BEGIN { printf "%.1f M events", e / 1e6 }')"

status=0
node "$env_dir/view-bench.mjs" --bin "$bin" --trace "$trace" --out "$results" \
    --query-runs "$runs" --label "$label" --decoded-bytes "$decoded" ${only:+--only "$only"} || status=$?
echo
echo "Figures: $results"

# The big demo trace (and its index) is removed unless --keep; a second --big --keep run reuses it.
if [ -n "$made" ]; then
    rm -rf "$made"
    rm -f "$made.log"
fi
exit "$status"
