"""`scan --deep` decodes every record: a batch whose CRC matches but whose records do not decode is
LOG_RECORDS_UNDECODABLE (issue 31 item 4), and the scan flags exactly the batches `dump --deep` fails on.

The damage is made the way it passes the broker's recovery: record bytes changed and the batch's CRC-32C
recomputed (LogSegment.recover checks only the CRC). Compressed batches: the decompressed records are
damaged, compressed again and the CRC recomputed.
"""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import realworld
import tiers
from logdoctor.checks.state.file_records import walk_file
from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app
from logdoctor.errors import FormatError
from logdoctor.formats import batch_v2, native
from logdoctor.formats.record_types import Compression, RecordSpec
from logdoctor.formats.records import iter_batches
from logdoctor.formats.writer import build_record_batch

DIR = "zk-3.7-nikhildighe-b0"
SEG = "__consumer_offsets-12/00000000000000000000.log"
CODE = "LOG_RECORDS_UNDECODABLE"


def fix_crc(buf: bytearray, pos: int) -> None:
    """Recompute the CRC-32C of the v2 batch at ``pos`` (attributes to the end), as a rewriting tool would."""
    size = struct.unpack_from(">i", buf, pos + 8)[0] + 12
    struct.pack_into(">I", buf, pos + 17, crc32c.crc32c(bytes(buf[pos + 21 : pos + size])))


def shorten_first_record(buf: bytearray, pos: int) -> None:
    """The first record's length varint (one byte) made one shorter: its fields run past it."""
    zigzag = buf[pos + 61]
    assert zigzag < 0x80 and zigzag >= 4
    buf[pos + 61] = zigzag - 2


def scan(d: Path) -> tuple[int, dict]:
    r = CliRunner().invoke(app, ["scan", "--json", "--deep", "--jobs", "1", str(d)])
    assert r.exit_code in (0, 1, 2), r.output
    return r.exit_code, json.loads(r.stdout)


def dump_failure(path: Path) -> str | None:
    """The error line `dump --deep` ends the file with (None: every record decoded)."""
    r = CliRunner().invoke(app, ["dump", "--deep", str(path)])
    lines = [ln for ln in r.stderr.splitlines() if str(path) in ln and "corrupt" in ln]
    return lines[0] if lines else None


def undecodable(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == CODE]


def copy_logdir(tmp_path: Path) -> Path:
    d = tmp_path / "kafka-logs"
    realworld.writable_copy(realworld.require() / DIR, d)
    return d


@pytest.mark.realworld
def test_uncompressed_batch_with_recomputed_crc(tmp_path: Path) -> None:
    d = copy_logdir(tmp_path)
    assert undecodable(scan(d)[1]) == []
    log = d / SEG
    buf = bytearray(log.read_bytes())
    batches = [b for b in iter_batches(bytes(buf)) if b.magic == 2 and not b.is_compressed and b.record_count]
    b = batches[len(batches) // 2]
    shorten_first_record(buf, b.position)
    fix_crc(buf, b.position)
    log.write_bytes(buf)
    code, report = scan(d)
    assert code == 2
    (f,) = undecodable(report)
    assert f["path"] == str(log) and f["severity"] == "error"
    assert f["position"] == b.position and f["offset"] == b.base_offset
    assert f"offsets {b.base_offset}..{b.last_offset}" in f["message"]
    assert f["details"]["batches"] == [
        {"position": b.position, "base_offset": b.base_offset, "last_offset": b.last_offset}
    ]
    # the dump says the same about it (its failure line is in the finding)
    failure = dump_failure(log)
    assert failure is not None and failure.split("error: ")[-1] in f["message"]
    # the fix as printed: the dump names the record
    fix_cmd = f["fix"].split("`")[1].split()
    assert fix_cmd[:2] == ["logdoctor", "dump"]
    r = CliRunner().invoke(app, fix_cmd[1:])
    assert r.exit_code == 2 and "record 0" in r.stderr and failure in r.stderr


def _segment(compression: Compression, damaged: bool) -> bytes:
    """Three batches of five records; the middle one compressed and, when ``damaged``, its decompressed
    first record one byte shorter than its fields (the CRC recomputed)."""
    specs = [RecordSpec(value=b"v%d" % i, key=b"k%d" % i, timestamp=1_700_000_000_000 + i) for i in range(5)]
    first = build_record_batch(specs, base_offset=0)
    plain = bytearray(build_record_batch(specs, base_offset=5))
    last = build_record_batch(specs, base_offset=10)
    section = bytearray(plain[61:])
    if damaged:
        assert 4 <= section[0] < 0x80
        section[0] -= 2
    packed = gzip.compress(bytes(section)) if compression is Compression.GZIP else _zstd(bytes(section))
    mid = bytearray(plain[:61]) + packed
    struct.pack_into(">i", mid, 8, len(mid) - 12)
    mid[22] |= int(compression)
    fix_crc(mid, 0)
    return first + bytes(mid) + last


def _zstd(data: bytes) -> bytes:
    zstandard = pytest.importorskip("zstandard")
    return zstandard.ZstdCompressor().compress(data)


@pytest.mark.parametrize("compression", [Compression.GZIP, Compression.ZSTD])
def test_compressed_batch_with_recomputed_crc(tmp_path: Path, compression: Compression) -> None:
    d = tmp_path / "kafka-logs"
    part = d / "t-0"
    part.mkdir(parents=True)
    log = part / "00000000000000000000.log"
    log.write_bytes(_segment(compression, damaged=False))
    assert dump_failure(log) is None
    assert undecodable(scan(d)[1]) == []
    data = _segment(compression, damaged=True)
    log.write_bytes(data)
    mid = next(b for b in iter_batches(data) if b.base_offset == 5)
    assert mid.crc_valid() and mid.is_compressed
    code, report = scan(d)
    assert code == 2
    (f,) = undecodable(report)
    assert (f["path"], f["position"], f["offset"]) == (str(log), mid.position, 5)
    failure = dump_failure(log)
    assert failure is not None and failure.split("error: ")[-1] in f["message"]


def _logs() -> list[Path]:
    root = realworld.require()
    tiered = realworld.require_tiered() / "original"
    return sorted(root.glob("*/*/*.log")) + sorted(tiered.rglob("*.log"))


def _dump_flags(path: Path) -> list[int]:
    """The positions of the CRC-valid batches whose records do not decode, as `dump --deep` decodes
    them (``batch.records()`` of every batch of the file)."""
    out = []
    data = path.read_bytes()
    try:
        for b in iter_batches(data):
            if b.compute_crc() != b.stored_crc:
                continue
            try:
                for _ in b.records():
                    pass
            except FormatError:
                out.append(b.position)
    except FormatError:
        pass
    return out


@pytest.mark.realworld
def test_real_logs_decode_and_scan_agrees_with_dump() -> None:
    """No real segment has an undecodable batch, and on each (and on a damaged copy of one batch of each
    with records) the scan's walk flags exactly the batches the dump's decoder fails on."""
    logs = _logs()
    assert len(logs) > 100
    damaged = 0
    for path in logs:
        w = walk_file(str(path), True, True)
        if isinstance(w, OSError):
            continue
        assert w.undecodable == [], path
        assert _dump_flags(path) == []
    # damaged copies: the first uncompressed v2 batch with records of every segment
    for path in logs:
        buf = bytearray(path.read_bytes())
        try:
            b = next(
                b for b in iter_batches(bytes(buf)) if b.magic == 2 and not b.is_compressed and b.record_count
            )
        except (StopIteration, FormatError):
            continue
        if not 4 <= buf[b.position + 61] < 0x80:
            continue
        shorten_first_record(buf, b.position)
        fix_crc(buf, b.position)
        w = _walk_bytes(bytes(buf))
        assert [u.position for u in w.undecodable] == _dump_flags_bytes(bytes(buf)) == [b.position]
        damaged += 1
    assert damaged >= 30


def _walk_bytes(data: bytes):
    from logdoctor.checks.state.segment_walk import walk
    from logdoctor.checks.undecodable import undecodable_batches

    w = walk(data, verify_crc=True, with_positions=True)
    assert w.positions is not None
    w.undecodable = undecodable_batches(memoryview(data), w.positions, w.valid_bytes)
    return w


def _dump_flags_bytes(data: bytes) -> list[int]:
    out = []
    for b in iter_batches(data):
        try:
            for _ in b.records():
                pass
        except FormatError:
            out.append(b.position)
    return out


# --- the C check and its twin agree, and both agree with the decoder ------------------------------

_SPECS = [RecordSpec(value=b"value-%d" % i, key=b"k" * i, timestamp=1_700_000_000_000 + i) for i in range(4)]
_SEGMENT = b"".join(build_record_batch(_SPECS, base_offset=4 * k) for k in range(3))


@pytest.mark.skipif(not native.HAVE_SPEEDUPS, reason="the C extension is not built")
@settings(max_examples=tiers.examples(300), deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_SEGMENT) - 1), st.integers(0, 255)), min_size=1, max_size=4))
def test_c_and_twin_agree_on_mutated_records(edits: list[tuple[int, int]]) -> None:
    from array import array

    from logdoctor.formats.v2_twin import check_records_py

    buf = bytearray(_SEGMENT)
    starts = [b.position for b in iter_batches(_SEGMENT)]
    for at, value in edits:
        # records bytes and the count only: the framing stays what the walk framed
        if any(s + 57 <= at < s + int.from_bytes(_SEGMENT[s + 8 : s + 12], "big") + 12 for s in starts):
            buf[at] = value
    positions = array("q", starts)
    got_c = batch_v2.NATIVE.check_records(bytes(buf), positions, 0, len(starts))  # type: ignore[union-attr]
    got_py = check_records_py(bytes(buf), positions, 0, len(starts))
    assert got_c == got_py
    # both stop at the first batch the decoder fails on, with its error
    i = got_c[0]
    for k, s in enumerate(starts[:i]):
        b = next(iter_batches(bytes(buf), start=s, end=s + int.from_bytes(buf[s + 8 : s + 12], "big") + 12))
        b.record_list()  # decodes
        assert k < i
    if i < len(starts):
        s = starts[i]
        b = next(iter_batches(bytes(buf), start=s, end=s + int.from_bytes(buf[s + 8 : s + 12], "big") + 12))
        with pytest.raises(FormatError) as exc:
            b.record_list()
        if got_c[1] == 0:  # left to the Python path: a count that disagrees (RecordBatchV2.check_count)
            assert "Inconsistent batch offset range and count" in str(exc.value)
            return
        assert str(exc.value) == str(b._record_error(batch_v2.NATIVE.record_error(*got_c[1:]), False))  # type: ignore[union-attr]


def test_undecodable_needs_no_c() -> None:
    """The pure-Python twin finds the same batch (the walk without the C extension)."""
    import twins

    data = _segment(Compression.GZIP, damaged=False)
    buf = bytearray(data)
    b = next(b for b in iter_batches(data) if b.base_offset == 10)
    shorten_first_record(buf, b.position)
    fix_crc(buf, b.position)
    assert [u.position for u in twins.pure(_walk_bytes, bytes(buf)).undecodable] == [b.position]
    assert [u.position for u in _walk_bytes(bytes(buf)).undecodable] == [b.position]


def test_legacy_compressed_wrapper_with_bad_inner_message(tmp_path: Path) -> None:
    """A v1 gzip wrapper (its CRC intact) whose inner message's key length runs past it: the scan names
    the wrapper as `dump --deep` does (v0/v1 inner messages are decoded too)."""
    from logdoctor.formats import legacy
    from logdoctor.formats.codecs import compress

    specs = [RecordSpec(value=b"v%d" % i, key=b"k", timestamp=1_700_000_000_000 + i) for i in range(3)]
    plain = legacy.build_message_set(specs, magic=1, base_offset=0)
    inner = bytearray(plain)
    second = next(b.position for b in iter_batches(plain) if b.last_offset == 1)
    struct.pack_into(
        ">i", inner, second + 26, 1000
    )  # offset, size, crc, magic, attributes, timestamp: key length
    payload = compress(Compression.GZIP, bytes(inner), magic=1)
    wrapper = legacy._entry(1, 5, int(Compression.GZIP), 1_700_000_000_002, None, payload)
    d = tmp_path / "kafka-logs"
    (d / "t-0").mkdir(parents=True)
    log = d / "t-0" / "00000000000000000000.log"
    log.write_bytes(
        plain
        + legacy._entry(
            1, 5, int(Compression.GZIP), 1_700_000_000_002, None, compress(Compression.GZIP, plain, magic=1)
        )
    )
    assert undecodable(scan(d)[1]) == [] and dump_failure(log) is None
    log.write_bytes(plain + wrapper)
    assert [u.position for u in _walk_bytes(plain + wrapper).undecodable] == _dump_flags_bytes(
        plain + wrapper
    )
    code, report = scan(d)
    assert code == 2
    (f,) = undecodable(report)
    assert (f["position"], f["offset"]) == (len(plain), 5) and "(offset 5)" in f["message"]
    failure = dump_failure(log)
    assert failure is not None and failure.split("error: ")[-1] in f["message"]
