#!/usr/bin/env bash
# Creates the Python environment the tests use, in target/pyenv, and prints its interpreter's path.
# Tests find it there (or through $PHOSPHOR_PYTHON). Idempotent: a second run only checks it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${CARGO_TARGET_DIR:-target}/pyenv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt >&2
echo "$(cd "$venv" && pwd)/bin/python"
