#!/usr/bin/env bash
# Builds the Python module's release wheel, installs it into the tests' Python environment, and
# runs its benchmark (crates/phosphor-py/benches/calls.py; extra arguments go to it).
set -euo pipefail
cd "$(dirname "$0")/.."
python="$(bash scripts/python-env.sh)"
out="${CARGO_TARGET_DIR:-target}/pywheels-release"
rm -rf "$out"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/pyext-release" \
    "$python" -m maturin build --release --locked -q -i "$python" -m crates/phosphor-py/Cargo.toml --out "$out"
"$python" -m pip install -q --force-reinstall --no-deps "$out"/*.whl
"$python" crates/phosphor-py/benches/calls.py "$@"
