#!/usr/bin/env bash
# The lean cross check (issue 41, part 5), run by hand: what CI's cross step
# (scripts/cross-ci.sh: the runtime alone, linted, tested and recording on the three targets)
# has no time for, the `phosphor` tool and viewer for the three targets:
#
#   clippy -D warnings of `phosphor` (the runtime) and `phosphor-cli` (the `phosphor` tool, with
#   the viewer) for aarch64-unknown-linux-gnu, x86_64-pc-windows-gnu and aarch64-apple-darwin
#   (type-checked only: nothing is compiled to code), then the runtime's unit tests under wine
#   (`-p phosphor --lib`, x86_64-pc-windows-gnu): the one platform whose code paths differ most
#   (clock, thread ids, heavy barrier) and that runs here at native speed.
#
# scripts/cross-check.sh is the full check (unit tests under qemu too, traces recorded under
# qemu and wine and read back on the host, USDT notes of an aarch64 build): about 20 minutes cold.
#
# All three targets share one target folder, $CARGO_TARGET_DIR/cross-lean (default target/), so
# the build scripts and proc macros are built once for the host. The first run builds the standard
# library's metadata for each target and the whole of it for Windows. Toolchains come as in
# cross-check.sh (Debian's rustc-web with -Zbuild-std; ../shared/PORTABILITY.md has the recipe).
# Prints a summary; the exit status is the number of failed steps. TRIPLES="t1 t2" limits the
# clippy steps to those targets, and WINE_TESTS=0 skips the tests under wine.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
HOST_TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
DIR=$HOST_TARGET/cross-lean
LOGS=$DIR/logs
mkdir -p "$LOGS"
. "$ROOT/scripts/cross/lib.sh"

PACKAGES=(rustc-web cargo-web rust-web-src rust-web-clippy gcc-mingw-w64-x86-64 wine64
    wine)
step install install_debs "${PACKAGES[@]}" || { echo "cannot install the toolchains"; exit 1; }

export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
# aarch64 Linux and macOS are only type-checked: the C code of build scripts (zstd's) is never
# linked, so a stand-in compiler that writes empty objects does (macOS has no compiler here, and
# aarch64 Linux needs no cross compiler installed for this).
export CC_aarch64_unknown_linux_gnu=$ROOT/scripts/cross/check-cc.sh AR_aarch64_unknown_linux_gnu=ar
export CC_aarch64_apple_darwin=$ROOT/scripts/cross/check-cc.sh AR_aarch64_apple_darwin=ar
export CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine WINEDEBUG=-all
export WINEPREFIX=$HOST_TARGET/cross-wineprefix
XC=(env CARGO_TARGET_DIR="$DIR" PATH="/usr/bin:$PATH" /usr/bin/cargo)
BUILD_STD=(-Zbuild-std=std,panic_abort)
# Debian's clippy is 1.96, the workspace's 1.95: the two lints it adds are allowed (see
# cross-check.sh for why each is not fixed).
CLIPPY_ALLOW=(-A clippy::unwrap_or_default -A clippy::missing_const_for_thread_local)

for triple in ${TRIPLES:-aarch64-unknown-linux-gnu x86_64-pc-windows-gnu aarch64-apple-darwin}; do
    step "clippy-$triple" "${XC[@]}" clippy "${BUILD_STD[@]}" --locked --target "$triple" -p phosphor -p phosphor-cli \
        -- -D warnings "${CLIPPY_ALLOW[@]}"
done

if [ "${WINE_TESTS:-1}" != 0 ]; then
    # Wine 8.0 lacks bcryptprimitives.dll's ProcessPrng, which Rust's standard library imports: a
    # stand-in next to the test binary (scripts/cross/bcryptprimitives.c).
    W=$DIR/x86_64-pc-windows-gnu/debug/deps
    mkdir -p "$W"
    step windows-prng-stand-in x86_64-w64-mingw32-gcc -shared -O2 -o "$W/bcryptprimitives.dll" \
        scripts/cross/bcryptprimitives.c -ladvapi32
    step windows-unit-tests "${XC[@]}" test "${BUILD_STD[@]}" --locked --target x86_64-pc-windows-gnu -p phosphor --lib
fi

echo
echo "cross-lean summary ($(($(date +%s) - START)) s; logs in $LOGS)"
printf '%s\n' "${SUMMARY[@]}"
exit $FAILED
