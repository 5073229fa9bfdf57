#!/usr/bin/env bash
# Runs the fuzz targets (fuzz/README.md) one after the other, each for SECONDS (default 300), with
# memory and time blow-ups counted as findings:
#
#   scripts/fuzz.sh [SECONDS] [TARGET ...]      (targets: craft read_file export control compressed; default all)
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`) and a nightly toolchain. Each target's
# growing corpus is fuzz/corpus/TARGET (ignored by git); the committed seeds (fuzz/seeds/files,
# and the golden files of every format version) are read as a second corpus. Findings (crash-*,
# oom-*, timeout-*, slow-unit-*) land in fuzz/artifacts/TARGET; replay one with
# `cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/FILE`.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-300}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(craft read_file export control compressed)

# A run that takes more than 2 GiB or 30 s on one input is a finding: the reader promises bounded
# memory, and the hostile shapes of issue 18 must not cost minutes.
common=(-rss_limit_mb=2048 -timeout=30 -max_total_time="$seconds" -print_final_stats=1)

failed=()
for t in "${targets[@]}"; do
    case "$t" in
        # Raw bytes up to 1 MiB: room for a chunk of thousands of records and large tables (the
        # default 4 KiB holds a file of a few events).
        read_file | export) extra=(-max_len=1048576) ; seeds=(fuzz/seeds/files crates/phosphor-format/tests/data) ;;
        # Its input describes a file: 4 KiB of description make files of tens of MiB.
        craft) extra=(-max_len=4096) ; seeds=(fuzz/seeds/craft) ;;
        # The blocks of one compressed group (format 1.7), up to 256 KiB of them.
        compressed) extra=(-max_len=262144) ; seeds=(fuzz/seeds/compressed) ;;
        control) extra=(-max_len=4096) ; seeds=() ;;
        *) echo "unknown target $t" >&2; exit 2 ;;
    esac
    mkdir -p "fuzz/corpus/$t"
    echo "== $t: ${seconds} s"
    # Absolute paths: the fuzz binary does not run in this directory. New inputs go to the first.
    dirs=("$PWD/fuzz/corpus/$t")
    for s in "${seeds[@]}"; do dirs+=("$PWD/$s"); done
    # The build first, so that a target that does not compile is not taken for a finding.
    cargo +nightly fuzz build "$t" || { echo "== $t does not build" >&2; failed+=("$t"); continue; }
    cargo +nightly fuzz run "$t" "${dirs[@]}" -- "${common[@]}" "${extra[@]}" || {
        echo "== $t stopped on a finding: see fuzz/artifacts/$t" >&2
        failed+=("$t")
    }
done
# Every target runs even when one fails; the status says whether any did.
if [ ${#failed[@]} -gt 0 ]; then
    echo "== failed: ${failed[*]}" >&2
    exit 1
fi
