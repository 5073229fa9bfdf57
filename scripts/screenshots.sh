#!/usr/bin/env bash
# Takes the README's screenshots of the viewer into docs/: the first view of the demo, a 3 µs
# zoom with a slice selected, the flame graph, two demo runs compared, and a live recording.
# Needs the browser environment (scripts/browser-env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
env_dir="$(bash scripts/browser-env.sh)"
cargo build --release -p phosphor-cli --bin phosphor --example live_workload
bin=target/release/phosphor
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# The environment holds the scripts beside their node_modules (browser-env.sh copies them).
shoot() { node "$env_dir/screenshots.mjs" "$@"; }
url_of() { # the first http:// line a command prints on its stdout (file $1)
    for _ in $(seq 600); do
        if grep -qo 'http://[^ ]*' "$1"; then grep -o 'http://[^ ]*' "$1" | head -1; return; fi
        sleep 0.1
    done
    echo "no URL in $1" >&2; exit 1
}
$bin demo --out "$work/a" >/dev/null
$bin demo --out "$work/b" --events 400000 >/dev/null
$bin view --no-open "$work/a/trace.phos" >"$work/view.out" &
shoot "$(url_of "$work/view.out")" docs first zoom:hash flame
$bin view --no-open --compare "$work/a/trace.phos" "$work/b/trace.phos" >"$work/compare.out" &
shoot "$(url_of "$work/compare.out")" "$work" first
mv "$work/view-first.png" docs/view-compare.png
$bin record --listen 127.0.0.1:0 --view 127.0.0.1:0 --no-open --out "$work/live" >"$work/record.out" &
for _ in $(seq 600); do grep -q '^view ' "$work/record.out" && break; sleep 0.1; done
addr=$(sed -n 's/^listening on //p' "$work/record.out")
target/release/examples/live_workload "$addr" 20 &
shoot "$(url_of "$work/record.out")" docs live
echo "screenshots in docs/: view-first.png view-zoom-3us.png view-flame.png view-compare.png view-live-recording.png"
