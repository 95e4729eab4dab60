"""`restore` of Aiven segments detransformed span by span on threads (``AivenLogReader.for_each_span``,
``FetchRemote._stream_spans``): the result is ``original/``'s bytes, and a damaged chunk in the middle of
a segment is still an error naming the object, the chunk and its original bytes, with nothing
half-written. On ../shared/tiered's Aiven stores (segments of 8 chunks of 8192 bytes); the span size is
made small so that every segment is several spans in flight at once."""

from __future__ import annotations

import json
import os
from pathlib import Path

import helpers
import pytest
from hypothesis import given
from hypothesis import strategies as st

import realworld
from logdoctor.formats.aiven_rsm import parse_manifest
from logdoctor.formats.crc import crc32c, crc32c_combine
from logdoctor.logdir.remote_store import RemoteOptions
from logdoctor.repair import copies
from logdoctor.repair.procedures import run
from logdoctor.repair.procedures.restore import plan_restore

VARIANTS = [
    ("aiven/plain/storage", None),
    ("aiven/compressed/storage", None),
    ("aiven/encrypted/storage", "aiven/encrypted/keys/private.pem"),
]


@given(st.binary(max_size=300), st.binary(max_size=300), st.binary(max_size=300))
def test_crc32c_combine_joins_pieces_as_the_crc_of_the_whole(a, b, c):
    """The oracle: the C CRC-32C of the joined bytes."""
    joined = crc32c_combine(crc32c_combine(crc32c(a), crc32c(b), len(b)), crc32c(c), len(c))
    assert joined == crc32c(a + b + c)


def test_crc32c_combine_of_large_pieces():
    a, b = os.urandom(1 << 16), os.urandom((8 << 20) + 3)
    assert crc32c_combine(crc32c(a), crc32c(b), len(b)) == crc32c(a + b)


@pytest.fixture
def small_spans(monkeypatch):
    """Spans of two 8192-byte chunks: 4 spans per segment, 3 in flight on 2 threads."""
    monkeypatch.setattr(copies, "CHUNK", 2 * 8192)


@pytest.mark.parametrize(("store", "key"), VARIANTS, ids=[v[0].split("/")[1] for v in VARIANTS])
def test_segments_in_many_spans_restore_as_the_original(tmp_path, small_spans, store, key):
    tiered = realworld.require_tiered()
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    opts = RemoteOptions(str(tiered / store), None, str(tiered / key) if key else None)
    for _ in range(2):  # the second run reuses the first's buffers: nothing of it may show through
        target = log_dir / str(_)
        target.mkdir()
        pp = plan_restore(target, opts, backup_dir=tmp_path / f"b{_}")
        result = run.apply(pp.plan)
        assert result.status == "applied", result.error
        assert run.verify(pp.plan) == []
        original = tiered / "original" / "kafka-logs"
        logs = sorted((target / "payments-0").glob("*.log"))
        assert len(logs) >= 2
        for log in logs:
            assert log.read_bytes() == (original / "payments-0" / log.name).read_bytes(), log.name


def _chunk(store: Path, base: int, index: int) -> tuple[Path, int, int, int]:
    """The ``.log`` object of payments-0's segment at ``base``, and its chunk ``index``: transformed
    position, original first and last byte."""
    (manifest,) = [p for p in store.rglob(f"{base:020d}-*.rsm-manifest") if "/0/" in str(p)]
    chunk = parse_manifest(manifest.read_bytes()).chunks()[index]
    log = manifest.with_suffix(".log")
    return (
        log,
        chunk.transformed_position,
        chunk.original_position,
        chunk.original_position + chunk.original_size - 1,
    )


@pytest.mark.parametrize(
    ("store", "key", "damage"),
    [
        ("aiven/compressed/storage", None, "zstd frame"),
        ("aiven/encrypted/storage", "aiven/encrypted/keys/private.pem", "bad tag"),
    ],
    ids=["compressed", "encrypted"],
)
def test_a_damaged_chunk_in_the_middle_names_object_chunk_and_offsets(
    tmp_path, small_spans, store, key, damage
):
    """A byte of chunk 5 of 8 changed (the plan reads only the last chunks: it cannot see it): the apply
    stops with an error naming the object, the chunk and its original bytes, renames nothing into place,
    leaves no partial file of that segment, and the rollback leaves the log dir as before."""
    tiered = realworld.require_tiered()
    copy = realworld.writable_copy(tiered / store, tmp_path / "store")
    log, at, first, last = _chunk(copy, 324, 5)
    data = bytearray(log.read_bytes())
    data[at + 1] ^= 0x40  # the zstd frame's magic number; inside the IV/ciphertext when encrypted
    log.write_bytes(bytes(data))
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    before = helpers.tree(log_dir)
    opts = RemoteOptions(str(copy), None, str(tiered / key) if key else None)
    pp = plan_restore(log_dir, opts, backup_dir=tmp_path / "b")
    assert not [u for u in pp.plan.unrepaired if u.code == "restore-remote-object"]
    result = run.apply(pp.plan)
    assert result.status == "failed"
    error = result.error or ""
    assert str(log) in error and f"chunk 5: original bytes {first}-{last}" in error and damage in error, error
    assert "offsets from 324" in error, error
    assert not (log_dir / "payments-0" / f"{324:020d}.log").exists()
    assert not (log_dir / "payments-0" / f"{324:020d}.log.logdoctor-partial").exists()  # its partial removed
    journal = tmp_path / "b" / "journal.jsonl"
    rolled, _ = run.rollback_journal(journal)
    assert rolled.status == "rolled-back", rolled.error
    assert helpers.tree(log_dir) == before
    assert [json.loads(x)["t"] for x in journal.read_text().splitlines()][-1] == "end"


def test_a_truncated_indexes_object_names_the_part_it_cuts(tmp_path):
    """The plan reads the ``.indexes`` parts it wants in one ranged read: an object cut inside the
    timestamp index (bytes 40-99 of 118) is still a finding naming the object, the part and where it
    ends, and nothing older than that segment is restored."""
    tiered = realworld.require_tiered()
    copy = realworld.writable_copy(tiered / "aiven/compressed/storage", tmp_path / "store")
    (indexes,) = [p for p in copy.rglob(f"{324:020d}-*.indexes") if "/0/" in str(p)]
    with open(indexes, "r+b") as fh:
        fh.truncate(70)
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    pp = plan_restore(log_dir, RemoteOptions(str(copy)), backup_dir=tmp_path / "b")
    text = " ".join(u.why for u in pp.plan.unrepaired if u.code == "restore-remote-object")
    assert (
        str(indexes) in text
        and "60 bytes of the timestamp index" in text
        and "offsets 0-647 stay missing" in text
    )
    row = next(r for r in pp.summary["partitions"] if r["partition"] == "payments-0")
    assert row["offsets"][0] == 648, row
