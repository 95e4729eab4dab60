"""Every non-record file of the real log dirs parses, and writing it back gives the same bytes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import realworld
from logdoctor.errors import FormatError, TruncatedError
from logdoctor.formats import checkpoint as cp
from logdoctor.formats import cleanshutdown as cs
from logdoctor.formats import index as ix
from logdoctor.formats import kraft_snapshot as ks
from logdoctor.formats import partition_metadata as pm
from logdoctor.formats import producer_snapshot as ps
from logdoctor.formats import properties as pr
from logdoctor.formats import quorum_state as qs
from logdoctor.formats.index import IndexKind, SanityEra

OFFSET_CHECKPOINTS = {
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
}
_SEGMENT_FILE = re.compile(r"(\d{20})\.(index|timeindex|txnindex|snapshot)")


def _kind(path: Path) -> str | None:
    name = path.name
    m = _SEGMENT_FILE.fullmatch(name)
    if m:
        return m.group(2)
    if name in OFFSET_CHECKPOINTS or name.removesuffix(".tmp") in OFFSET_CHECKPOINTS:
        return "offset-checkpoint"
    if name.endswith(".checkpoint"):
        return "kraft-snapshot"
    return {
        "leader-epoch-checkpoint": "leader-epoch",
        "meta.properties": "meta",
        "partition.metadata": "partition-metadata",
        "quorum-state": "quorum-state",
        ".kafka_cleanshutdown": "clean-shutdown",
    }.get(name)


def _small_files() -> list[Path]:
    return [p for p in realworld.files() if _kind(p) is not None]


def _round_trip(path: Path, data: bytes) -> bytes:
    kind, source = _kind(path), str(path)
    if kind in ("index", "timeindex", "txnindex"):
        base = int(path.name.split(".")[0])
        if kind == "index":
            return ix.write_offset_index(ix.parse_offset_index(data, base, source=source), base)
        if kind == "timeindex":
            return ix.write_time_index(ix.parse_time_index(data, base, source=source), base)
        return ix.write_txn_index(ix.parse_txn_index(data, source=source))
    if kind == "snapshot":
        return ps.write_producer_snapshot(ps.parse_producer_snapshot(data, source=source))
    if kind == "offset-checkpoint":
        return cp.write_offset_checkpoint(cp.parse_offset_checkpoint(data, source=source))
    if kind == "leader-epoch":
        return cp.write_leader_epoch_checkpoint(cp.parse_leader_epoch_checkpoint(data, source=source))
    if kind == "meta":
        return pr.write_meta_properties(pr.parse_meta_properties(data, source=source))
    if kind == "partition-metadata":
        return pm.write_partition_metadata(pm.parse_partition_metadata(data, source=source))
    if kind == "quorum-state":
        return qs.write_quorum_state(qs.parse_quorum_state(data, source=source))
    if kind == "clean-shutdown":
        return cs.write_clean_shutdown(cs.parse_clean_shutdown(data, source=source))
    assert kind == "kraft-snapshot"
    return ks.write_kraft_snapshot(ks.parse_kraft_snapshot(data, name=path.name, source=source))


@pytest.mark.realworld
@pytest.mark.parametrize("path", realworld.params(_small_files()))
def test_parse_and_write_back_identical(path):
    data = path.read_bytes()
    if _kind(path) == "partition-metadata" and not data:
        # 51 partition.metadata files of zk-corrupt-znsio were truncated to 0 bytes by a crash:
        # the broker cannot read them either (readLine returns null).
        with pytest.raises(TruncatedError) as err:
            pm.parse_partition_metadata(data, source=str(path))
        assert err.value.source == str(path) and err.value.position == 0
        return
    assert _round_trip(path, data) == data


@pytest.mark.realworld
@pytest.mark.parametrize(
    "path", realworld.params([p for p in _small_files() if _kind(p) in ("index", "timeindex")])
)
def test_real_indexes_are_trimmed_and_pass_todays_sanity_check(path):
    data = path.read_bytes()
    base = int(path.name.split(".")[0])
    size = 8 if path.suffix == ".index" else 12
    kind = IndexKind.OFFSET if size == 8 else IndexKind.TIME
    # every index in these snapshots was trimmed (the 10 MiB preallocated ones are missing)
    assert ix.real_entry_count(data, size) == ix.slot_count(data, size) == len(data) // size
    assert ix.sanity_check(kind, data, base, SanityEra.KAFKA_2_0, source=str(path)).passed


def _manifest_entries():
    return realworld.manifest()["entries"] if realworld.available() else []


@pytest.mark.realworld
def test_checkpoint_entry_counts_match_the_manifest(realworld_dir):
    seen = 0
    for entry in _manifest_entries():
        for name, info in (entry.get("checkpoints") or {}).items():
            data = (realworld_dir / entry["name"] / name).read_bytes()
            assert len(data) == info["bytes"]
            parsed = cp.parse_offset_checkpoint(data, source=name)
            assert len(parsed.entries) == info["entries"], (entry["name"], name)
            seen += 1
    assert seen >= 80


@pytest.mark.realworld
def test_files_missing_from_snapshot_are_absent_and_known_preallocated(realworld_dir):
    """The manifest lists index files the snapshot lacks (10 MiB preallocated ones among them):
    they are absent, and the segment's indexes can still be rebuilt from the .log."""
    from logdoctor.formats.recovery import rebuild_indexes

    missing = 0
    for entry in _manifest_entries():
        for item in entry.get("files_missing_from_snapshot", []):
            path = realworld_dir / entry["name"] / item["path"]
            assert not path.exists()
            missing += 1
            if "preallocated" in item["content"]:
                size = ix.preallocated_size(8 if path.suffix == ".index" else 12)
                assert f"{size} zero bytes" in item["content"]
                assert ix.real_entry_count(bytes(size), 8 if path.suffix == ".index" else 12) == 0
            log = path.with_suffix(".log")
            if log.exists():
                rebuilt = rebuild_indexes(log.read_bytes(), int(log.stem), source=str(log))
                assert rebuilt.error is None
    assert missing > 0


def test_clean_shutdown_forms():
    assert cs.parse_clean_shutdown(b"") == cs.CleanShutdown(None, None, empty=True)
    marker = cs.parse_clean_shutdown(b'{"version":0,"brokerEpoch":428}')
    assert marker.broker_epoch == 428
    assert cs.write_clean_shutdown(marker) == b'{"version":0,"brokerEpoch":428}'
    assert cs.write_clean_shutdown(cs.CleanShutdown(0, None)) == b'{"version":0,"brokerEpoch":null}'
    with pytest.raises(FormatError) as err:
        cs.parse_clean_shutdown(b'{"version":0,', source=".kafka_cleanshutdown")
    assert err.value.source == ".kafka_cleanshutdown" and err.value.position == 13
    with pytest.raises(FormatError):
        cs.parse_clean_shutdown(b'{"version":"x"}')
