"""Which files a Delta table's snapshots reference, read from its log as logdoctor does for the removal of
uncommitted files (tables/orphans.py), against deltalake's own list of every version's files; with a
checkpoint whose earlier commits were cleaned up, as Delta's log retention does. No Spark."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from logdoctor.spark.tables.delta import DeltaLakeTable
from logdoctor.spark.tables.orphans import sweep

pytestmark = pytest.mark.spark  # deltalake and pyarrow come with the spark extra


def _versions_files(out: str, first: int, last: int) -> set[str]:
    from deltalake import DeltaTable

    versions = range(first, last + 1)
    return {u.rsplit("/", 1)[-1] for v in versions for u in DeltaTable(out, version=v).file_uris()}


def test_delta_log_and_checkpoint_references_every_version_file(tmp_path):
    from deltalake import DeltaTable, write_deltalake

    out = str(tmp_path / "table")
    for i in range(4):  # every write an overwrite: each version's files are tombstones in the next
        data = pa.table({"topic": ["a", "b"], "offset": [i, i]})
        write_deltalake(out, data, partition_by=["topic"], mode="overwrite")
    table = DeltaLakeTable(out)
    table.load()
    assert table.referenced_file_names() == _versions_files(out, 0, 3)

    DeltaTable(out).create_checkpoint()
    log = Path(out, "_delta_log")
    for v in range(3):  # log cleanup: the commits before the checkpoint's version are gone
        (log / f"{v:020d}.json").unlink()
    table.load()
    names = table.referenced_file_names()
    assert _versions_files(out, 3, 3) <= names  # the current files
    # the checkpoint's tombstones keep the earlier versions' files (deltalake wrote them as removes)
    assert names == {p.name for p in Path(out).rglob("*.parquet") if "_delta_log" not in p.parts}


def test_a_log_logdoctor_does_not_read_whole_removes_nothing(tmp_path):
    """A V2 checkpoint's sidecar folder (or any log entry logdoctor does not parse) stops the sweep."""
    from deltalake import write_deltalake

    out = str(tmp_path / "table")
    write_deltalake(out, pa.table({"topic": ["a"], "offset": [1]}), partition_by=["topic"])
    Path(out, "_delta_log", "_sidecars").mkdir()
    table = DeltaLakeTable(out)
    table.load()
    with pytest.raises(ValueError, match="_sidecars"):
        table.referenced_file_names()


def test_sweep_removes_only_old_unreferenced_logdoctor_files(tmp_path):
    data = tmp_path / "data" / "topic=a"
    data.mkdir(parents=True)
    names = {
        "old": "ld0123456789ab-00000-0-0badcafe.parquet",
        "young": "ld0123456789ab-00001-0-0badcaff.parquet",
        "referenced": "ld0123456789ab-00002-0-0badcb00.parquet",
        "running": "ldfedcba987654-00000-0-12345678.parquet",
        "foreign": "part-00000-0123-c000.snappy.parquet",
    }
    old = 1_000_000.0
    for key, name in names.items():
        (data / name).write_bytes(b"x" * 10)
        if key != "young":
            os.utime(data / name, (old, old))
    now = old + 4 * 86400
    os.utime(data / names["young"], (now - 60, now - 60))
    root = str(tmp_path / "data")
    got = sweep(root, {names["referenced"]}, running_job="ldfedcba987654", now=now)
    assert got.removed == [f"{root}/topic=a/{names['old']}"] and got.removed_bytes == 10
    assert got.kept == [f"{root}/topic=a/{names['young']}"] and got.youngest_kept_s == pytest.approx(60)
    assert sorted(p.name for p in data.iterdir()) == sorted(v for k, v in names.items() if k != "old")
    assert "older than 3 days" in got.lines()[1]
