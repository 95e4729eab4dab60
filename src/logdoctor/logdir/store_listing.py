"""What a remote store holds, as a flat list of objects: a direct listing, or an S3 Inventory report.

Both give :class:`StoreObject` values (key, size, last modified); nothing here reads an object. The
key is the object's location as the caller can name it: a path for a local folder, ``s3://bucket/key``
(the URI's scheme and authority, then the key) for a URI or an inventory report.

An S3 Inventory report is what AWS writes to the destination bucket: a ``manifest.json``
(``sourceBucket``, ``destinationBucket``, ``fileFormat`` CSV / Parquet / ORC, ``fileSchema``, ``files``:
``[{key, size, MD5checksum}]``, each key a data file in the destination bucket) and its data files. A CSV
file is gzip'd, has no header, one quoted field per ``fileSchema`` column, and the object key
URL-encoded; a Parquet (or ORC) file has the columns ``bucket``, ``key``, ``size``,
``last_modified_date`` ... named in snake case, the key as is. With object versions listed, only the
latest versions that are not delete markers are objects (``is_latest`` / ``is_delete_marker``). A data
file is read where the manifest is (a local copy of the report keeps the files under the same keys
relative to the manifest's bucket root) or in the destination bucket: :func:`inventory_file_location`.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from logdoctor.logdir.storage import Storage

__all__ = [
    "InventoryError",
    "InventoryManifest",
    "StoreObject",
    "inventory_file_location",
    "list_store",
    "read_inventory_file",
    "read_inventory_manifest",
    "read_inventory_sizes",
]


@dataclass(frozen=True, slots=True)
class StoreObject:
    key: str
    size: int
    last_modified_ms: int | None = None


class InventoryError(ValueError):
    """An S3 Inventory report that cannot be read (names the file, and what is wrong)."""


def list_store(store: str) -> Iterator[StoreObject]:
    """Every object under ``store`` (a folder, or a URI pyarrow opens), recursively, in key order.
    Raises OSError / ValueError when the store cannot be listed."""
    storage, root = Storage.of(store)
    if storage.is_local:
        if not os.path.isdir(root):
            raise FileNotFoundError(f"{store}: no such folder")
        for dirpath, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                yield StoreObject(path, st.st_size, int(st.st_mtime * 1000))
        return
    from pyarrow import fs as pafs

    base = storage.path(root)
    infos = storage.filesystem.get_file_info(pafs.FileSelector(base, recursive=True))
    for i in sorted(infos, key=lambda i: i.path):
        if i.type != pafs.FileType.File:
            continue
        mtime = int(i.mtime_ns // 1_000_000) if i.mtime_ns is not None else None
        yield StoreObject(root.rstrip("/") + i.path[len(base.rstrip("/")) :], int(i.size or 0), mtime)


# --- S3 Inventory ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InventoryManifest:
    location: str  # the manifest.json itself
    source_bucket: str
    destination_bucket: str  # the bucket name (the manifest gives an ARN)
    file_format: str  # CSV, Parquet, ORC
    columns: tuple[str, ...]  # fileSchema's column names (CSV: in file order)
    files: tuple[tuple[str, int, str], ...]  # (key, size, MD5checksum)
    creation_timestamp_ms: int | None


def _snake(name: str) -> str:
    """``LastModifiedDate`` -> ``last_modified_date`` (``MD5checksum`` -> ``md5checksum``)."""
    return re.sub(r"(?<=[^A-Z])(?=[A-Z])", "_", name).lower()


def read_inventory_manifest(location: str) -> InventoryManifest:
    """Parse an S3 Inventory ``manifest.json`` (a path or URI). Raises InventoryError naming the file."""
    storage, loc = Storage.of(location)
    try:
        data = json.loads(storage.read(loc))
    except (OSError, ValueError) as e:
        raise InventoryError(f"{location}: not a readable manifest.json ({e})") from None
    try:
        fmt = str(data["fileFormat"])
        schema = str(data["fileSchema"])
        files = tuple(
            (str(f["key"]), int(f.get("size", 0)), str(f.get("MD5checksum", ""))) for f in data["files"]
        )
        source = str(data["sourceBucket"])
        dest = str(data["destinationBucket"])
    except (KeyError, TypeError, ValueError) as e:
        raise InventoryError(
            f"{location}: manifest.json without {e} (S3 Inventory's manifest fields)"
        ) from None
    if fmt.upper() == "CSV":
        columns = tuple(_snake(c.strip()) for c in schema.split(","))
    else:  # Parquet / ORC: a schema string; the files' own column names are read
        columns = ()
    created = data.get("creationTimestamp")
    return InventoryManifest(
        loc,
        source,
        dest.rsplit(":", 1)[-1],
        fmt,
        columns,
        files,
        int(created) if created is not None and str(created).isdigit() else None,
    )


def inventory_file_location(manifest: InventoryManifest, key: str) -> str:
    """Where to read the data file ``key``: beside the manifest when the report is a copy (the manifest's
    own key ends ``<source bucket>/<config id>/<date>/manifest.json``, the data files are
    ``<destination prefix>/<source bucket>/<config id>/data/...``), else ``s3://<destination>/<key>``."""
    storage, loc = Storage.of(manifest.location)
    # the destination prefix is what comes before "<source bucket>/" in the data file's key
    marker = f"{manifest.source_bucket}/"
    tail = key[key.index(marker) :] if marker in key else key
    # the manifest is at <root>/<source bucket>/<config id>/<date>/manifest.json
    root = loc
    for _ in range(4):
        root = storage.dirname(root)
    candidate = storage.join(root, *tail.split("/"))
    if storage.info(candidate) is not None:
        return candidate
    return f"s3://{manifest.destination_bucket}/{key}"


def _read_data_file(manifest: InventoryManifest, key: str, verify_md5: bool) -> tuple[str, bytes]:
    where = inventory_file_location(manifest, key)
    storage, loc = Storage.of(where)
    try:
        raw = storage.read(loc)
    except OSError as e:
        raise InventoryError(f"{where}: cannot read the inventory data file ({e})") from None
    expected = next((m for k, _s, m in manifest.files if k == key), "")
    if verify_md5 and expected and hashlib.md5(raw).hexdigest() != expected:
        raise InventoryError(
            f"{where}: MD5 {hashlib.md5(raw).hexdigest()} differs from the manifest's MD5checksum {expected}"
        )
    return where, raw


def _read_table(manifest: InventoryManifest, raw: bytes, columns: Sequence[str] | None = None) -> Any:
    """A Parquet or ORC data file as an Arrow table (``columns``: only those of these names that it has,
    matched in any case)."""
    fmt = manifest.file_format.upper()
    if fmt == "PARQUET":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(io.BytesIO(raw))
        names = pf.schema_arrow.names
    elif fmt == "ORC":
        import pyarrow.orc as po

        pf = po.ORCFile(io.BytesIO(raw))
        names = pf.schema.names
    else:
        raise InventoryError(
            f"{manifest.location}: fileFormat {manifest.file_format!r} (CSV, Parquet or ORC)"
        )
    wanted = None if columns is None else [n for n in names if n.lower() in columns]
    return pf.read(columns=wanted)


def read_inventory_file(
    manifest: InventoryManifest, key: str, *, verify_md5: bool = True
) -> Iterator[StoreObject]:
    """The objects one data file of the report lists (keys as ``s3://<source bucket>/<key>``)."""
    where, raw = _read_data_file(manifest, key, verify_md5)
    prefix = f"s3://{manifest.source_bucket}/"
    if manifest.file_format.upper() == "CSV":
        yield from _csv_objects(raw, manifest.columns, prefix, where)
        return
    yield from _table_objects(_read_table(manifest, raw), prefix, where)


#: the columns :func:`read_inventory_sizes` needs (the rest of a Parquet or ORC file is not read)
_SIZE_COLUMNS = ("key", "size", "is_latest", "is_delete_marker")


def read_inventory_sizes(
    manifest: InventoryManifest, key: str, *, verify_md5: bool = True
) -> tuple[list[str], list[int]]:
    """The keys and sizes of the objects one data file lists: the same as ``(o.key, o.size)`` of
    :func:`read_inventory_file` in its order, read by column (Arrow's CSV reader for a CSV file, only
    the key, size and version columns of a Parquet or ORC file; nothing per object but the key's
    URL-decoding is done in Python). A CSV file Arrow does not read as the fileSchema says is read row by
    row, which names the faulty line."""
    where, raw = _read_data_file(manifest, key, verify_md5)
    prefix = f"s3://{manifest.source_bucket}/"
    if manifest.file_format.upper() == "CSV":
        got = _csv_sizes(raw, manifest.columns, prefix)
        if got is None:  # what Arrow refuses, the row reader explains (or reads)
            objs = list(_csv_objects(raw, manifest.columns, prefix, where))
            return [o.key for o in objs], [o.size for o in objs]
        return got
    table = _read_table(manifest, raw, _SIZE_COLUMNS)
    names = {c.lower(): c for c in table.column_names}
    if "key" not in names or "size" not in names:  # the whole file's columns named
        list(_table_objects(_read_table(manifest, raw), prefix, where))
    keys = [prefix + str(k) for k in table.column(names["key"]).to_pylist()]
    sizes = [int(s or 0) for s in table.column(names["size"]).to_pylist()]
    return _latest(table, names, keys, sizes)


def _latest(
    table: Any, names: dict[str, str], keys: list[str], sizes: list[int]
) -> tuple[list[str], list[int]]:
    """``keys`` and ``sizes`` of the rows :func:`_keep` keeps (all of them without version columns)."""
    if "is_latest" not in names and "is_delete_marker" not in names:
        return keys, sizes

    def col(name: str) -> list[Any]:
        return table.column(names[name]).to_pylist() if name in names else [None] * table.num_rows

    kept = [_keep(la, dm) for la, dm in zip(col("is_latest"), col("is_delete_marker"), strict=True)]
    return (
        [k for k, ok in zip(keys, kept, strict=True) if ok],
        [s for s, ok in zip(sizes, kept, strict=True) if ok],
    )


def _csv_sizes(raw: bytes, columns: tuple[str, ...], prefix: str) -> tuple[list[str], list[int]] | None:
    """(keys, sizes) of a gzip'd CSV data file by Arrow's reader; None when Arrow cannot read it as
    :func:`_csv_objects` does (the caller reads it row by row)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    if "key" not in columns or "size" not in columns or len(set(columns)) != len(columns):
        return None
    try:
        text = gzip.decompress(raw)
        table = pcsv.read_csv(
            io.BytesIO(text),
            read_options=pcsv.ReadOptions(column_names=list(columns), use_threads=False),
            parse_options=pcsv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(
                column_types={c: pa.string() for c in columns},
                include_columns=[c for c in columns if c in _SIZE_COLUMNS],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
        size_col = table.column("size")
        sizes = pc.cast(pc.if_else(pc.equal(size_col, ""), "0", size_col), pa.int64()).to_pylist()
    except (OSError, EOFError, pa.ArrowException):
        return None
    keys = [
        prefix + (unquote_plus(k) if "%" in k or "+" in k else k) for k in table.column("key").to_pylist()
    ]
    return _latest(table, {c: c for c in table.column_names}, keys, sizes)


def _ms(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, int):
        return value
    if hasattr(value, "timestamp"):
        return int(value.timestamp() * 1000)
    import datetime as dt

    try:
        return int(dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _keep(latest: Any, marker: Any) -> bool:
    def true(v: Any) -> bool:
        return v is True or str(v).lower() == "true"

    return (latest is None or latest == "" or true(latest)) and not true(marker)


def _csv_objects(raw: bytes, columns: tuple[str, ...], prefix: str, where: str) -> Iterator[StoreObject]:
    try:
        text = gzip.decompress(raw).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise InventoryError(f"{where}: not a gzip'd CSV inventory file ({e})") from None
    try:
        ki, si = columns.index("key"), columns.index("size")
    except ValueError:
        raise InventoryError(f"{where}: fileSchema without Key and Size ({', '.join(columns)})") from None
    mi = columns.index("last_modified_date") if "last_modified_date" in columns else None
    li = columns.index("is_latest") if "is_latest" in columns else None
    di = columns.index("is_delete_marker") if "is_delete_marker" in columns else None
    for n, row in enumerate(csv.reader(io.StringIO(text))):
        if len(row) != len(columns):
            raise InventoryError(f"{where}: line {n + 1} has {len(row)} fields, fileSchema {len(columns)}")
        if not _keep(row[li] if li is not None else None, row[di] if di is not None else None):
            continue
        size = int(row[si]) if row[si] else 0
        yield StoreObject(prefix + unquote_plus(row[ki]), size, _ms(row[mi]) if mi is not None else None)


def _table_objects(table: Any, prefix: str, where: str) -> Iterator[StoreObject]:
    names = {c.lower(): c for c in table.column_names}
    if "key" not in names or "size" not in names:
        raise InventoryError(f"{where}: no key and size columns ({', '.join(table.column_names)})")
    keys = table.column(names["key"]).to_pylist()
    sizes = table.column(names["size"]).to_pylist()

    def col(name: str) -> list[Any]:
        return table.column(names[name]).to_pylist() if name in names else [None] * len(keys)

    mtimes, latest, marker = col("last_modified_date"), col("is_latest"), col("is_delete_marker")
    for k, s, m, la, dm in zip(keys, sizes, mtimes, latest, marker, strict=True):
        if _keep(la, dm):
            yield StoreObject(prefix + str(k), int(s or 0), _ms(m))
