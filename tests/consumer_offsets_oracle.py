"""An independent reading of ``__consumer_offsets`` for tests: kafka-python reads the batches, Kafka's own
JSON schemas (../shared/kafka-schemas, through tests/kafka_schemas.py, which shares no code with
logdoctor.formats.internal) decode the OffsetCommit keys and values, and the group coordinator's replay
(K:group-coordinator/.../OffsetMetadataManager.java replay / replayEndTransactionMarker) is restated here;
each partition's log range is read from its files (kafka-python for the log end, the
log-start-offset-checkpoint and the first segment for the log start, one empty segment at the checkpoint
entry for a folder without any, as LogLoader creates)."""

from __future__ import annotations

import struct
from pathlib import Path

from kafka.record import MemoryRecords

import kafka_schemas as ks


def segments(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.log"))


def batches(folder: Path):
    for log in segments(folder):
        recs = MemoryRecords(log.read_bytes())
        while recs.has_next():
            batch = recs.next_batch()
            if batch is None:
                return
            yield batch


def commits(folder: Path) -> dict[tuple[str, str, int], int]:
    key_spec = ks.Spec(ks.load("group-coordinator/OffsetCommitKey.json"))
    value_spec = ks.Spec(ks.load("group-coordinator/OffsetCommitValue.json"))
    offsets: dict[tuple[str, str, int], tuple[int, int]] = {}  # -> (committed offset, record offset)
    pending: dict[int, dict[tuple[str, str, int], tuple[int, int]]] = {}
    try:
        for batch in batches(folder):
            control = batch.magic >= 2 and batch.is_control_batch
            pid = batch.producer_id if batch.magic >= 2 and batch.is_transactional else -1
            for r in batch:
                if control:
                    kind = struct.unpack(">h", r.key[2:4])[0]  # ControlRecordType: version, type
                    done = pending.pop(batch.producer_id, {})
                    if kind == 1:
                        for k, v in done.items():
                            if k not in offsets or v[1] > offsets[k][1]:
                                offsets[k] = v
                    continue
                if r.key is None or struct.unpack(">h", r.key[:2])[0] not in (0, 1):
                    continue
                key, _ = ks.read(key_spec, r.key, struct.unpack(">h", r.key[:2])[0], 2)
                k = (key["group"], key["topic"], key["partition"])
                if r.value is None:
                    offsets.pop(k, None)
                    for p in pending.values():
                        p.pop(k, None)
                    continue
                value, _ = ks.read(value_spec, r.value, struct.unpack(">h", r.value[:2])[0], 2)
                if pid < 0:
                    offsets[k] = (value["offset"], r.offset)
                else:
                    pending.setdefault(pid, {})[k] = (value["offset"], r.offset)
    except Exception:
        pass
    return {k: v[0] for k, v in offsets.items()}


def checkpoint(path: Path) -> dict[tuple[str, int], int]:
    if not path.is_file():
        return {}
    lines = path.read_text().splitlines()
    out = {}
    for line in lines[2:]:
        topic, part, off = line.rsplit(" ", 2)
        out[(topic, int(part))] = int(off)
    return out


def log_range(folder: Path, start_cp: int | None) -> tuple[int, int]:
    logs = segments(folder)
    if not logs:
        s = start_cp or 0
        return s, s
    end = int(logs[-1].name.split(".")[0])
    recs = MemoryRecords(logs[-1].read_bytes())
    while recs.has_next():
        b = recs.next_batch()
        if b is None:
            break
        end = (b.last_offset if b.magic >= 2 else list(b)[-1].offset) + 1
    return max(start_cp or 0, int(logs[0].name.split(".")[0])), end


def expected_out_of_range(log_dir: Path) -> tuple[set[tuple[str, str, int, int]], int]:
    """(group, topic, partition, committed) outside their partition's log, and the commits judged."""
    starts = checkpoint(log_dir / "log-start-offset-checkpoint")
    out: set[tuple[str, str, int, int]] = set()
    judged = 0
    for co in sorted(log_dir.glob("__consumer_offsets-*")):
        for (group, topic, part), committed in commits(co).items():
            folder = log_dir / f"{topic}-{part}"
            if not folder.is_dir() or committed < 0:
                continue
            judged += 1
            start, end = log_range(folder, starts.get((topic, part)))
            if not start <= committed <= end:
                out.add((group, topic, part, committed))
    return out, judged


def offset_commit_record(
    group: str, topic: str, partition: int, offset: int | None
) -> tuple[bytes, bytes | None]:
    """An OffsetCommit key (type 1) and value (version 3, None: a tombstone) from Kafka's JSON schemas."""
    key_spec = ks.Spec(ks.load("group-coordinator/OffsetCommitKey.json"))
    value_spec = ks.Spec(ks.load("group-coordinator/OffsetCommitValue.json"))
    fields = {"group": group, "topic": topic, "partition": partition}
    key = struct.pack(">h", 1) + ks.write(key_spec, fields, 1)
    if offset is None:
        return key, None
    value = {"offset": offset, "leader_epoch": -1, "metadata": "", "commit_timestamp": 1700000000000}
    return key, struct.pack(">h", 3) + ks.write(value_spec, value, 3)


def batch(
    base: int, records: list[tuple[bytes, bytes | None]], pid: int = -1, control: bool = False
) -> bytes:
    """One v2 batch written by kafka-python's builder (transactional when ``pid`` >= 0); ``control``: the
    control bit set and the CRC-32C recomputed (the builder writes no control batches)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.util import calc_crc32c

    b = DefaultRecordBatchBuilder(2, 0, 1 if pid >= 0 else 0, pid, 0 if pid >= 0 else -1, -1, 1 << 20)
    for i, (k, v) in enumerate(records):
        b.append(i, 1700000000000 + i, k, v, [])
    data = bytearray(b.build())
    data[0:8] = struct.pack(">q", base)
    if control:
        attrs = struct.unpack_from(">h", data, 21)[0] | 0x20
        struct.pack_into(">h", data, 21, attrs)
        struct.pack_into(">I", data, 17, calc_crc32c(bytes(data[21:])))
    return bytes(data)


def marker(commit: bool) -> tuple[bytes, bytes]:
    """An end transaction marker's control record: key (version 0, type COMMIT 1 / ABORT 0), value
    (version 0, coordinator epoch 0)."""
    return struct.pack(">hh", 0, 1 if commit else 0), struct.pack(">hi", 0, 0)
