#!/usr/bin/env bash
# The divan benchmark of the hot path (crates/phosphor/benches/hot_path.rs): every scenario's
# median per event, and its ratio to the limit loop measured in the same process and run.
#
#   scripts/bench-hot-path.sh                       # prints divan's output
#   UPDATE_BENCHMARKS=1 scripts/bench-hot-path.sh   # also writes the table of medians and ratios
#                                                   # into BENCHMARKS.md (section `bench:hot-path-divan`)
#
# Runs under `nice -n 10` (other jobs share the machine: the ratios, not the nanoseconds, are the
# figures). divan's output stays in $CARGO_TARGET_DIR/bench-hot-path.out (else target/).
# The table is made by crates/phosphor-readme's `bench-record --from divan`, which fails (and
# writes nothing) when the output has no benchmark rows or no `limit_loop`.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
out="$target/bench-hot-path.out"
mkdir -p "$target"
echo "phosphor $(git rev-parse --short HEAD), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
nice -n 10 cargo bench -q -p phosphor --bench hot_path -- --color never | tee "$out"
echo "load at the end: $(cut -d' ' -f1 /proc/loadavg)"
if [ "${UPDATE_BENCHMARKS:-0}" = 1 ]; then
    cargo run --quiet -p phosphor-readme --bin bench-record -- hot-path-divan --from divan \
        --baseline limit_loop --input "$out" --command "UPDATE_BENCHMARKS=1 scripts/bench-hot-path.sh"
fi
