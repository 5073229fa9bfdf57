#!/usr/bin/env bash
# Creates what the browser tests use, in target/browser-env: speedscope and puppeteer-core from npm
# (the versions pinned in scripts/browser/package-lock.json), next to the check scripts; and
# Debian's chromium when it is missing (as root; CI runs as root). Prints the directory. Tests find
# it there (or through $PHOSPHOR_BROWSER_ENV). Idempotent: a second run only checks it.
set -euo pipefail
cd "$(dirname "$0")/.."
env_dir="${CARGO_TARGET_DIR:-target}/browser-env"
mkdir -p "$env_dir"
if ! command -v "${CHROMIUM:-chromium}" >/dev/null; then
    apt-get update -qq >&2 && apt-get install -y -qq chromium >&2
fi
if ! command -v npm >/dev/null; then
    apt-get update -qq >&2 && apt-get install -y -qq nodejs npm >&2
fi
cp scripts/browser/package.json scripts/browser/package-lock.json scripts/browser/*.mjs "$env_dir/"
if ! cmp -s scripts/browser/package-lock.json "$env_dir/node_modules/.package-lock.json.installed" 2>/dev/null; then
    (cd "$env_dir" && npm ci --silent --no-audit --no-fund >&2)
    cp scripts/browser/package-lock.json "$env_dir/node_modules/.package-lock.json.installed"
fi
echo "$(cd "$env_dir" && pwd)"
