# Sourced by scripts/cross-check.sh and scripts/cross-lean.sh.
#
# `step NAME COMMAND...` runs the
# command with its output in $LOGS/NAME.log, and records PASS or FAIL with its time (wall, and the
# CPU time, user + sys, of the processes it ran) in SUMMARY (printed by the caller at the end); a
# failure counts in FAILED and shows the log's tail. The caller sets LOGS and creates it.
SUMMARY=()
FAILED=0
START=$(date +%s)

# `children_cpu`: sets CPU_NOW to the CPU seconds (user + sys) used so far by this shell's
# finished children. `times` must run in this shell (a redirection; a pipe or $(...) would fork).
children_cpu() {
    times >"$LOGS/.times"
    CPU_NOW=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); s += a[1] * 60 + a[2] } }
        END { printf "%.0f", s }' "$LOGS/.times")
}

step() {
    local name=$1 t0 c0 rc
    shift
    t0=$(date +%s)
    children_cpu
    c0=$CPU_NOW
    echo "== $name"
    "$@" >"$LOGS/$name.log" 2>&1
    rc=$?
    children_cpu
    local dt=$(($(date +%s) - t0)) dc=$((CPU_NOW - c0))
    if [ $rc -eq 0 ]; then
        SUMMARY+=("$(printf '  PASS  %-34s %5ss  (CPU %ss)' "$name" "$dt" "$dc")")
    else
        FAILED=$((FAILED + 1))
        SUMMARY+=("$(printf '  FAIL  %-34s %5ss  (CPU %ss; see %s)' "$name" "$dt" "$dc" "$LOGS/$name.log")")
        tail -n 20 "$LOGS/$name.log" | sed 's/^/    /'
    fi
    # As it goes, so that a run stopped half-way still shows its times.
    printf '%s\n' "${SUMMARY[${#SUMMARY[@]} - 1]}" >>"$LOGS/summary.txt"
    return $rc
}

# `install_debs PACKAGE...` installs those of the Debian packages that are missing: Debian's Rust
# 1.96 (`rustc-web`, `cargo-web`, `rust-web-src`, `rust-web-clippy`, with its standard library's
# source) from the security archive, the others without their recommends.
install_debs() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && { echo "all packages present"; return 0; }
    echo "installing: ${missing[*]}"
    apt-get update || return 1
    local rust=() other=()
    for p in "${missing[@]}"; do
        case $p in rustc-web | cargo-web | rust-web-src | rust-web-clippy) rust+=("$p") ;; *) other+=("$p") ;; esac
    done
    if [ ${#rust[@]} -gt 0 ]; then apt-get install -y -t bookworm-security "${rust[@]}" || return 1; fi
    if [ ${#other[@]} -gt 0 ]; then apt-get install -y --no-install-recommends "${other[@]}" || return 1; fi
}
