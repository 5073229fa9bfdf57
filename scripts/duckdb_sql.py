"""Runs one SQL query in DuckDB over a folder of Phosphor's Parquet tables and prints the result
as CSV: a header line, then a line per row.

    python duckdb_sql.py TABLES_DIR < query.sql

Each `TABLE.parquet` of TABLES_DIR (`phosphor convert ... --to parquet -o TABLES_DIR`) is the view
`TABLE`, as `phosphor sql TABLES_DIR` registers it. Values print as Arrow's CSV writer prints them
(the `phosphor sql --csv` output the test compares with): NULL as an empty field, booleans as
`true`/`false`, floats in Python's shortest round-trip form. Used by the phosphor-cli test
`sql_queries` (docs/SQL.md's worked queries in DataFusion and in DuckDB).
"""

import csv
import pathlib
import sys

import duckdb


def cell(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def main():
    folder = pathlib.Path(sys.argv[1])
    query = sys.stdin.read()
    con = duckdb.connect()
    for table in sorted(folder.glob("*.parquet")):
        location = str(table).replace("'", "''")
        con.execute(f"CREATE VIEW \"{table.stem}\" AS SELECT * FROM read_parquet('{location}')")
    cursor = con.execute(query)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow([d[0] for d in cursor.description])
    for row in cursor.fetchall():
        out.writerow([cell(v) for v in row])


if __name__ == "__main__":
    main()
