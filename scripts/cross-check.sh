#!/usr/bin/env bash
# The runtime (`phosphor`) on the platforms other than x86-64 Linux (issue 41, part 5):
#
#   aarch64-unknown-linux-gnu   clippy -D warnings (library, and with its unit tests), the unit
#                               tests under qemu-aarch64, and a trace recorded under qemu
#                               (examples/platform_trace.rs) read back here with `phosphor stats`;
#                               phosphor-usdt's in-process tests under qemu, and the USDT notes of
#                               their binary checked (scripts/cross/usdt-notes.sh);
#   x86_64-pc-windows-gnu       the same under wine.
#
# No other target's standard library can be downloaded here, so this uses Debian's rustc-web
# (with the source of its standard library, for -Zbuild-std), cross C compilers for zstd's C
# code, qemu-user and wine (../shared/PORTABILITY.md has the recipe). It installs what is missing
# (apt-get; nothing when everything is there) and prints a summary; the exit status is the
# number of failed checks (0: all passed).
#
#   scripts/cross-check.sh [aarch64] [windows]      (both when none is named)
#
# Target folders: $CARGO_TARGET_DIR/cross-<target> (default target/), one per target, so the
# standard library built for each is kept between runs (the first run builds it: minutes).
# The host's `phosphor` (for `stats`) is built in $CARGO_TARGET_DIR with the usual toolchain,
# or taken from $PHOSPHOR_BIN.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
HOST_TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
WANT=("$@")
[ ${#WANT[@]} -eq 0 ] && WANT=(aarch64 windows)

. "$ROOT/scripts/cross/lib.sh"
LOGS=$HOST_TARGET/cross-logs
mkdir -p "$LOGS"

# ---- What is needed (idempotent: apt-get runs only when a package is missing) ----
PACKAGES=(rustc-web cargo-web rust-web-src rust-web-clippy gcc-aarch64-linux-gnu libc6-dev-arm64-cross
    qemu-user-static gcc-mingw-w64-x86-64 wine64 wine)
step install install_debs "${PACKAGES[@]}" || { echo "cannot install the toolchains"; exit 1; }

# Debian's compiler and cargo live in /usr/bin; rustup's stay first on PATH, so they are named.
# RUSTC_BOOTSTRAP allows -Zbuild-std on this stable compiler.
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
XCARGO=/usr/bin/cargo
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64-static -L /usr/aarch64-linux-gnu"
export CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine WINEDEBUG=-all
# A Wine prefix of our own, made on first use.
export WINEPREFIX=$HOST_TARGET/cross-wineprefix
BUILD_STD=(-Zbuild-std=std,panic_abort)
# Debian's clippy is 1.96, the workspace's 1.95: two lints it adds are allowed here, not fixed.
# `unwrap_or_default` asks for `unwrap_or_default()` on raw pointers, whose `Default` needs Rust
# 1.88 (the workspace's rust-version is 1.85); `missing_const_for_thread_local` flags
# `thread_local!`s that are `const` already, on Windows only (its expansion differs there).
CLIPPY_ALLOW=(-A clippy::unwrap_or_default -A clippy::missing_const_for_thread_local)

# The host's reader, for the traces recorded on the other targets.
PHOSPHOR=${PHOSPHOR_BIN:-$HOST_TARGET/debug/phosphor}
host_reader() { [ -n "${PHOSPHOR_BIN:-}" ] || env -u RUSTC -u RUSTDOC -u RUSTC_BOOTSTRAP cargo build -p phosphor-cli; }
step host-phosphor-cli host_reader

# read_back FILE SHORT: the host's `phosphor stats` reads FILE and counts the 1,616 events the
# example wrote; on aarch64 the trace must be stamped by cntvct_el0, not the CLOCK_MONOTONIC fallback.
read_back() {
    "$PHOSPHOR" stats "$1" && "$PHOSPHOR" stats "$1" | grep -q "all 1,616 recorded" || return 1
    "$PHOSPHOR" info "$1" | grep "clock" || return 1
    if [ "$2" = aarch64 ] && ! "$PHOSPHOR" info "$1" | grep -q "clock  *CPU counter"; then
        echo "the aarch64 trace fell back from cntvct_el0"
        return 1
    fi
}

# usdt_notes LOG: the test binary that LOG says cargo ran, checked by scripts/cross/usdt-notes.sh.
usdt_notes() {
    local bin
    bin=$(sed -n 's/.*Running tests\/it\/main.rs (\(.*\))$/\1/p' "$1" | head -n 1)
    [ -n "$bin" ] || { echo "no test binary named in $1"; return 1; }
    scripts/cross/usdt-notes.sh "$bin" 9
}

check_target() { # check_target SHORT TRIPLE RUN...
    local short=$1 triple=$2
    shift 2
    local dir=$HOST_TARGET/cross-$short
    local xc=(env CARGO_TARGET_DIR="$dir" PATH="/usr/bin:$PATH" $XCARGO)
    step "$short-clippy-lib" "${xc[@]}" clippy "${BUILD_STD[@]}" --target "$triple" -p phosphor --lib \
        -- -D warnings "${CLIPPY_ALLOW[@]}"
    step "$short-clippy-unit-tests" "${xc[@]}" clippy "${BUILD_STD[@]}" --target "$triple" -p phosphor --lib \
        --profile test -- -D warnings "${CLIPPY_ALLOW[@]}"
    if [ "$short" = windows ]; then
        # Wine 8.0 lacks bcryptprimitives.dll's ProcessPrng, which Rust's standard library
        # imports: a stand-in next to each .exe (scripts/cross/bcryptprimitives.c).
        local dll=$dir/bcryptprimitives.dll
        step windows-prng-stand-in x86_64-w64-mingw32-gcc -shared -O2 -o "$dll" scripts/cross/bcryptprimitives.c -ladvapi32
        mkdir -p "$dir/$triple/debug/deps" "$dir/$triple/debug/examples"
        cp "$dll" "$dir/$triple/debug/deps/" && cp "$dll" "$dir/$triple/debug/examples/"
    fi
    step "$short-unit-tests" "${xc[@]}" test "${BUILD_STD[@]}" --target "$triple" -p phosphor --lib
    if [ "$short" = aarch64 ]; then
        # USDT probes on aarch64: the macros' own tests run under qemu (semaphores, every argument
        # type), and the notes of that test binary are checked as the tools read them.
        step aarch64-usdt-in-process "${xc[@]}" test "${BUILD_STD[@]}" --target "$triple" -p phosphor-usdt \
            --test it in_process
        step aarch64-usdt-notes usdt_notes "$LOGS/aarch64-usdt-in-process.log"
    fi
    step "$short-build-example" "${xc[@]}" build "${BUILD_STD[@]}" --target "$triple" -p phosphor --example platform_trace
    local exe=$dir/$triple/debug/examples/platform_trace
    [ "$short" = windows ] && exe=$exe.exe
    local out=$dir/platform-$short.phos
    rm -f "$out"
    step "$short-record-trace" "$@" "$exe" "$out"
    step "$short-trace-reads-on-host" read_back "$out" "$short"
}

for t in "${WANT[@]}"; do
    case $t in
        aarch64) check_target aarch64 aarch64-unknown-linux-gnu qemu-aarch64-static -L /usr/aarch64-linux-gnu ;;
        windows) check_target windows x86_64-pc-windows-gnu wine ;;
        *) echo "unknown target $t (aarch64, windows)"; exit 2 ;;
    esac
done

echo
echo "cross-check summary ($(($(date +%s) - START)) s; logs in $LOGS)"
printf '%s\n' "${SUMMARY[@]}"
for t in "${WANT[@]}"; do
    f=$LOGS/$t-trace-reads-on-host.log
    [ -f "$f" ] && echo "  $t trace: $(grep -m1 "clock " "$f" | sed 's/^ *//')"
done
exit $FAILED
