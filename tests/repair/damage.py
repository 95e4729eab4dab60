"""Helpers for the repair tests: copies of real log dirs, the damage the scan issue lists, tree
snapshots, and an independent record reader (kafka-python)."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from logdoctor.formats.records import iter_batches
from logdoctor.formats.recovery import rebuild_indexes
from logdoctor.logdir.names import segment_file_name

BROKER_UID = 4242  # the broker's user in the copies (the scan models the log dir's owner)


def copy_log_dir(src: Path, dst: Path, *, owner: int = BROKER_UID) -> Path:
    """Copy a real log dir with a broker's ordinary modes (dirs 755, files 644) and owner (root only:
    the scan models the broker's user as the log dir's owner, and the repairs restore owners)."""
    if os.geteuid() != 0:
        pytest.skip(f"needs root: the copies belong to a broker user (uid {owner}) as on a real broker host")
    shutil.copytree(src, dst, symlinks=True)
    for folder, _dirs, files in os.walk(dst):
        os.chmod(folder, 0o755)
        os.chown(folder, owner, owner)
        for f in files:
            p = os.path.join(folder, f)
            os.chmod(p, 0o644)
            os.chown(p, owner, owner)
    return dst


def give_to_broker(root: Path, owner: int = BROKER_UID) -> None:
    """Every folder and file under ``root`` (itself too) given to the broker's user (root only)."""
    for folder, _dirs, files in os.walk(root):
        os.chown(folder, owner, owner)
        for f in files:
            os.chown(os.path.join(folder, f), owner, owner)


def tree(root: Path, *, with_mtime: bool = False) -> dict[str, tuple]:
    """relative path -> (kind, sha256, mode, uid, gid[, mtime_ns]) for every file and folder."""
    out: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(folder, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_ISDIR(st.st_mode):
                item: tuple = ("dir", None, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
            else:
                item = (
                    "file",
                    hashlib.sha256(Path(p).read_bytes()).hexdigest(),
                    stat.S_IMODE(st.st_mode),
                    st.st_uid,
                    st.st_gid,
                )
            out[rel] = item + ((st.st_mtime_ns,) if with_mtime else ())
    return out


def read_records(log_dir: Path) -> dict[str, dict[int, tuple]]:
    """partition folder -> {offset: (key, value, timestamp)} of every readable record of live .log
    files, read with kafka-python, stopping at a segment's first unreadable or CRC-failing batch."""
    out: dict[str, dict[int, tuple]] = {}
    for part in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        recs: dict[int, tuple] = {}
        for log in sorted(part.glob("*.log")):
            mr = MemoryRecords(log.read_bytes())
            try:
                while mr.has_next():
                    batch = mr.next_batch()
                    if batch is None or not batch.validate_crc():
                        break
                    for r in batch:
                        recs[r.offset] = (r.key, r.value, r.timestamp)
            except Exception:  # kafka-python's own corrupt-record errors
                pass
        out[part.name] = recs
    return out


def batch_positions(log: Path) -> list[tuple[int, int, int]]:
    """(position, size, base offset) of each batch."""
    return [(b.position, b.size, b.base_offset) for b in iter_batches(log.read_bytes(), source=str(log))]


def split_into_segments(part: Path, pieces: int = 3) -> list[int]:
    """Split a single-segment partition into ``pieces`` segments at batch boundaries, as a broker
    rolling it would have left them (indexes as recovery writes them). Returns the base offsets."""
    logs = sorted(part.glob("*.log"))
    assert len(logs) == 1
    log = logs[0]
    data = log.read_bytes()
    batches = batch_positions(log)
    assert len(batches) >= pieces * 2, f"{log} has too few batches to split"
    cuts = [0] + [batches[len(batches) * k // pieces][0] for k in range(1, pieces)] + [len(data)]
    bases = [batches[0][2]] + [batches[len(batches) * k // pieces][2] for k in range(1, pieces)]
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        p = log.with_suffix(suffix)
        if p.exists():
            p.unlink()
    st = os.stat(part)
    for base, lo, hi in zip(bases, cuts, cuts[1:], strict=False):
        chunk = data[lo:hi]
        r = rebuild_indexes(chunk, base)
        for suffix, content in ((".log", chunk), (".index", r.offset_index), (".timeindex", r.time_index)):
            p = part / segment_file_name(base, suffix)
            p.write_bytes(content)
            os.chown(p, st.st_uid, st.st_gid)
            os.chmod(p, 0o644)
    return bases


def biggest_partition(log_dir: Path, *, exclude: set[str] = frozenset(), min_batches: int = 4) -> Path | None:
    best, best_size = None, -1
    for part in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        if part.name.startswith("__cluster_metadata") or part.name in exclude:
            continue
        logs = sorted(part.glob("*.log"))
        size = sum(p.stat().st_size for p in logs)
        if size > best_size and sum(len(batch_positions(p)) for p in logs) >= min_batches:
            best, best_size = part, size
    return best


def set_checkpoint(
    log_dir: Path, name: str, topic: str, partition: int, offset: int, *, stale_count: bool
) -> None:
    """Put ``topic partition offset`` in a checkpoint (adding the line if needed); optionally make the
    count line disagree with the entries."""
    p = log_dir / name
    lines = p.read_text().splitlines() if p.exists() and p.stat().st_size else ["0", "0"]
    entries = [ln for ln in lines[2:] if ln.strip()]
    entries = [e for e in entries if e.split()[:2] != [topic, str(partition)]]
    entries.append(f"{topic} {partition} {offset}")
    count = len(entries) + (1 if stale_count else 0)
    p.write_text("\n".join(["0", str(count), *entries]) + "\n")
    os.chown(p, BROKER_UID, BROKER_UID)


def cut_final_batch(log: Path, nbytes: int = 7) -> None:
    """A torn write: the final batch loses its last bytes."""
    size = log.stat().st_size
    os.truncate(log, size - nbytes)


def split_flip_and_cut(part: Path) -> list[Path]:
    """Split a single-segment partition into four segments (:func:`split_into_segments`), flip a byte in
    the records of the second segment's third batch (its CRC no longer matches) and tear the last
    segment's final batch (:func:`cut_final_batch`). Returns the four .log files."""
    bases = split_into_segments(part, pieces=4)
    logs = [part / segment_file_name(b, ".log") for b in bases]
    pos, size, _ = batch_positions(logs[1])[2]
    data = bytearray(logs[1].read_bytes())
    data[pos + size - 3] ^= 0x5A
    logs[1].write_bytes(bytes(data))
    cut_final_batch(logs[3])
    return logs


def pad_index(path: Path, entry_size: int, slots: int = 64) -> None:
    """An unclean shutdown's untrimmed (preallocated) index: zero slots after the real entries."""
    with open(path, "ab") as f:
        f.write(b"\0" * entry_size * slots)
