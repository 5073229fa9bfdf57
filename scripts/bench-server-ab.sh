#!/usr/bin/env bash
# Requests per second of the tokio server benchmark (bench/benches/tokio_server.rs) by wall clock,
# for two builds of it side by side: A (e.g. the commit before a change) and B (after), each
# untraced and with Phosphor's hooks, interleaved in one run.
#
# Each measurement is one `--child MODE 0` process of a bench binary (saturating load: each
# connection sends its next request when its last response is in; SECS seconds of it after a 0.5 s
# warm-up), printing its requests/s and the server's CPU per request. A round runs every
# (binary, mode) once, in an order that is reversed every other round, so that no measurement
# always follows the same one; a traced run's ratio is to the untraced run of the same binary in
# the same round (seconds apart, so they share most of the machine's other load), and the table
# gives each one's median, its quartiles and its range over the rounds.
#
# Usage, from the repository root:
#   A=path/to/tokio_server-HASH B=path/to/tokio_server-HASH scripts/bench-server-ab.sh
#   ROUNDS=9 SECS=3 CONNECTIONS=32 MODES="untraced phosphor phosphor-nowait" ...
# The binaries are built with `RUSTFLAGS="--cfg tokio_unstable" cargo bench -p phosphor-bench
# --features tokio-server --bench tokio_server --no-run` in each tree. B alone (A unset) measures
# one build. Requests/s include the kernel's socket work and the load generator (which shares the
# machine's cores with the server); `scripts/callgrind-server.sh` counts user-space instructions.
set -euo pipefail

ROUNDS=${ROUNDS:-9}
SECONDS_EACH=${SECS:-3}
CONNECTIONS=${CONNECTIONS:-32}
read -r -a MODES <<<"${MODES:-untraced phosphor}"
[[ ${MODES[0]} == untraced ]] || { echo "MODES must start with untraced (the ratios' base)" >&2; exit 2; }
[[ -x ${B:-} ]] || { echo "B must name a tokio_server bench binary" >&2; exit 2; }
BINS=(B)
[[ -n ${A:-} ]] && { [[ -x $A ]] || { echo "A is not executable: $A" >&2; exit 2; }; BINS=(A B); }

RAW=$(mktemp)
trap 'rm -f "$RAW"' EXIT
echo "tokio server, wall clock: ${#BINS[@]} build(s), modes ${MODES[*]}, $ROUNDS rounds of $SECONDS_EACH s," \
    "$CONNECTIONS connections, saturating; $(date -u +%FT%TZ), load:$(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
for b in "${BINS[@]}"; do echo "  $b = ${!b}"; done
for r in $(seq 1 "$ROUNDS"); do
    runs=()
    for b in "${BINS[@]}"; do
        for m in "${MODES[@]}"; do runs+=("$b $m"); done
    done
    if ((r % 2 == 0)); then
        mapfile -t runs < <(printf '%s\n' "${runs[@]}" | tac)
    fi
    for run in "${runs[@]}"; do
        read -r b m <<<"$run"
        out=$("${!b}" --child "$m" 0 --seconds "$SECONDS_EACH" --connections "$CONNECTIONS")
        read -r rate workers server fired <<<"$out"
        printf '  round %2d %s %-16s %9.0f requests/s, workers %6.0f ns/request, server %6.0f ns/request, fired %s\n' \
            "$r" "$b" "$m" "$rate" "$workers" "$server" "$fired"
        echo "$r $b $m $rate $workers $server $fired" >>"$RAW"
    done
done

echo
echo "Medians over $ROUNDS rounds; ratios paired with the same build's untraced run of the same round"
echo "(the CPU ratios' medians; fired: the flight recorder's trigger, over all rounds):"
python3 - "$RAW" <<'EOF'
import sys
from collections import defaultdict

rows = [l.split() for l in open(sys.argv[1])]
by = defaultdict(dict)  # (build, mode) -> round -> (rate, workers, server, fired)
for r, b, m, rate, w, s, fired in rows:
    by[(b, m)][int(r)] = (float(rate), float(w), float(s), float(fired))

def q(v, p):
    v = sorted(v)
    return v[round((len(v) - 1) * p)]

print(f"  {'build':5} {'mode':16} {'req/s':>8} {'min-max req/s':>17} {'req/s ratio':>11} {'p25-p75':>13} "
      f"{'min-max':>13} {'workers CPU/req':>15} {'server CPU/req':>14} {'fired':>5}")
for (b, m), runs in by.items():
    base = by[(b, 'untraced')]
    rates = [x[0] for x in runs.values()]
    ratio = [runs[r][0] / base[r][0] for r in runs]
    workers = [runs[r][1] / base[r][1] for r in runs]
    server = [runs[r][2] / base[r][2] for r in runs]
    fired = sum(x[3] for x in runs.values())
    print(f"  {b:5} {m:16} {q(rates, .5):8.0f} {min(rates):8.0f}-{max(rates):<8.0f} {q(ratio, .5):11.3f} "
          f"{q(ratio, .25):6.3f}-{q(ratio, .75):<6.3f} {min(ratio):6.3f}-{max(ratio):<6.3f} {q(workers, .5):15.3f} "
          f"{q(server, .5):14.3f} {fired:5.0f}")
EOF
