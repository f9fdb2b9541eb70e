"""Runs the statements `git-remote-fdl catalog` printed, as printed, then one query; prints the
query's rows as JSON. The one substitution: `INSTALL x;` is dropped and `LOAD x;` loads the
extension from its PyPI package (no download at test time).

    python duckdb_run.py 'SELECT count(*), sum(amount) FROM lake.sales' < statements.sql
"""

import glob
import importlib
import json
import os
import re
import sys

import duckdb


def extension_file(name):
    module = importlib.import_module(f"duckdb_extension_{name}")
    (path,) = glob.glob(
        os.path.join(os.path.dirname(module.__file__), "extensions", "*", f"{name}.duckdb_extension")
    )
    return path


def main():
    query = sys.argv[1]
    con = duckdb.connect()
    for line in sys.stdin.read().splitlines():
        statement = line.strip()
        if not statement:
            continue
        if re.fullmatch(r"INSTALL \w+;", statement):
            continue
        load = re.fullmatch(r"LOAD (\w+);", statement)
        if load:
            statement = f"LOAD '{extension_file(load.group(1))}';"
        con.execute(statement)
    rows = con.execute(query).fetchall()
    print(json.dumps([[str(v) for v in row] for row in rows]))


if __name__ == "__main__":
    main()
