#!/usr/bin/env bash
# Hostile files (issue 18 §1): wall time and peak RSS of every reading command of a release
# `phosphor` on each of phosphor-craft's hostile shapes, as a Markdown table (BENCHMARKS.md).
#
#   scripts/bench-hostile.sh [--scale bench|test] [--only NAME,...] [--watchdog SECS] [--cap-mib MIB]
#
# The default scale is issue 18's sizes (60 MiB strings, depth 100,000, a million backward
# timestamps, callsites or threads; about 1 GiB of files, in target/bench-hostile/, removed at the
# end unless KEEP=1). Each command's output goes to a pipe that is counted and discarded (a flame
# graph to /dev/null). Peak RSS is the child's own `ru_maxrss` (wait4); a run is killed after
# --watchdog seconds (120) and capped at --cap-mib of address space (8192), so a quadratic reader
# shows as "killed after 120 s" or SIGABRT at the cap instead of taking the machine. The last
# column says whether a run met issue 18's targets: status 0 or 2, at most 10 s, and a peak RSS
# of at most max(128 MiB, 3 × the file).
#
# With UPDATE_BENCHMARKS=1 (the whole catalogue at the bench scale only: no --only, no --scale), the
# rows are folded into a row per file and written into BENCHMARKS.md's `bench:hostile` section
# (crates/phosphor-readme's `bench-record --from hostile`); the full output stays in
# $target/bench-hostile.out either way.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
record=${UPDATE_BENCHMARKS:-0}
if [ "$record" = 1 ] && [ $# -gt 0 ]; then
    echo "UPDATE_BENCHMARKS=1 records the whole catalogue at the bench scale: run it without options" >&2
    exit 2
fi
cargo build --release -q -p phosphor-cli -p phosphor-craft
dir="$target/bench-hostile"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"' EXIT
out="$target/bench-hostile.out"
{
    echo "phosphor $(git rev-parse --short HEAD), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
    echo
    "$target/release/phosphor-craft" bench "$target/release/phosphor" "$dir" "$@"
} | tee "$out"
if [ "$record" = 1 ]; then
    cargo run --quiet -p phosphor-readme --bin bench-record -- hostile --from hostile --input "$out" \
        --command "UPDATE_BENCHMARKS=1 scripts/bench-hostile.sh"
fi
