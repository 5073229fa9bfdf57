#!/usr/bin/env bash
# DuckDB over a folder of many traces' Parquet tables (issue 40: "show DuckDB querying a folder of
# 100 traces"), checked against `phosphor sql` over the trace files themselves.
#
#   scripts/bench-duckdb-folder.sh [--traces N] [--events E] [--rounds R]
#
# Builds the release CLI with SQL (or uses $PHOSPHOR), makes N small demo traces (default 100;
# `phosphor demo --threads 2 --events E`, default 5,000 per worker) as traces/NNN.phos in
# target/bench-duckdb (reused when there), converts each to its own folder of Parquet tables,
# tables/NNN/ (`convert --to parquet`), then runs docs/SQL.md's folder query in DuckDB (the tests'
# Python, scripts/python-env.sh) over read_parquet('tables/*/slices.parquet'), R times (default
# 5), and `phosphor sql traces/` with the same query once. Checks that the two answers (per trace:
# slices and their total duration) are the same, and prints the wall times (DuckDB's: the query
# in a fresh connection, the median of R; `phosphor sql`'s: the whole command).
set -euo pipefail
cd "$(dirname "$0")/.."

traces=100
events=5000
rounds=5
while [ $# -gt 0 ]; do
    case "$1" in
        --traces) traces="$2"; shift 2 ;;
        --events) events="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

target="${CARGO_TARGET_DIR:-target}"
if [ -z "${PHOSPHOR:-}" ]; then
    cargo build --release -q --locked -p phosphor-cli --features sql
    PHOSPHOR="$(cd "$target/release" && pwd)/phosphor"
fi
python="$(bash scripts/python-env.sh)"
out="$target/bench-duckdb/$traces-$events"
mkdir -p "$out/traces" "$out/tables"
cd "$out"

made=0
for i in $(seq -f %03g 1 "$traces"); do
    if [ ! -s "traces/$i.phos" ]; then
        "$PHOSPHOR" demo --threads 2 --events "$events" -o "tmp-$i" > /dev/null
        mv "tmp-$i/trace.phos" "traces/$i.phos"
        rm -rf "tmp-$i"
    fi
    if [ ! -s "tables/$i/slices.parquet" ]; then
        "$PHOSPHOR" convert "traces/$i.phos" --to parquet -o "tables/$i" 2> /dev/null
        made=$((made + 1))
    fi
done
echo "$traces traces in $out/traces ($(du -sh traces | cut -f1)), their tables in tables/ ($(du -sh tables | cut -f1)); $made converted now" >&2

select="SELECT trace, count(*) AS slices, sum(dur) AS total_ns"
group="GROUP BY trace ORDER BY trace"
query="$select FROM read_parquet('tables/*/slices.parquet') $group"
"$python" - "$rounds" "$query" > duckdb.csv <<'PY'
import csv, statistics, sys, time
import duckdb
rounds, query = int(sys.argv[1]), sys.argv[2]
times = []
for _ in range(rounds):
    start = time.perf_counter()
    con = duckdb.connect()
    rows = con.execute(query).fetchall()
    times.append(time.perf_counter() - start)
    con.close()
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["trace", "slices", "total_ns"])
w.writerows(rows)
print(f"duckdb: {len(rows)} traces, {sum(r[1] for r in rows):,} slices; query over read_parquet('tables/*/slices.parquet'): "
      f"median {statistics.median(times) * 1000:.1f} ms of {rounds} ({', '.join(f'{t * 1000:.1f}' for t in times)})",
      file=sys.stderr)
PY
start=$(date +%s.%N)
"$PHOSPHOR" sql --csv traces/ "$select FROM slices $group" > phosphor.csv 2> /dev/null
end=$(date +%s.%N)
echo "phosphor sql over the $traces .phos files: $(awk "BEGIN { printf \"%.0f\", ($end - $start) * 1000 }") ms" >&2
if ! diff -q phosphor.csv duckdb.csv > /dev/null; then
    echo "DuckDB and phosphor sql disagree: diff $out/phosphor.csv $out/duckdb.csv" >&2
    diff phosphor.csv duckdb.csv | head >&2
    exit 1
fi
echo "the same $(($(wc -l < duckdb.csv) - 1)) rows in both" >&2
