# Sourced by scripts/cross-check.sh and scripts/cross-lean.sh: `step NAME COMMAND...` runs the
# command with its output in $LOGS/NAME.log, and records PASS or FAIL with its time in SUMMARY
# (printed by the caller at the end); a failure counts in FAILED and shows the log's tail.
# The caller sets LOGS and creates it.
SUMMARY=()
FAILED=0
START=$(date +%s)
step() {
    local name=$1 t0 rc
    shift
    t0=$(date +%s)
    echo "== $name"
    "$@" >"$LOGS/$name.log" 2>&1
    rc=$?
    local dt=$(($(date +%s) - t0))
    if [ $rc -eq 0 ]; then
        SUMMARY+=("$(printf '  PASS  %-34s %5ss' "$name" "$dt")")
    else
        FAILED=$((FAILED + 1))
        SUMMARY+=("$(printf '  FAIL  %-34s %5ss  (see %s)' "$name" "$dt" "$LOGS/$name.log")")
        tail -n 20 "$LOGS/$name.log" | sed 's/^/    /'
    fi
    return $rc
}
