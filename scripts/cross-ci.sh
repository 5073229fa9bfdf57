#!/usr/bin/env bash
# CI's cross step (issue 41, part 5), run by .ci/run: the runtime (`phosphor`) on the three
# platforms other than x86-64 Linux, as much as fits in CI's 30 minutes on 2 cores:
#
#   x86_64-pc-windows-gnu: the runtime's unit tests (`-p phosphor --lib`) built and run under
#       wine, and examples/platform_trace.rs built and run under wine, its trace read back here
#       by the host's `phosphor stats` (every event) and `info` (the clock);
#   aarch64-unknown-linux-gnu and aarch64-apple-darwin: the library type-checked (no SDK here
#       for macOS, so nothing is linked);
#   on all three, clippy -D warnings of what is compiled: the library (`--lib`), and on Windows
#   its unit tests, the example, and the workspace crates they use (phosphor-format,
#   phosphor-usdt, phosphor-macros; with the tests, phosphor-otlp, phosphor-limit,
#   phosphor-testalloc);
#   with CROSS_TARGETS naming `aarch64` (not CI's default: it does not fit), the unit tests and
#   the example under qemu-aarch64 too, as on Windows.
#
# Clippy runs inside those builds: clippy-driver is the compiler of the workspace's crates
# (RUSTC_WORKSPACE_WRAPPER, with its arguments in CLIPPY_ARGS, as `cargo clippy` sets them), so
# the code built for the tests is linted as it is compiled, instead of a second, check-only pass
# per target over the standard library and every dependency. A lint fails the build.
#
# What does not fit in CI: the aarch64 runtime under qemu (CROSS_TARGETS below, or
# scripts/cross-check.sh, which also checks the USDT notes of an aarch64 build), and phosphor-cli
# and the rest of the workspace for the three targets (scripts/cross-lean.sh: phosphor-cli).
#
# One target folder, $CARGO_TARGET_DIR/cross-ci (default target/), for all three targets: the
# host's build scripts and proc macros are built once (by Debian's compiler). Toolchains come as
# in ../shared/PORTABILITY.md (Debian's rustc-web with -Zbuild-std, cross gcc, qemu-user, wine).
#
#   scripts/cross-ci.sh install   only installs what is missing (apt-get; .ci/run starts it early)
#   scripts/cross-ci.sh           installs what is missing, then checks
#   CROSS_TARGETS="macos windows aarch64" scripts/cross-ci.sh   (see TARGETS below)
#
# The host's reader is $PHOSPHOR_BIN, or $CARGO_TARGET_DIR/debug/phosphor (built by the test step
# of .ci/run; built here when missing). Prints a summary with each step's wall and CPU time; the
# exit status is the number of failed steps.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
HOST_TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
DIR=$HOST_TARGET/cross-ci
LOGS=$DIR/logs
mkdir -p "$LOGS"
. "$ROOT/scripts/cross/lib.sh"

# What runs: CROSS_TARGETS, words among
#   macos          clippy of the library for aarch64-apple-darwin (type-checked)
#   aarch64-check  clippy of the library for aarch64-unknown-linux-gnu (type-checked)
#   windows        Windows: unit tests and the example built (linted) and run under wine
#   aarch64-trace  aarch64 Linux: examples/platform_trace.rs built without the dev-dependencies
#                  (a package of its own, made in the target folder) and run under qemu, its
#                  trace read back here
#   aarch64        aarch64 Linux: the unit tests and the example as on Windows, under qemu
# CI's default is the first four: `aarch64` does not fit in CI's 30 minutes (a second standard
# library and every dev-dependency built for a second target; bench/results/2026-12-06b-ci.md).
TARGETS=" ${CROSS_TARGETS:-macos aarch64-check windows aarch64-trace} "

PACKAGES=(rustc-web cargo-web rust-web-src rust-web-clippy gcc-mingw-w64-x86-64 wine64 wine)
[[ $TARGETS == *" aarch64 "* || $TARGETS == *" aarch64-trace "* ]] &&
    PACKAGES+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static)
if [ "${1:-}" = install ]; then
    install_debs "${PACKAGES[@]}"
    exit
fi
step install install_debs "${PACKAGES[@]}" || { echo "cannot install the toolchains"; exit 1; }

# Debian's compiler and cargo live in /usr/bin; rustup's stay first on PATH, so they are named.
# RUSTC_BOOTSTRAP allows -Zbuild-std on this stable compiler.
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64-static -L /usr/aarch64-linux-gnu"
export CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine WINEDEBUG=-all
# macOS is only type-checked: the C code of build scripts (zstd's) is never linked, so a stand-in
# compiler that writes empty objects does (there is no macOS compiler here).
export CC_aarch64_apple_darwin=$ROOT/scripts/cross/check-cc.sh AR_aarch64_apple_darwin=ar
# A Wine prefix of our own, made on first use.
export WINEPREFIX=$HOST_TARGET/cross-wineprefix
# Nothing here is built twice, and the debug info of test binaries is not read.
export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
# Clippy as the workspace crates' compiler. Debian's clippy is 1.96, the workspace's 1.95: two
# lints it adds are allowed here, not fixed (scripts/cross-check.sh says why).
export RUSTC_WORKSPACE_WRAPPER=/usr/bin/clippy-driver
# (CLIPPY_ARGS is one string, the arguments joined as `cargo clippy` joins them; bash cannot
# export an array.)
LINTS=(-D warnings -A clippy::unwrap_or_default -A clippy::missing_const_for_thread_local)
CLIPPY_ARGS=$(printf '%s__CLIPPY_HACKERY__' "${LINTS[@]}")
export CLIPPY_ARGS
XC=(env CARGO_TARGET_DIR="$DIR" PATH="/usr/bin:$PATH" /usr/bin/cargo)
BUILD_STD=(-Zbuild-std=std,panic_abort)

if [[ $TARGETS != *" aarch64 "* && $TARGETS != *" aarch64-trace "* ]]; then
    # Only type-checked: zstd's C code is never linked, so the stand-in compiler will do.
    export CC_aarch64_unknown_linux_gnu=$ROOT/scripts/cross/check-cc.sh AR_aarch64_unknown_linux_gnu=ar
fi

# Type-checked and linted (`cargo check` with clippy as the compiler is `cargo clippy`).
[[ $TARGETS == *" macos "* ]] && step clippy-aarch64-apple-darwin "${XC[@]}" check "${BUILD_STD[@]}" --locked \
    --target aarch64-apple-darwin -p phosphor --lib
[[ $TARGETS == *" aarch64-check "* && $TARGETS != *" aarch64 "* ]] && step clippy-aarch64-unknown-linux-gnu \
    "${XC[@]}" check "${BUILD_STD[@]}" --locked --target aarch64-unknown-linux-gnu -p phosphor --lib

# The host's reader of the traces recorded on the other targets.
PHOSPHOR=${PHOSPHOR_BIN:-$HOST_TARGET/debug/phosphor}
host_reader() {
    [ -x "$PHOSPHOR" ] && return
    [ -z "${PHOSPHOR_BIN:-}" ] || { echo "PHOSPHOR_BIN=$PHOSPHOR_BIN is not a program"; return 1; }
    env -u RUSTC -u RUSTDOC -u RUSTC_BOOTSTRAP -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS \
        CARGO_TARGET_DIR="$HOST_TARGET" cargo build --locked -p phosphor-cli
}

# read_back FILE: the host's `phosphor stats` reads FILE and counts the 1,616 events the example
# wrote; `info` names the clock.
read_back() {
    "$PHOSPHOR" stats "$1" | tee "$1.stats" | grep -q "all 1,616 recorded" || { cat "$1.stats"; return 1; }
    "$PHOSPHOR" info "$1" | grep "clock"
}

# run_target SHORT TRIPLE RUN...: unit tests and the example built (and linted), both run with
# RUN, the trace read back.
run_target() {
    local short=$1 triple=$2
    shift 2
    local out=$DIR/$triple/debug
    if [ "$short" = windows ]; then
        # Wine 8.0 lacks bcryptprimitives.dll's ProcessPrng, which Rust's standard library
        # imports: a stand-in next to each .exe (scripts/cross/bcryptprimitives.c).
        mkdir -p "$out/deps" "$out/examples"
        step windows-prng-stand-in x86_64-w64-mingw32-gcc -shared -O2 -o "$out/deps/bcryptprimitives.dll" \
            scripts/cross/bcryptprimitives.c -ladvapi32 && cp "$out/deps/bcryptprimitives.dll" "$out/examples/"
    fi
    # The unit tests, built (and linted) then run. The example is not built by this `cargo test`
    # (it would be compiled with the test harness: a program that runs no test and records
    # nothing) but as the package of its own below, which has phosphor's dependencies only.
    local tests=("${XC[@]}" test "${BUILD_STD[@]}" --locked --target "$triple" -p phosphor --lib)
    step "$short-build-tests" "${tests[@]}" --no-run
    step "$short-unit-tests" "${tests[@]}"
    step "$short-build-trace-program" trace_program "$triple"
    local exe=$DIR/$triple/debug/platform_trace trace=$DIR/platform-$short.phos
    if [ "$short" = windows ]; then
        exe=$exe.exe
        cp "$out/deps/bcryptprimitives.dll" "$DIR/$triple/debug/"
    fi
    rm -f "$trace"
    step "$short-record-trace" "$@" "$exe" "$trace"
    step "$short-trace-reads-on-host" read_back "$trace"
}

[[ $TARGETS == *" windows "* || $TARGETS == *" aarch64"* ]] && step host-reader host_reader
# trace_program TRIPLE: the example as the only program of a package of its own (in the target
# folder, with the workspace's Cargo.lock, so the same versions), which has phosphor's
# dependencies and none of its dev-dependencies (an example of phosphor's would build them all),
# built for TRIPLE into $DIR/TRIPLE/debug/platform_trace.
trace_program() {
    local pkg=$DIR/platform-trace
    mkdir -p "$pkg"
    printf '%s\n' '[package]' 'name = "platform-trace"' 'version = "0.0.0"' 'edition = "2021"' \
        'publish = false' '' '[workspace]' '' '[[bin]]' 'name = "platform_trace"' \
        "path = \"$ROOT/crates/phosphor/examples/platform_trace.rs\"" '' '[dependencies]' \
        "phosphor = { path = \"$ROOT/crates/phosphor\" }" >"$pkg/Cargo.toml"
    cp Cargo.lock "$pkg/Cargo.lock"
    # Not --locked: cargo drops the lock's entries this package does not use, and keeps the versions
    # of the rest (checked with `cargo tree`: 41 packages, no version changed).
    "${XC[@]}" build "${BUILD_STD[@]}" --manifest-path "$pkg/Cargo.toml" --target "$1"
}
if [[ $TARGETS == *" aarch64-trace "* && $TARGETS != *" aarch64 "* ]]; then
    step aarch64-build-trace-program trace_program aarch64-unknown-linux-gnu
    trace=$DIR/platform-aarch64.phos
    rm -f "$trace"
    step aarch64-record-trace qemu-aarch64-static -L /usr/aarch64-linux-gnu \
        "$DIR/aarch64-unknown-linux-gnu/debug/platform_trace" "$trace"
    step aarch64-trace-reads-on-host read_back "$trace"
fi

[[ $TARGETS == *" windows "* ]] && run_target windows x86_64-pc-windows-gnu wine
[[ $TARGETS == *" aarch64 "* ]] && run_target aarch64 aarch64-unknown-linux-gnu qemu-aarch64-static -L /usr/aarch64-linux-gnu

echo
echo "cross-ci summary ($(($(date +%s) - START)) s; logs in $LOGS)"
printf '%s\n' "${SUMMARY[@]}"
for t in windows aarch64; do
    f=$LOGS/$t-trace-reads-on-host.log
    [ -f "$f" ] && echo "  $t trace: $(grep -m1 "clock" "$f" | sed 's/^ *//')"
done
exit $FAILED
