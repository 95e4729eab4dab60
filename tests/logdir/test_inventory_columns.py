"""The census reads an S3 Inventory data file by column (:func:`read_inventory_sizes`): the keys and sizes
must be those the row reader (:func:`read_inventory_file`, the scan's) gives, in its order, for a CSV,
Parquet or ORC report as AWS writes it, including URL-encoded keys, empty sizes, object versions and
files Arrow cannot read (the row reader's error, naming the line)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from pathlib import Path

import pytest

from logdoctor.logdir.store_listing import (
    InventoryError,
    read_inventory_file,
    read_inventory_manifest,
    read_inventory_sizes,
)

BUCKET = "tiered"
#: (key as stored, size, is_latest, is_delete_marker)
OBJECTS = [
    ("kafka-tiered-storage/t-0-AAAAAAAAAAAAAAAAAAAAAA/00000000000000000000-BBBBBBBBBBBBBBBBBBBBBB.log", 1024,
     True, False),
    ("a key with spaces+plus/and%percent.log", 7, True, False),
    ("ünïcode/é.index", None, True, False),
    ("old/version.log", 5, False, False),
    ("deleted/marker.log", 0, True, True),
    ('quoted "name",comma.log', 3, True, False),
]  # fmt: skip


def _csv_field(v: object) -> str:
    return '"' + str(v).replace('"', '""') + '"'


def _csv(rows: list[tuple[object, ...]]) -> bytes:
    return gzip.compress("".join(",".join(map(_csv_field, r)) + "\n" for r in rows).encode())


def _report(root: Path, fmt: str, datas: list[bytes], schema: str) -> str:
    ext = {"CSV": "csv.gz", "Parquet": "parquet", "ORC": "orc"}[fmt]
    files = []
    for i, data in enumerate(datas):
        key = f"inv/{BUCKET}/cfg/data/part-{i}.{ext}"
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_bytes(data)
        files.append({"key": key, "size": len(data), "MD5checksum": hashlib.md5(data).hexdigest()})
    manifest = root / "inv" / BUCKET / "cfg" / "2026-11-24T00-00Z" / "manifest.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(
        json.dumps(
            {
                "sourceBucket": BUCKET,
                "destinationBucket": f"arn:aws:s3:::{BUCKET}-inventory",
                "fileFormat": fmt,
                "fileSchema": schema,
                "files": files,
            }
        )
    )
    return str(manifest)


def _csv_report(root: Path, versions: bool) -> str:
    from urllib.parse import quote_plus

    rows = []
    for key, size, latest, marker in OBJECTS:
        if not versions and (not latest or marker):
            continue
        row = [BUCKET, quote_plus(key, safe="/"), "" if size is None else size, "2026-11-23T10:00:00.000Z"]
        rows.append((*row, str(latest).lower(), str(marker).lower()) if versions else tuple(row))
    schema = "Bucket, Key, Size, LastModifiedDate" + (", IsLatest, IsDeleteMarker" if versions else "")
    return _report(root, "CSV", [_csv(rows[:3]), _csv(rows[3:])], schema)


def _table_report(root: Path, fmt: str) -> str:
    import datetime as dt

    import pyarrow as pa

    when = dt.datetime(2026, 11, 23, 10, tzinfo=dt.UTC)
    table = pa.table(
        {
            "bucket": [BUCKET] * len(OBJECTS),
            "key": [o[0] for o in OBJECTS],
            "size": pa.array([o[1] for o in OBJECTS], pa.int64()),
            "last_modified_date": pa.array([when] * len(OBJECTS), pa.timestamp("ms", tz="UTC")),
            "is_latest": [o[2] for o in OBJECTS],
            "is_delete_marker": [o[3] for o in OBJECTS],
            "e_tag": ["x"] * len(OBJECTS),
        }
    )
    sink = io.BytesIO()
    if fmt == "Parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, sink)
    else:
        import pyarrow.orc as po

        po.write_table(table, sink)
    return _report(root, fmt, [sink.getvalue()], "message s3.inventory { ... }")


def _both(manifest_path: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    manifest = read_inventory_manifest(manifest_path)
    rows, cols = [], []
    for key, _size, _md5 in manifest.files:
        rows += [(o.key, o.size) for o in read_inventory_file(manifest, key)]
        keys, sizes = read_inventory_sizes(manifest, key)
        cols += list(zip(keys, sizes, strict=True))
    return rows, cols


@pytest.mark.parametrize("versions", [False, True])
def test_csv_columns_are_the_rows(tmp_path: Path, versions: bool) -> None:
    rows, cols = _both(_csv_report(tmp_path, versions))
    assert cols == rows
    expected = [(f"s3://{BUCKET}/{k}", s or 0) for k, s, latest, marker in OBJECTS if latest and not marker]
    assert cols == expected


@pytest.mark.parametrize("fmt", ["Parquet", "ORC"])
def test_parquet_and_orc_columns_are_the_rows(tmp_path: Path, fmt: str) -> None:
    rows, cols = _both(_table_report(tmp_path, fmt))
    assert cols == rows
    assert [k for k, _s in cols] == [f"s3://{BUCKET}/{o[0]}" for o in OBJECTS if o[2] and not o[3]]


def test_a_csv_line_with_a_missing_field_is_named_as_the_row_reader_names_it(tmp_path: Path) -> None:
    bad = gzip.compress(b'"tiered","a.log","1","2026-11-23T10:00:00.000Z"\n"tiered","b.log","2"\n')
    manifest = read_inventory_manifest(_report(tmp_path, "CSV", [bad], "Bucket, Key, Size, LastModifiedDate"))
    key = manifest.files[0][0]
    with pytest.raises(InventoryError) as by_rows:
        list(read_inventory_file(manifest, key))
    with pytest.raises(InventoryError) as by_columns:
        read_inventory_sizes(manifest, key)
    assert str(by_columns.value) == str(by_rows.value)
    assert "line 2 has 3 fields" in str(by_columns.value)


def test_a_parquet_file_without_a_key_column_names_its_columns(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa.table({"bucket": [BUCKET], "Size": [1], "etag": ["x"]}), sink)
    report = _report(tmp_path, "Parquet", [sink.getvalue()], "message s3.inventory {}")
    manifest = read_inventory_manifest(report)
    with pytest.raises(InventoryError, match=r"no key and size columns \(bucket, Size, etag\)"):
        read_inventory_sizes(manifest, manifest.files[0][0])
