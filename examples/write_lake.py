#!/usr/bin/env python3
"""Writes examples/lake: a small FDL lake with a real DuckLake catalog per version.

This is the reference writer of docs/writing-a-lake.md, run by hand only (the lake it makes is
committed; `make example` and the tests read the committed files and need no Python package):

    python3 -m venv /tmp/writer && /tmp/writer/bin/pip install -r examples/requirements.txt
    /tmp/writer/bin/python examples/write_lake.py examples/lake

It publishes each version as a careful writer does: the data files first (written by DuckLake
into the lake's shared data folder), then the frozen catalog, dataset.json, version.json last,
then the ref file, then refs.json. The working catalog never sits in the lake: it is kept in a
temporary folder and copied into versions/<id>/ once the snapshot is committed and detached.
"""

import glob
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile

import duckdb
import duckdb_extension_ducklake

# Version IDs are UUIDv7 made from fixed times and a seeded generator, so that a rerun gives the
# same IDs (the catalogs and Parquet file names still differ: DuckDB makes those).
RANDOM = random.Random(20260101)
AUTHOR = "Grace Hopper <grace@example.org>"
LAKE_ID = "3b1f6a0e-5c2d-4e8f-9a7b-1c0d2e3f4a5b"
BLOCK_SIZE = 16384  # DuckDB's default 256 KiB blocks make a 3.6 MB catalog; this one is ~270 KB.


def uuid7(created_at_ms):
    """A UUIDv7: 48 bits of Unix milliseconds, version 7, variant 10, random bits."""
    rand_a = RANDOM.getrandbits(12)
    rand_b = RANDOM.getrandbits(62)
    value = (created_at_ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def ducklake_extension():
    """The DuckLake extension shipped in its PyPI package (no download at run time)."""
    here = os.path.dirname(duckdb_extension_ducklake.__file__)
    (path,) = glob.glob(os.path.join(here, "extensions", "*", "ducklake.duckdb_extension"))
    return path


def write_file(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_json(path, value):
    write_file(path, (json.dumps(value, indent=2) + "\n").encode())


class Writer:
    def __init__(self, lake):
        self.lake = os.path.abspath(lake)
        self.work = tempfile.mkdtemp(prefix="fdl-writer-")
        self.refs = {}

    def start(self):
        if os.path.exists(os.path.join(self.lake, "fdl.json")):
            sys.exit(f"{self.lake} already holds a lake; remove it first to write it anew")
        os.makedirs(self.lake, exist_ok=True)
        write_json(
            os.path.join(self.lake, "fdl.json"),
            {"fdl": "0.1", "id": LAKE_ID, "data_dir": "data/", "catalog_formats": [{"ducklake": "1.0"}]},
        )
        write_file(os.path.join(self.lake, "HEAD"), b"ref: refs/heads/main\n")

    def snapshot(self, base, statements):
        """Runs `statements` on a working copy of `base`'s catalog (None: a new DuckLake) and
        returns the path of the detached working catalog."""
        working = os.path.join(self.work, f"working-{len(os.listdir(self.work))}.duckdb")
        if base is not None:
            shutil.copyfile(os.path.join(self.lake, "versions", base, "ducklake.duckdb"), working)
        con = duckdb.connect()
        con.execute(f"LOAD '{ducklake_extension()}'")
        # The data path is stored relative ('data/'), resolved from the lake's root: a reader
        # attaches with its own DATA_PATH and OVERRIDE_DATA_PATH, wherever the lake is.
        os.chdir(self.lake)
        con.execute(
            f"ATTACH 'ducklake:{working}' AS lake (DATA_PATH 'data/', "
            f"METADATA_PARAMETERS MAP {{'block_size': {BLOCK_SIZE}}}, DATA_INLINING_ROW_LIMIT 0)"
        )
        con.execute("USE lake")
        for sql in statements:
            con.execute(sql)
        tables = con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_catalog = 'lake' ORDER BY 1, 2"
        ).fetchall()
        described = []
        for schema, name in tables:
            rows = con.execute(f'SELECT count(*) FROM "{schema}"."{name}"').fetchone()[0]
            columns = con.execute(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_catalog = 'lake' AND table_schema = ? AND table_name = ? "
                "ORDER BY ordinal_position",
                [schema, name],
            ).fetchall()
            described.append(
                {"schema": schema, "name": name, "rows": rows,
                 "columns": [{"name": c, "type": t} for c, t in columns]}
            )
        con.execute("USE memory")
        con.execute("DETACH lake")
        con.close()
        return working, described

    def publish(self, parents, message, created_at, base, statements):
        """One version, in the order a careful writer follows: data (by DuckLake), catalog,
        dataset.json, version.json last. Returns the version ID."""
        ms = int(created_at_to_ms(created_at))
        vid = uuid7(ms)
        working, tables = self.snapshot(base, statements)
        folder = os.path.join(self.lake, "versions", vid)
        os.makedirs(folder)
        catalog = os.path.join(folder, "ducklake.duckdb")
        shutil.copyfile(working, catalog)
        with open(catalog, "rb") as f:
            sha256 = hashlib.sha256(f.read()).hexdigest()
        write_json(os.path.join(folder, "dataset.json"), {"name": "sales", "tables": tables})
        write_json(
            os.path.join(folder, "version.json"),
            {"parents": parents, "author": AUTHOR, "message": message,
             "created_at": created_at, "sha256": sha256},
        )
        return vid

    def set_ref(self, name, vid):
        """The ref file, then refs.json (which lists every ref, for readers that cannot list)."""
        write_file(os.path.join(self.lake, name), (vid + "\n").encode())
        self.refs[name] = vid
        write_json(os.path.join(self.lake, "refs.json"), dict(sorted(self.refs.items())))


def created_at_to_ms(created_at):
    from datetime import datetime

    return datetime.fromisoformat(created_at.replace("Z", "+00:00")).timestamp() * 1000


def main():
    lake = sys.argv[1] if len(sys.argv) > 1 else "examples/lake"
    w = Writer(lake)
    w.start()
    v1 = w.publish([], "Start the sales table", "2026-01-05T09:00:00Z", None, [
        "CREATE TABLE sales(id INTEGER, region VARCHAR, amount DECIMAL(10,2))",
        "INSERT INTO sales VALUES (1, 'north', 120.50), (2, 'south', 80.25), (3, 'east', 225.00)",
    ])
    w.set_ref("refs/heads/main", v1)
    w.set_ref("refs/tags/v2026.01", v1)
    v2 = w.publish([v1], "Add the week's sales", "2026-01-12T09:00:00Z", v1, [
        "INSERT INTO sales VALUES (4, 'west', 199.00), (5, 'north', 143.00)",
    ])
    w.set_ref("refs/heads/main", v2)
    v3 = w.publish([v2], "Correct sale 2, drop the duplicate sale 5", "2026-01-19T09:00:00Z", v2, [
        "UPDATE sales SET amount = 95.25 WHERE id = 2",
        "DELETE FROM sales WHERE id = 5",
    ])
    w.set_ref("refs/heads/main", v3)
    w.set_ref("refs/tags/v2026.02", v3)
    v4 = w.publish([v3], "Record each sale's currency", "2026-02-02T09:00:00Z", v3, [
        "ALTER TABLE sales ADD COLUMN currency VARCHAR DEFAULT 'EUR'",
        "INSERT INTO sales VALUES (6, 'south', 310.00, 'USD')",
    ])
    w.set_ref("refs/heads/main", v4)
    v5 = w.publish([v3], "Try a customers table (staging)", "2026-02-03T09:00:00Z", v3, [
        "CREATE TABLE customers(id INTEGER, name VARCHAR)",
        "INSERT INTO customers VALUES (1, 'Acme'), (2, 'Globex')",
    ])
    w.set_ref("refs/heads/staging", v5)
    shutil.rmtree(w.work)
    for name, vid in sorted(w.refs.items()):
        print(f"{vid} {name}")


if __name__ == "__main__":
    main()
