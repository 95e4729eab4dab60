"""Mutation fuzzing of real log-dir files through every public parser and through `scan --deep`.

A mutation takes bytes of a real file (../shared/realworld, read in place) and damages them the ways
a disk, a torn write or an attacker would: bytes flipped, a 1/2/4/8-byte field overwritten with an
edge value (0, -1, 2^31-1, 2^63-1, ...), bytes cut from the end, inserted or removed in the middle,
a run zeroed, or a text file's digits replaced by a huge number. Every parser must then return or
raise one of the typed errors of :mod:`logdoctor.errors`; anything else is a finding of the fuzzer.
"""

from __future__ import annotations

import contextlib
import random
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import realworld
from logdoctor.errors import LogDoctorError

EDGES_8 = [0, 1, -1, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63), 2**32, 2**53]
EDGES_4 = [0, 1, -1, 2**31 - 1, -(2**31), 0x7FFFFF00, 61, 12]
EDGES_2 = [0, -1, 0x7FFF, -0x8000, 7]


def mutate(data: bytes, rng: random.Random, steps: int) -> bytes:
    buf = bytearray(data)
    for _ in range(steps):
        if not buf:
            buf.extend(rng.randbytes(rng.randint(1, 64)))
            continue
        op = rng.randrange(8)
        at = rng.randrange(len(buf))
        if op == 0:  # flip a byte
            buf[at] ^= 1 << rng.randrange(8)
        elif op == 1:  # an 8-byte field with an edge value
            buf[at : at + 8] = struct.pack(">q", rng.choice(EDGES_8))[: len(buf) - at]
        elif op == 2:
            buf[at : at + 4] = struct.pack(">i", rng.choice(EDGES_4))[: len(buf) - at]
        elif op == 3:
            buf[at : at + 2] = struct.pack(">h", rng.choice(EDGES_2))[: len(buf) - at]
        elif op == 4:  # cut the end
            del buf[at:]
        elif op == 5:  # insert or remove bytes in the middle
            if rng.random() < 0.5:
                buf[at:at] = rng.randbytes(rng.randint(1, 16))
            else:
                del buf[at : at + rng.randint(1, 16)]
        elif op == 6:  # a zeroed run
            n = rng.randint(1, 64)
            buf[at : at + n] = bytes(min(n, len(buf) - at))
        else:  # text: a number grows huge, or a line doubles
            digits = [i for i, c in enumerate(buf) if 48 <= c <= 57]
            if digits and rng.random() < 0.7:
                i = rng.choice(digits)
                buf[i : i + 1] = b"9" * rng.choice([20, 400, 5000])
            else:
                nl = buf.find(b"\n", at)
                if nl > 0:
                    buf[nl:nl] = buf[at:nl] * rng.randint(2, 50)
    return bytes(buf)


NEGATIVE_POSITIONS = [-1, -7, -(2**31), -4096]


def negative_position(data: bytes, rng: random.Random) -> bytes:
    """A mutation class of its own (issue 24: the audit's 246 of 60,001): an offset index entry whose
    position (the entry's second int32) is negative."""
    n = len(data) // 8
    if n == 0:
        return data
    buf = bytearray(data)
    struct.pack_into(">i", buf, 8 * rng.randrange(n) + 4, rng.choice(NEGATIVE_POSITIONS))
    return bytes(buf)


#: logs the index is verified against: none valid (garbage, empty) and one with a valid batch
_NO_VALID_BATCH = [b"", b"\xff" * 61, bytes(64)]


def _verify_offset_index(data: bytes) -> None:
    """`dump --verify-index-only`: the index against logs without a valid batch and with one."""
    from logdoctor.checks.verify_index import scan_log_layout, verify_offset_index, verify_time_index
    from logdoctor.logdir.reader import LogReader

    for log in [*_NO_VALID_BATCH, _one_batch()]:
        layout = scan_log_layout(LogReader(log))
        verify_offset_index(data, 0, layout, file="f.index")
        verify_time_index(data[: len(data) // 12 * 12], 0, layout, file="f.timeindex")


def _one_batch() -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)  # fmt: skip
    for i in range(3):
        b.append(i, timestamp=1_700_000_000_000 + i, key=None, value=b"v%d" % i, headers=[])
    return bytes(b.build())


def _records(data: bytes) -> None:
    from logdoctor.formats.columns import decode_columns
    from logdoctor.formats.records import scan_batches

    result = scan_batches(data, source="fuzz.log", verify_crc=True)
    for batch in result.batches[:200]:
        with contextlib.suppress(LogDoctorError):
            list(batch.records())
    decode_columns(result.batches[:200])


def _walk(data: bytes) -> None:
    from logdoctor.checks.state.segment_walk import walk

    walk(data, 0, verify_crc=True, with_positions=True)


def _rebuild(data: bytes) -> None:
    from logdoctor.formats.recovery import rebuild_indexes

    rebuild_indexes(data, 0, source="fuzz.log")


def _index(kind: str) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> None:
        from logdoctor.formats import index as ix

        {"index": lambda d: ix.parse_offset_index(d, 0, source="f"),
         "timeindex": lambda d: ix.parse_time_index(d, 0, source="f"),
         "txnindex": lambda d: ix.parse_txn_index(d, source="f")}[kind](data)  # fmt: skip

    return parse


def _small(module: str, function: str) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> None:
        import importlib

        getattr(importlib.import_module(f"logdoctor.formats.{module}"), function)(data, source="f")

    return parse


def _kraft_snapshot(data: bytes) -> None:
    from logdoctor.formats.kraft_snapshot import parse_kraft_snapshot

    parse_kraft_snapshot(data, source="f")


def _each_record(data: bytes, decode: Callable[[Any], Any]) -> None:
    """``decode`` each record of the first 50 batches (200 records each) that decode at all."""
    from logdoctor.formats.records import scan_batches

    for batch in scan_batches(data, verify_crc=False).batches[:50]:
        try:
            records = list(batch.records())
        except LogDoctorError:
            continue
        for r in records[:200]:
            with contextlib.suppress(LogDoctorError):
                decode(r)


def _metadata_records(data: bytes) -> None:
    from logdoctor.formats.internal import decode_metadata_record

    _each_record(data, lambda r: decode_metadata_record(r.value, source="f"))


def _offsets_records(data: bytes) -> None:
    from logdoctor.formats.internal import decode_consumer_offsets

    _each_record(data, lambda r: decode_consumer_offsets(r.key, r.value, source="f"))


PARSERS: dict[str, list[Callable[[bytes], Any]]] = {
    "log": [_records, _walk, _rebuild, _offsets_records],
    "metadata-log": [_records, _metadata_records],
    "index": [_index("index"), _verify_offset_index],
    "timeindex": [_index("timeindex")],
    "snapshot": [_small("producer_snapshot", "parse_producer_snapshot")],
    "offset-checkpoint": [_small("checkpoint", "parse_offset_checkpoint")],
    "leader-epoch-checkpoint": [_small("checkpoint", "parse_leader_epoch_checkpoint")],
    "meta.properties": [_small("properties", "parse_meta_properties")],
    "partition.metadata": [_small("partition_metadata", "parse_partition_metadata")],
    "quorum-state": [_small("quorum_state", "parse_quorum_state")],
    "kraft-snapshot": [_kraft_snapshot],
}


def kind_of(path: Path) -> str | None:
    name = path.name
    if name.endswith(".log"):
        return "metadata-log" if path.parent.name == "__cluster_metadata-0" else "log"
    if name.endswith(".checkpoint") and path.parent.name == "__cluster_metadata-0":
        return "kraft-snapshot"
    for suffix in ("index", "timeindex", "snapshot"):
        if name.endswith("." + suffix):
            return suffix
    if name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                "log-start-offset-checkpoint", "cleaner-offset-checkpoint"):  # fmt: skip
        return "offset-checkpoint"
    return name if name in PARSERS else None


def samples(max_bytes: int = 512 * 1024) -> dict[str, list[Path]]:
    """Real files by kind (small enough to mutate many times), from ../shared/realworld."""
    out: dict[str, list[Path]] = {}
    for path in realworld.files():
        kind = kind_of(path)
        if kind is not None and 0 < path.stat().st_size <= max_bytes:
            out.setdefault(kind, []).append(path)
    return out


def untyped_errors(kind: str, data: bytes) -> list[str]:
    """Every parser of ``kind`` on ``data``; the exceptions that are not logdoctor's typed errors."""
    bad = []
    for parse in PARSERS[kind]:
        try:
            parse(data)
        except LogDoctorError:
            pass
        except Exception as exc:  # the very thing the fuzzer looks for
            bad.append(f"{getattr(parse, '__name__', parse)}: {type(exc).__name__}: {exc}"[:300])
    return bad
