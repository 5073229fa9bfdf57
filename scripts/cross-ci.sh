#!/usr/bin/env bash
# CI's cross step (issue 41, part 5), run by .ci/run: the workspace's portable crates on the three
# platforms other than x86-64 Linux:
#
#   clippy -D warnings of the runtime (`phosphor`) for aarch64-apple-darwin, type-checked (no SDK
#       here for macOS, so nothing is linked there); on Windows and aarch64 Linux the runtime is
#       linted as its unit tests build. With CROSS_CHECK_ALL=1 (what .ci/run sets), on all three,
#       the runtime, the tool (`phosphor-cli`, the `phosphor` binary) and the viewer
#       (`phosphor-view`), with every workspace crate they use and the runtime's test helpers
#       (phosphor-limit, phosphor-testalloc): about 520 CPU-s more (bench/results/2026-12-06d-ci.md,
#       2026-12-07a-ci.md);
#   x86_64-pc-windows-gnu and aarch64-unknown-linux-gnu: the runtime's unit tests built (linted)
#       and run under wine and qemu-aarch64, and examples/platform_trace.rs built and run under
#       them, its trace read back here by the host's `phosphor stats` (every event) and `info`
#       (the clock).
#
# Left out: phosphor-sql (DataFusion: about as much to check per target as the rest together, and
# `phosphor sql` is an optional feature of the tool) and phosphor-py (a workspace of its own, an
# extension module for the host's Python); the tracing and log bridges, the compile-out and facade
# checks, the readme and bench crates (host-side checks of the runtime's API, which the runtime's
# own check covers on each target); scripts/cross-check.sh has the USDT notes of an aarch64 build.
#
# Clippy runs inside those builds: clippy-driver is the compiler of the workspace's crates
# (RUSTC_WORKSPACE_WRAPPER, with its arguments in CLIPPY_ARGS, as `cargo clippy` sets them): the
# check of each target is `cargo clippy`, and the code built for the tests is linted as it is
# compiled. A lint fails the build.
#
# The unit tests are those of `cargo test -p phosphor --lib`, built from a copy of the runtime's
# manifest without its dev-dependencies (scripts/cross/lean-manifest.py: the unit tests use none
# of them, and they were 70 of the 106 packages a Windows test build compiled).
#
# One target folder, $CARGO_TARGET_DIR/cross-ci (default target/), for all three targets: the
# host's build scripts and proc macros are built once (by Debian's compiler). Toolchains come as in
# ../shared/PORTABILITY.md (Debian's rustc-web with -Zbuild-std, cross gcc, qemu-user, wine).
#
#   scripts/cross-ci.sh install   only installs what is missing (apt-get; .ci/run starts it early)
#   scripts/cross-ci.sh           installs what is missing, then checks
#   CROSS_TARGETS="macos windows" scripts/cross-ci.sh   (see TARGETS below)
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
#   macos          clippy of CHECKED (below) for aarch64-apple-darwin
#   aarch64-check  the same for aarch64-unknown-linux-gnu (without `aarch64`, or CROSS_CHECK_ALL=1)
#   windows-check  the same for x86_64-pc-windows-gnu
#   windows        Windows: the runtime's unit tests built (linted) and run under wine, and
#                  examples/platform_trace.rs built without the dev-dependencies (a package of its
#                  own, made in the target folder) and run under wine, its trace read back here
#   aarch64        aarch64 Linux: the same under qemu
#   aarch64-trace  aarch64 Linux: the trace program alone (without `aarch64`)
# CI's default: macos windows aarch64; CROSS_CHECK_ALL=1 adds aarch64-check and windows-check.
TARGETS=" ${CROSS_TARGETS:-macos windows aarch64} "
# The crates checked: the runtime; with CROSS_CHECK_ALL=1 the tool, the viewer, the bridges
# programs take Phosphor up with (`tracing`, `log`, the facade with its `enable` feature) and the
# runtime's test helpers too (with every workspace crate they depend on).
CHECKED=(-p phosphor)
if [ "${CROSS_CHECK_ALL:-0}" = 1 ]; then
    CHECKED=(-p phosphor -p phosphor-cli -p phosphor-view -p phosphor-limit -p phosphor-testalloc
        -p phosphor-tracing -p phosphor-log -p phosphor-facade --features phosphor-facade/enable)
    TARGETS="$TARGETS aarch64-check windows-check "
fi

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

# Type-checked and linted (`cargo check` with clippy as the compiler is `cargo clippy`): one cargo
# per target, so the dependencies shared by the crates are checked once.
[[ $TARGETS == *" macos "* ]] && step clippy-aarch64-apple-darwin "${XC[@]}" check "${BUILD_STD[@]}" --locked \
    --target aarch64-apple-darwin "${CHECKED[@]}"
[[ $TARGETS == *" aarch64-check "* && ($TARGETS != *" aarch64 "* || ${CROSS_CHECK_ALL:-0} = 1) ]] &&
    step clippy-aarch64-unknown-linux-gnu \
    "${XC[@]}" check "${BUILD_STD[@]}" --locked --target aarch64-unknown-linux-gnu "${CHECKED[@]}"
[[ $TARGETS == *" windows-check "* ]] && step clippy-x86_64-pc-windows-gnu \
    "${XC[@]}" check "${BUILD_STD[@]}" --locked --target x86_64-pc-windows-gnu "${CHECKED[@]}"

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
    # The unit tests, built (and linted) then run: `cargo test -p phosphor --lib` of the package
    # without dev-dependencies (lean_package), with the features the real package's dev-dependency
    # on itself turns on for its tests. The example is not built by this `cargo test` (it would be
    # compiled with the test harness: a program that runs no test and records nothing) but as the
    # package of its own below, which has phosphor's dependencies only.
    local tests=("${XC[@]}" test "${BUILD_STD[@]}" --manifest-path "$DIR/phosphor-lean/Cargo.toml"
        --target "$triple" --features test-hooks,tokio --lib)
    step "$short-build-tests" "${tests[@]}" --no-run
    # Under qemu one test is left out: it reads a saved trace cut at every byte offset (pure byte
    # parsing, no clock, atomic or platform call), which emulated takes ten minutes of CI's CPU;
    # it runs on the host and under wine.
    local skip=()
    [ "$short" = aarch64 ] && skip=(-- --skip output::trace_file::tests::a_saved_trace_cut_at_every_offset)
    step "$short-unit-tests" "${tests[@]}" "${skip[@]}"
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
# lean_package: the runtime's package without its dev-dependencies, for its unit tests
# (scripts/cross/lean-manifest.py), in the target folder with the workspace's Cargo.lock (not
# --locked: cargo drops the entries the package does not use and keeps the versions of the rest).
lean_package() {
    local pkg=$DIR/phosphor-lean
    mkdir -p "$pkg"
    python3 scripts/cross/lean-manifest.py "$ROOT" >"$pkg/Cargo.toml.new" || return 1
    # Rewritten only when it changes, so that a warm folder's build stays fresh.
    cmp -s "$pkg/Cargo.toml.new" "$pkg/Cargo.toml" || mv "$pkg/Cargo.toml.new" "$pkg/Cargo.toml"
    rm -f "$pkg/Cargo.toml.new"
    cp Cargo.lock "$pkg/Cargo.lock"
    cat "$pkg/Cargo.toml"
}
[[ $TARGETS == *" windows "* || $TARGETS == *" aarch64 "* ]] && step lean-package lean_package
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

# With CROSS_CI_CLEAN=1 (.ci/run sets it: the disk of a CI machine is not without end), a target's
# build folder goes once its steps are done (about 200 to 360 MB each, and wine's 700 MB prefix).
done_with() {
    [ "${CROSS_CI_CLEAN:-0}" = 1 ] || return 0
    rm -rf "${@/#/$DIR/}"
}
[[ $TARGETS == *" windows "* ]] && run_target windows x86_64-pc-windows-gnu wine
done_with x86_64-pc-windows-gnu
[ "${CROSS_CI_CLEAN:-0}" = 1 ] && rm -rf "$WINEPREFIX"
[[ $TARGETS == *" aarch64 "* ]] && run_target aarch64 aarch64-unknown-linux-gnu qemu-aarch64-static -L /usr/aarch64-linux-gnu
done_with aarch64-unknown-linux-gnu aarch64-apple-darwin debug

echo
echo "cross-ci summary ($(($(date +%s) - START)) s; logs in $LOGS)"
printf '%s\n' "${SUMMARY[@]}"
for t in windows aarch64; do
    f=$LOGS/$t-trace-reads-on-host.log
    [ -f "$f" ] && echo "  $t trace: $(grep -m1 "clock" "$f" | sed 's/^ *//')"
done
exit $FAILED
