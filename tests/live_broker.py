"""A live broker for tests: a separate process that holds a log dir's ``.lock`` as Kafka's broker does and
changes one or more partitions the way Kafka's storage classes change them while a broker runs.

What it does, and the Kafka source each step follows:

- ``.lock``: ``FileChannel.open(.lock, CREATE, READ, WRITE).tryLock()``
  (K:server-common/.../server/util/FileLock.java): on Linux a POSIX record lock on the whole file,
  ``fcntl(F_SETLK, F_WRLCK, start 0, len 0)`` (:func:`fcntl.lockf`). It must be another process: a POSIX
  lock is dropped when its process closes *any* descriptor of the file, and a scan in the test's process
  opens ``.lock`` to probe it.
- ``.kafka_cleanshutdown`` is deleted at startup (K:core/.../log/LogManager.scala loadLogs): a running
  broker's dir has none.
- The active segment's ``.index`` and ``.timeindex`` are preallocated to ``log.index.size.max.bytes``
  (10 MiB, rounded down to a whole entry: AbstractIndex's constructor and ``resize``) and zero past their
  last entry.
- Appends (K:storage/.../log/LogSegment.java append): the batch's bytes go to the ``.log`` first; then, once
  more than ``index.interval.bytes`` were appended since the last entry, an offset index entry (the batch's
  last offset, the batch's position) and a time index entry (the largest timestamp so far, its batch's last
  offset) are written into the preallocated files. The index entry lands after the log bytes.
- A roll (LogSegment.onBecomeInactiveSegment, LocalLog.roll): the time index gets its final entry, both
  indexes are trimmed to their entries (``trimToValidSize``), a new segment starts at the log end with
  preallocated indexes.
- Retention (UnifiedLog.deleteSegmentFiles, LogSegment.changeFileSuffixes): the oldest segment's files are
  renamed ``.deleted`` and removed later (``file.delete.delay.ms``: here at the next deletion); the log start
  offset moves to the next segment's base offset.
- Checkpoints (K:server-common/.../CheckpointFile.java write): ``recovery-point-offset-checkpoint`` and
  ``log-start-offset-checkpoint`` are rewritten through a ``.tmp`` file renamed into place; the recovery
  point is the base offset of the active segment (flushed up to the roll), behind the log end;
  ``replication-offset-checkpoint`` (the high watermarks) is written at the same moment, behind it too.

The process prints one line per event (``append``, ``roll``, ``delete``, ``checkpoint``) with a running
count, so a test waits for events, never for time. ``stop`` on its stdin ends it after the step under way
(the dir is left as a live broker leaves it at that moment: lock released, no clean-shutdown marker);
``roll`` rolls every partition after its next append (:meth:`LiveBroker.roll`), as ``segment.ms`` does.

Run: ``python tests/live_broker.py ROLL_BYTES LOG_DIR PARTITION [PARTITION ...]`` (a test uses
:class:`LiveBroker`).
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.records import iter_batches
from logdoctor.formats.writer import build_record_batch

INDEX_MAX_BYTES = 10 * 1024 * 1024  # log.index.size.max.bytes
INDEX_INTERVAL_BYTES = 4096  # index.interval.bytes
OFFSET_ENTRY, TIME_ENTRY = 8, 12

# how often the writer rolls and how many segments retention keeps: small, so a test sees several rolls
ROLL_BYTES = 64 * 1024
KEEP_SEGMENTS = 3
RECORDS_PER_BATCH = 20
VALUE_BYTES = 100


def _name(base: int, suffix: str) -> str:
    return f"{base:020d}{suffix}"


@dataclass
class _Partition:
    """One partition the writer appends to: where its log ends and what its active segment's indexes hold."""

    folder: Path
    next_offset: int
    base: int  # the active segment's base offset
    log_size: int
    offset_entries: int = 0
    time_entries: int = 0
    bytes_since_entry: int = 0
    max_ts: int = -1
    max_ts_offset: int = -1
    last_time_entry_ts: int = -1
    segments: list[int] = field(default_factory=list)  # base offsets, oldest first
    pending_removal: list[Path] = field(default_factory=list)  # .deleted files not yet removed

    def path(self, base: int, suffix: str) -> Path:
        return self.folder / _name(base, suffix)


def open_partition(folder: Path) -> _Partition:
    """The partition as a broker reopens it at startup: its log end from the last batch of its last segment
    (the project's own reader), the active segment's indexes resized to the preallocated size."""
    bases = sorted(int(p.name[:-4]) for p in folder.glob("*.log"))
    if not bases:
        bases = [0]
        (folder / _name(0, ".log")).touch()
    base = bases[-1]
    data = (folder / _name(base, ".log")).read_bytes()
    next_offset = base
    for batch in iter_batches(data):
        next_offset = batch.last_offset + 1
    p = _Partition(folder, next_offset, base, len(data), segments=bases)
    _preallocate(p, base, keep=True)
    return p


def _preallocate(p: _Partition, base: int, *, keep: bool) -> None:
    """The active segment's indexes at their preallocated size (AbstractIndex: the file is set to
    maxIndexSize rounded down to a whole entry; the entries already there are kept when ``keep``)."""
    for suffix, entry, attr in (
        (".index", OFFSET_ENTRY, "offset_entries"),
        (".timeindex", TIME_ENTRY, "time_entries"),
    ):
        path = p.path(base, suffix)
        entries = 0
        if keep and path.exists():
            entries = _real_entries(path.read_bytes(), entry)
        with open(path, "ab") as f:
            f.truncate(entries * entry)
            f.truncate(INDEX_MAX_BYTES // entry * entry)
        setattr(p, attr, entries)


def _real_entries(raw: bytes, entry: int) -> int:
    """Entries of an index file before its zero tail (a trimmed file: all of them)."""
    n = len(raw) // entry
    while n > 0 and raw[(n - 1) * entry : n * entry] == bytes(entry):
        n -= 1
    return n


def _append(p: _Partition, now_ms: int) -> None:
    begin_append(p, now_ms, 1.0)()


def begin_append(p: _Partition, now_ms: int, part: float) -> Callable[[], None]:
    """One append begun: the first ``part`` of the batch's bytes written to the ``.log`` (what a reader sees
    while the broker's write of the batch is under way: a batch torn at the file's end). The function
    returned ends it: the rest of the bytes, then the index entries (LogSegment.append)."""
    records = [
        RecordSpec(
            value=(b"v%d-" % (p.next_offset + i)).ljust(VALUE_BYTES, b"x"),
            key=b"k%d" % i,
            timestamp=now_ms + i,
        )
        for i in range(RECORDS_PER_BATCH)
    ]
    batch = build_record_batch(records, base_offset=p.next_offset)
    cut = int(len(batch) * part)
    with open(p.path(p.base, ".log"), "ab") as f:  # the log bytes first
        f.write(batch[:cut])
    return lambda: _end_append(p, now_ms, batch, cut)


def _end_append(p: _Partition, now_ms: int, batch: bytes, cut: int) -> None:
    if cut < len(batch):
        with open(p.path(p.base, ".log"), "ab") as f:
            f.write(batch[cut:])
    last = p.next_offset + RECORDS_PER_BATCH - 1
    position = p.log_size
    p.log_size += len(batch)
    p.next_offset = last + 1
    if now_ms + RECORDS_PER_BATCH - 1 > p.max_ts:
        p.max_ts, p.max_ts_offset = now_ms + RECORDS_PER_BATCH - 1, last
    if p.bytes_since_entry > INDEX_INTERVAL_BYTES:  # then the index entries, as LogSegment.append
        with open(p.path(p.base, ".index"), "r+b") as f:
            f.seek(p.offset_entries * OFFSET_ENTRY)
            f.write(struct.pack(">ii", last - p.base, position))
        p.offset_entries += 1
        _time_entry(p)
        p.bytes_since_entry = 0
    p.bytes_since_entry += len(batch)


def _time_entry(p: _Partition) -> None:
    """TimeIndex.maybeAppend: an entry when the largest timestamp grew since the last one."""
    if p.max_ts <= p.last_time_entry_ts:
        return
    with open(p.path(p.base, ".timeindex"), "r+b") as f:
        f.seek(p.time_entries * TIME_ENTRY)
        f.write(struct.pack(">qi", p.max_ts, p.max_ts_offset - p.base))
    p.time_entries += 1
    p.last_time_entry_ts = p.max_ts


def _roll(p: _Partition) -> None:
    """onBecomeInactiveSegment, then a new active segment at the log end."""
    _time_entry(p)
    for suffix, entry, n in (
        (".index", OFFSET_ENTRY, p.offset_entries),
        (".timeindex", TIME_ENTRY, p.time_entries),
    ):
        os.truncate(p.path(p.base, suffix), n * entry)
    p.base = p.next_offset
    p.segments.append(p.base)
    p.path(p.base, ".log").touch()
    p.log_size = 0
    p.offset_entries = p.time_entries = p.bytes_since_entry = 0
    p.last_time_entry_ts = -1
    _preallocate(p, p.base, keep=False)


def _delete_oldest(p: _Partition) -> None:
    """Retention: rename the oldest segment's files .deleted; remove the ones renamed at the previous
    deletion (Kafka removes them ``file.delete.delay.ms`` later, 60 s by default: here one deletion later)."""
    for old in p.pending_removal:
        os.remove(old)
    base = p.segments.pop(0)
    p.pending_removal = []
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        src = p.path(base, suffix)
        if src.exists():
            dst = src.with_name(src.name + ".deleted")
            os.rename(src, dst)
            p.pending_removal.append(dst)


def _write_checkpoint(log_dir: Path, name: str, values: dict[str, int]) -> None:
    """CheckpointFile.write: version 0, the count, one ``topic partition offset`` line each; through a .tmp
    file, fsynced and renamed into place. Entries of other partitions are kept as they were."""
    path = log_dir / name
    lines: dict[tuple[str, str], str] = {}
    if path.exists():
        for line in path.read_text().splitlines()[2:]:
            parts = line.split()
            if len(parts) == 3:
                lines[(parts[0], parts[1])] = parts[2]
    for folder, offset in values.items():
        topic, _, part = folder.rpartition("-")
        lines[(topic, part)] = str(offset)
    body = f"0\n{len(lines)}\n" + "".join(f"{t} {n} {o}\n" for (t, n), o in lines.items())
    tmp = path.with_name(name + ".tmp")
    with open(tmp, "w") as f:
        f.write(body)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def run(log_dir: Path, folders: list[str], roll_bytes: int = ROLL_BYTES) -> None:
    lock = os.open(log_dir / ".lock", os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # FileLock.tryLock: fcntl F_SETLK F_WRLCK 0..EOF
    (log_dir / ".kafka_cleanshutdown").unlink(missing_ok=True)
    parts = [open_partition(log_dir / f) for f in folders]
    counts = {"append": 0, "roll": 0, "delete": 0, "checkpoint": 0}

    def event(kind: str) -> None:
        counts[kind] += 1
        print(kind, counts[kind], flush=True)

    print("ready", flush=True)
    now_ms = 1_700_000_000_000
    while True:
        roll_now = False
        readable, _, _ = select.select([sys.stdin], [], [], 0.002)
        if readable:
            if sys.stdin.readline().strip() != "roll":
                break  # "stop" or the test's end (EOF)
            roll_now = True
        for p in parts:
            now_ms += 1000
            _append(p, now_ms)
            event("append")
            if p.log_size >= roll_bytes or roll_now:
                _roll(p)
                event("roll")
                if len(p.segments) > KEEP_SEGMENTS:
                    _delete_oldest(p)
                    event("delete")
                recovery = {q.folder.name: q.base for q in parts}
                start = {q.folder.name: q.segments[0] for q in parts}
                _write_checkpoint(log_dir, "recovery-point-offset-checkpoint", recovery)
                _write_checkpoint(log_dir, "log-start-offset-checkpoint", start)
                # the high watermark as the followers last acknowledged it: the log end at the roll
                _write_checkpoint(log_dir, "replication-offset-checkpoint", recovery)
                event("checkpoint")
    os.close(lock)


class LiveBroker:
    """The writer as a context manager: started on ``log_dir`` (a writable copy) for ``folders`` (partition
    folder names), ready when the lock is held and the indexes preallocated; stopped at the end. A thread
    reads its events as they come, so the writer never waits on a full pipe while a command runs."""

    def __init__(
        self, log_dir: str | os.PathLike[str], folders: list[str], *, roll_bytes: int = ROLL_BYTES
    ) -> None:
        self.roll_bytes = roll_bytes  # a segment rolls once its .log holds this many bytes (segment.bytes)
        self.log_dir = Path(log_dir)
        self.folders = folders
        self.counts = {"append": 0, "roll": 0, "delete": 0, "checkpoint": 0}
        self._changed = threading.Condition()
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def __enter__(self) -> LiveBroker:
        self._proc = subprocess.Popen(
            [sys.executable, __file__, str(self.roll_bytes), str(self.log_dir), *self.folders],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if line.strip() != "ready":
            self._proc.kill()
            self._proc.wait()
            raise RuntimeError(f"live broker did not start: {line!r}")
        self._reader = threading.Thread(target=self._read_events, daemon=True)
        self._reader.start()
        return self

    def _read_events(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            name, _, count = line.strip().partition(" ")
            with self._changed:
                if name in self.counts:
                    self.counts[name] = int(count)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, kind: str, more: int = 1, timeout: float = 600.0) -> int:
        """Wait until ``more`` more events of ``kind`` happened (bounded by ``timeout``, far above what a
        loaded machine needs: the test waits for events, never for a time); the count of ``kind`` then."""
        with self._changed:
            return self._wait_until(kind, self.counts[kind] + more, timeout)

    def _wait_until(self, kind: str, target: int, timeout: float = 600.0) -> int:
        """Wait, holding ``_changed``, until the count of ``kind`` is at least ``target``."""
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        while self.counts[kind] < target:
            left = deadline - time.monotonic()
            if left <= 0 or self._proc.poll() is not None:
                raise RuntimeError(f"live broker: no {kind} ({self.counts}, exit {self._proc.poll()})")
            self._changed.wait(min(left, 1.0))
        return self.counts[kind]

    def roll(self) -> None:
        """Roll every partition's active segment now (as ``segment.ms`` does: LogSegment.shouldRoll), after
        one more append to it, and wait for the rolls."""
        assert self._proc is not None and self._proc.stdin is not None
        with self._changed:
            target = self.counts["roll"] + len(self.folders)
            self._proc.stdin.write("roll\n")
            self._proc.stdin.flush()
            self._wait_until("roll", target)

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write("stop\n")
            self._proc.stdin.close()
        except BrokenPipeError:
            pass
        self._proc.wait(timeout=600)
        if self._reader is not None:
            self._reader.join(timeout=600)


if __name__ == "__main__":
    run(Path(sys.argv[2]), sys.argv[3:], int(sys.argv[1]))
