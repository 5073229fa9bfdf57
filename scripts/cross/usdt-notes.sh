#!/usr/bin/env bash
# usdt-notes.sh BINARY MIN_NOTES: checks the USDT probes of an aarch64 Linux ELF file as gdb,
# SystemTap and bpftrace read them (phosphor-usdt's tests check x86-64 files with gdb; there is
# no aarch64 gdb here). Every NT_STAPSDT note must: point at a `nop` (aarch64 objdump), record
# the address of `.stapsdt.base` as its base, pass each argument in a 64-bit register (`x0`..`x30`,
# `SIZE@xN`), and, when it has a semaphore, point into `.probes`. At least MIN_NOTES notes.
set -eu
bin=$1
min=${2:-1}
objdump=aarch64-linux-gnu-objdump
hexval() { printf '%d' "$1"; }
base=$(readelf -S -W "$bin" | awk '$2 == ".stapsdt.base" { print "0x" $4 }')
[ -n "$base" ] || { echo "$bin: no .stapsdt.base section"; exit 1; }
probes=$(readelf -S -W "$bin" | awk '$2 == ".probes" { print "0x" $4 " 0x" $6 }')
n=0
while read -r provider name loc nbase sem args; do
    n=$((n + 1))
    what="$provider:$name at $loc"
    [ "$(hexval "$nbase")" = "$(hexval "$base")" ] || { echo "$what: base $nbase, not .stapsdt.base $base"; exit 1; }
    insn=$($objdump -d --start-address="$loc" --stop-address=$(($(hexval "$loc") + 4)) "$bin" | awk -F'\t' 'NF >= 3 { print $3 }')
    [ "$insn" = nop ] || { echo "$what: the instruction there is '$insn', not a nop"; exit 1; }
    for a in $args; do
        [[ $a =~ ^-?[1248]@x([0-9]|[12][0-9]|30)$ ]] || { echo "$what: argument '$a' is not SIZE@xN"; exit 1; }
    done
    if [ "$(hexval "$sem")" != 0 ]; then
        read -r start size <<<"$probes"
        [ -n "${start:-}" ] && [ "$(hexval "$sem")" -ge "$(hexval "$start")" ] &&
            [ "$(hexval "$sem")" -lt $(($(hexval "$start") + $(hexval "$size"))) ] ||
            { echo "$what: semaphore $sem outside .probes ($probes)"; exit 1; }
    fi
    echo "ok  $what  base $nbase  semaphore $sem  args: $args"
done < <(readelf -n "$bin" | awk '
    /NT_STAPSDT/ { getline; p = $2; getline; n = $2; getline; l = $2; b = $4; s = $6;
                   getline; sub(/^ *Arguments: */, ""); gsub(/,/, "", l); gsub(/,/, "", b);
                   print p, n, l, b, s, $0 }')
[ "$n" -ge "$min" ] || { echo "$bin: $n USDT notes, expected at least $min"; exit 1; }
echo "$n USDT notes checked"
