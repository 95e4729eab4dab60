"""``fetch-remote``: write a new file with a remote-tier segment's original bytes (``restore``).

Streamed in ranged reads (a local kafka-local object: copied by the kernel), CRC-32C checked against
the source and batch-walked in one read back, its checksum kept in the backup dir; undo removes it.

Invariants: the target must not exist (a restore never replaces a file); never the whole object in
memory; nothing is renamed into place before it is read back equal to what was fetched and walked as
whole, CRC-valid, consecutive batches; a failed fetch leaves nothing in the log dir.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from typing import Any

from logdoctor.logdir import atomic
from logdoctor.logdir.files import open_regular
from logdoctor.repair import copies
from logdoctor.repair import snapshot as snap
from logdoctor.repair.backup import write_all
from logdoctor.repair.plan import Step
from logdoctor.repair.steps.base import (
    AFTER,
    BEFORE,
    OTHER,
    PARTIAL_SUFFIX,
    Operation,
    StepContext,
    StepStateError,
)
from logdoctor.repair.steps.copying import _append_fetched, _verified, read_manifest, report_copied


def _remote_segment(source: dict[str, Any]) -> Any:
    from logdoctor.logdir.refs import RemoteSegment, SegmentRef
    from logdoctor.logdir.storage import Storage

    storage, _ = Storage.of(source["storage"])
    remote = RemoteSegment(
        source["layout"],
        source["segment_id"],
        source["storage"],
        manifest=source.get("manifest"),
        indexes=source.get("indexes"),
        private_key=source.get("private_key"),
    )
    return SegmentRef(
        "",
        source["topic"],
        int(source["partition"]),
        int(source["base_offset"]),
        source["log"],
        int(source["object_size"]),
        None,
        storage,
        remote,
    )


FETCH_HASH_NAME = "crc32c"


def fetched_checksum(path: str) -> str:
    """The CRC-32C (hex) of a file a ``fetch-remote`` step wrote: a copy check at memory speed (the
    hardware CRC of :mod:`logdoctor.formats.crc`, several times a cryptographic hash's speed, over one
    mapping of the file: no copy into Python's memory), the segment's batches carrying their own CRC-32C
    besides."""
    from logdoctor.checks.state.file_records import read_buffer, release
    from logdoctor.formats.crc import crc32c

    view, handle, _ = read_buffer(path)
    try:
        return f"{crc32c(view):08x}"
    finally:
        release(view, handle)


def _local_object(source: dict[str, Any]) -> str | None:
    """The path of a segment object that is the segment's bytes on this machine's file system (the
    kafka-local layout in a local store): copied by the kernel. None for any other."""
    from logdoctor.logdir.storage import Storage, local_path

    if source.get("layout") != "kafka-local":
        return None
    storage, _ = Storage.of(source["storage"])
    return storage.path(local_path(source["log"])) if storage.is_local else None


def _check_restored(path: str, source: dict[str, Any], fetched: str) -> str:
    """The checks of a restored segment before it is renamed into place, in one read of it (a mapping:
    page-cache speed); StepStateError naming the object unless both hold. Returns its CRC-32C.

    - Read-back: the CRC-32C of the whole file equals ``fetched``, the CRC-32C of the bytes that were
      fetched (streamed) or of the source file (a kernel copy, which never hands the bytes to us).
      It covers every byte, the 21 bytes of each batch's header before its CRC'd part (base offset,
      length, partition leader epoch, magic, the CRC field itself) included, which no batch CRC covers;
      and it is the checksum the manifest keeps, by which resume, rollback and verify know the file.
    - Offsets (:func:`logdoctor.formats.records.consecutive_offsets_error`): every batch's offsets right
      after the previous one's, from the segment's base offset, each count fitting its offset range; the
      base offset is outside the batch CRC, so a moved one passes the walk below (issue 48).
    - Batch walk, as LogSegment.recover walks a segment (formats.recovery.rebuild_indexes, its C lane
      without the GIL): whole record batches from the first byte to the last, every CRC matching. It
      checks the object itself (a segment damaged before or at upload, bytes after the last batch, a
      torn last batch), which the read-back cannot see (both sides are the same damaged bytes), so
      that such a segment is never restored below the broker's recovery point, where the broker would
      not check it."""
    from logdoctor.checks.state.fast_lane import crc_checked_prefix
    from logdoctor.checks.state.file_records import read_buffer, release
    from logdoctor.formats.crc import crc32c
    from logdoctor.formats.records import consecutive_offsets_error
    from logdoctor.formats.recovery import rebuild_indexes

    view, handle, _ = read_buffer(path)
    try:
        digest = f"{crc32c(view):08x}"
        if digest != fetched:
            raise StepStateError(f"the restored {path} does not read back as fetched from {source['log']}")
        built = rebuild_indexes(
            view, int(source["base_offset"]), source=source["log"], crc_checked_until=crc_checked_prefix(view)
        )
        size = len(view)
        offsets = None
        if built.error is None and built.valid_bytes == size:
            offsets = consecutive_offsets_error(view, int(source["base_offset"]), source=source["log"])
    finally:
        release(view, handle)
    if built.error is not None or built.valid_bytes != size or offsets is not None:
        why = built.error or offsets or f"whole batches end at byte {built.valid_bytes} of {size}"
        raise StepStateError(f"{source['log']} (offsets from {source['base_offset']}): {why}; not restored")
    return digest


def _kernel_copy(src: str, fd: int, size: int, step: Step, ctx: StepContext) -> bool:
    """Copy the local file ``src`` into ``fd`` in the kernel (``os.copy_file_range``: no pass through
    Python's memory); False when the file system cannot (nothing written: copy it another way)."""
    try:
        fin = open_regular(src)
    except FileNotFoundError:
        raise StepStateError(f"{src}: the segment object is missing: plan again") from None
    try:
        found = os.fstat(fin).st_size
        if found != size:
            raise StepStateError(f"{src}: the segment has {found} bytes, planned {size}: plan again")
        pos = 0
        while pos < size:
            try:
                n = os.copy_file_range(fin, fd, min(copies.CHUNK, size - pos), pos, pos)
            except OSError as e:
                if pos == 0 and e.errno in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                    return False
                raise
            if n == 0:
                raise StepStateError(f"{src}: the object ends at byte {pos} of {size}")
            pos += n
            report_copied(n)
            ctx.crash(step.number, "temp-written")
    finally:
        os.close(fin)
    return True


#: what planning read of a segment to fetch, for the fetch in the same process (:func:`hold_planned_read`)
_PLANNED_READS: dict[tuple[str, str, str, str], tuple[Any, Any]] = {}
_PLANNED_LOCK = threading.Lock()


def _planned_key(step: Step) -> tuple[str, str, str, str]:
    source = step.params["source"]
    return (step.path, str(source["storage"]), str(source["log"]), str(source.get("segment_id")))


def hold_planned_read(step: Step, loaded: Any, opened: Any) -> None:
    """Keep, in this process's memory, what planning read of a ``fetch-remote`` step's segment (Aiven's
    manifest and data key ``loaded``; the ``.log`` object of a remote store ``opened``, a RangeReader: its
    size as the store answered, no file descriptor): the step's fetch in this process takes it (once)
    instead of asking the store again. A journal resumed in
    another process has none: its fetch reads the manifest and opens the object afresh, with every check.
    Either way the fetched bytes are checked (short reads, each chunk, the read-back CRC-32C, the batch
    walk: :func:`_check_restored`)."""
    with _PLANNED_LOCK:
        _PLANNED_READS[_planned_key(step)] = (loaded, opened)


def _take_planned_read(step: Step) -> tuple[Any, Any]:
    with _PLANNED_LOCK:
        return _PLANNED_READS.pop(_planned_key(step), (None, None))


class FetchRemote(Operation):
    """Write a new file with a remote-tier segment's original ``.log`` bytes (a restore), streamed in
    ranged reads (:func:`logdoctor.logdir.remote_reader.open_remote_log`: never the whole object in
    memory; an object on this machine's file system that is the segment's bytes: ``os.copy_file_range``),
    made under ``<path>.logdoctor-partial``, fsynced, read back and walked (:func:`_check_restored`), its
    checksum (:func:`fetched_checksum`) saved in the backup dir (a line of :data:`FETCHED_REL`), then
    renamed into place. The target must not exist (a restore never replaces a file). Undo removes it.

    params: source {storage, layout, segment_id, topic, partition, base_offset, log, object_size,
    manifest, indexes, private_key}, size (the segment's bytes), manifest (rel)|None.
    """

    op = "fetch-remote"

    def watched(self, step: Step) -> dict[str, str]:
        return {step.path: snap.SEGMENT}  # a segment: its size and the hash of its ends (snapshot doc)

    def state(self, step: Step, ctx: StepContext) -> str:
        if not os.path.lexists(step.path):
            return BEFORE
        manifest = read_manifest(ctx, step)
        if manifest is not None and set(manifest) == {"."}:
            ident = copies.identity(step.path)
            if _verified.get(step.path) == ident or fetched_checksum(step.path) == manifest["."]:
                _verified[step.path] = ident
                return AFTER
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        if not self.to_do(step, ctx, f"{step.path} exists and is not the restored segment"):
            return
        fetched, local = self._copy(step, ctx, None)
        self._check(step, ctx, None, fetched, local)
        copies.rename_durable(step.path + PARTIAL_SUFFIX, step.path)
        ctx.crash(step.number, "applied")

    def groupable(self, step: Step) -> bool:
        return True

    def prepare(self, step: Step, ctx: StepContext, barrier: atomic.SyncBarrier) -> Callable[[], None] | None:
        if not self.to_do(step, ctx, f"{step.path} exists and is not the restored segment"):
            return None
        fetched, local = self._copy(step, ctx, barrier)
        partial = step.path + PARTIAL_SUFFIX
        try:
            ctx.settle()  # the step before's check: its failure stops the group here
        except BaseException:
            copies.remove_tree(partial)
            raise
        # this segment's checks (and its manifest) on the group's check thread while the next is fetched;
        # every check is settled before the group's barrier, so before anything is renamed into place
        ctx.check_behind(lambda: self._check(step, ctx, barrier, fetched, local))

        def commit() -> None:
            os.rename(partial, step.path)
            barrier.folder(os.path.dirname(step.path))
            ctx.crash(step.number, "applied")

        return commit

    def _copy(
        self, step: Step, ctx: StepContext, barrier: atomic.SyncBarrier | None
    ) -> tuple[str | None, str | None]:
        """The segment's bytes into ``<path>.logdoctor-partial`` (fsynced now, or registered in ``barrier``):
        (the CRC-32C of the bytes fetched, None for a kernel copy; the local object copied by the kernel,
        else None)."""
        partial, source = step.path + PARTIAL_SUFFIX, step.params["source"]
        copies.remove_tree(partial)
        size = int(step.params["size"])
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            try:
                local = _local_object(source)
                if local is not None and _kernel_copy(local, fd, size, step, ctx):
                    fetched = None
                else:
                    local, fetched = None, self._stream(step, ctx, fd, source, size)
                if barrier is None:
                    os.fsync(fd)
            finally:
                os.close(fd)
            if barrier is not None:
                barrier.file(partial)  # written out by the disk while it is checked
        except BaseException:
            copies.remove_tree(partial)  # a failed fetch leaves nothing in the log dir
            raise
        return fetched, local

    def _check(
        self,
        step: Step,
        ctx: StepContext,
        barrier: atomic.SyncBarrier | None,
        fetched: str | None,
        local: str | None,
    ) -> None:
        """The checks of the fetched ``<path>.logdoctor-partial`` (:func:`_check_restored`; a kernel copy's
        source read for its CRC-32C after the copy: a source changed meanwhile does not match), then its
        manifest saved (durable now, or once ``barrier`` is flushed). A failure removes the partial file."""
        partial, source = step.path + PARTIAL_SUFFIX, step.params["source"]
        try:
            if fetched is None:
                assert local is not None
                fetched = fetched_checksum(local)
            digest = _check_restored(partial, source, fetched)
        except BaseException:
            copies.remove_tree(partial)  # a failed fetch leaves nothing in the log dir
            raise
        record = {"source": source["log"], "copy": step.path, "hash": FETCH_HASH_NAME}
        _append_fetched(ctx, step, {**record, "checksums": {".": digest}}, barrier)
        _verified[step.path] = copies.identity(partial)
        ctx.crash(step.number, "backed-up")

    def _stream(self, step: Step, ctx: StepContext, fd: int, source: dict[str, Any], size: int) -> str:
        """Stream the segment's original bytes into ``fd`` in ranged reads; their CRC-32C (hex)."""
        from logdoctor.errors import FormatError
        from logdoctor.formats.crc import crc32c
        from logdoctor.logdir.remote_aiven import AivenLogReader
        from logdoctor.logdir.remote_reader import open_remote_log

        crc = 0
        try:
            with open_remote_log(_remote_segment(source), *_take_planned_read(step)) as reader:
                if reader.size != size:
                    raise StepStateError(
                        f"{source['log']}: the segment has {reader.size} bytes, planned {size}: plan again"
                    )
                if isinstance(reader, AivenLogReader):
                    return self._stream_spans(step, ctx, fd, reader, source, size)
                pos = 0
                while pos < size:
                    chunk = reader.read_at(pos, min(copies.CHUNK, size - pos))
                    if not chunk:
                        raise StepStateError(f"{source['log']}: the object ends at byte {pos} of {size}")
                    crc = crc32c(chunk, crc)
                    write_all(fd, chunk)
                    pos += len(chunk)
                    report_copied(len(chunk))
                    ctx.crash(step.number, "temp-written")
        except FormatError as e:
            raise StepStateError(f"{source['log']} (offsets from {source['base_offset']}): {e}") from None
        return f"{crc:08x}"

    def _stream_spans(
        self, step: Step, ctx: StepContext, fd: int, reader: Any, source: dict[str, Any], size: int
    ) -> str:
        """An Aiven segment, span by span on the reader's threads (``AivenLogReader.for_each_span``): each
        span detransformed into a reused buffer, its CRC-32C taken and written at its position
        (``os.pwrite``) on the thread that detransformed it, while the next span is read and
        decompressed; the spans' CRCs joined in order. Their CRC-32C (hex)."""
        from logdoctor.formats.crc import crc32c, crc32c_combine

        def work(pos: int, view: memoryview) -> int:
            crc = crc32c(view)
            while view:
                n = os.pwrite(fd, view, pos)
                view, pos = view[n:], pos + n
            return crc

        state = {"crc": 0, "end": 0}

        def done(pos: int, length: int, crc: int) -> None:
            assert pos == state["end"]
            state["crc"] = crc32c_combine(state["crc"], crc, length)
            state["end"] = pos + length
            report_copied(length)
            ctx.crash(step.number, "temp-written")

        reader.for_each_span(work, done, span=copies.CHUNK)
        if state["end"] != size:
            raise StepStateError(f"{source['log']}: the object ends at byte {state['end']} of {size}")
        return f"{state['crc']:08x}"

    def undo(self, step: Step, ctx: StepContext) -> None:
        copies.remove_tree(step.path + PARTIAL_SUFFIX)
        if self.state(step, ctx) == OTHER:
            raise StepStateError(f"{step.path} is not the restored segment: it is kept")
        copies.remove_tree(step.path)
        _verified.pop(step.path, None)

    def live_cost(self, step: Step) -> int:
        return int(step.params.get("size") or 0)


def fetch_remote(path: str, source: dict[str, Any], size: int) -> Step:
    """Write the new file ``path`` with the original bytes of the remote segment ``source`` (see
    :class:`FetchRemote`)."""
    return Step(FetchRemote.op, path, {"source": source, "size": size, "manifest": None})
