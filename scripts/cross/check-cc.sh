#!/usr/bin/env bash
# A stand-in C compiler for targets that are only type-checked (`cargo check`/`clippy`), such as
# aarch64-apple-darwin, which cannot be compiled for here (no SDK): check links nothing, so the C
# code that build scripts compile (zstd's) is never used, but the build scripts still run their
# compiler. This writes an empty file for each object asked for (-o OUT, or -FoOUT) and
# preprocesses with the host's gcc for -E. scripts/cross-lean.sh sets it as the C compiler of
# aarch64 Linux and macOS; never part of a Phosphor build.
out=
pre=0
prev=
for a in "$@"; do
    case $a in
        -E) pre=1 ;;
        -Fo*) out=${a#-Fo} ;;
    esac
    [ "$prev" = -o ] && out=$a
    prev=$a
done
if [ "$pre" = 1 ]; then
    args=()
    for a in "$@"; do
        case $a in -arch | arm64 | -mmacosx-version-min=* | --target=* | -target) ;; *) args+=("$a") ;; esac
    done
    exec gcc "${args[@]}"
fi
[ -n "$out" ] && : >"$out"
exit 0
