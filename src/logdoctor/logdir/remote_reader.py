"""A remote segment's bytes, whichever layout stored it: :func:`open_remote_log` (its original ``.log``
bytes, by position) and :func:`remote_index_bytes` (its offset or time index). A kafka-local object is the
segment's bytes as the broker wrote them; an Aiven one is read by
:class:`~logdoctor.logdir.remote_aiven.AivenLogReader`.

Invariants: a read asks the store for the byte range it needs only (Aiven: the chunks that hold it), and never
again for an object this process already opened when the caller hands it over (``loaded``, ``opened``); bad
objects raise :class:`~logdoctor.errors.FormatError` naming the object key, never a silent gap: callers stop
that segment's rows there and report the offsets. An index that cannot be read is empty (it only makes seeks
shorter).
"""

from __future__ import annotations

from typing import Any

from logdoctor.errors import FormatError
from logdoctor.logdir.refs import SegmentRef
from logdoctor.logdir.remote_aiven import AivenLogReader, load_manifest
from logdoctor.logdir.remote_store import missing_object
from logdoctor.logdir.storage import RangeReader

__all__ = ["open_remote_log", "remote_index_bytes"]


class _PlainReader:
    """A kafka-local segment: the object is the segment's bytes."""

    def __init__(self, seg: SegmentRef, opened: RangeReader | None = None) -> None:
        try:
            self._reader = opened if opened is not None else seg.storage.open(seg.path)
        except FileNotFoundError:
            raise missing_object(seg.path, ".log") from None
        self.size = self._reader.size

    def detach(self) -> RangeReader:
        """The open object, left open by this reader's close (for another: :func:`open_remote_log`)."""
        opened, self._reader = self._reader, RangeReader(None, self._reader.size, False)
        return opened

    def read_at(self, offset: int, length: int) -> bytes:
        return self._reader.read_at(offset, length)

    def close(self) -> None:
        self._reader.close()

    def __enter__(self) -> _PlainReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_remote_log(
    seg: SegmentRef, loaded: tuple[Any, bytes | None] | None = None, opened: RangeReader | None = None
) -> Any:
    """A reader (``size``, ``read_at``, ``close``; a context manager) of a remote segment's original
    ``.log`` bytes. Raises FormatError naming the object for a missing or bad object or key, OSError
    when the store cannot be read. What this process already read of the segment, so that no object is
    asked for twice in one run: ``loaded``, Aiven's manifest and data key (:func:`load_manifest`);
    ``opened``, the ``.log`` object opened by an earlier reader (its ``detach``: no second HEAD request;
    the reader owns it now). The size checks run on it again, and every read's short-read check."""
    assert seg.remote is not None
    if seg.remote.layout == "aiven":
        return AivenLogReader(seg, loaded, opened)
    return _PlainReader(seg, opened)


_INDEX_KINDS = {"offset": (".index", "offset"), "timestamp": (".timeindex", "timestamp")}


def remote_index_bytes(seg: SegmentRef, kind: str) -> bytes:
    """The segment's ``offset`` or ``timestamp`` index (empty when it is missing or unreadable: the
    index only makes seeks shorter)."""
    from logdoctor.formats.aiven_rsm import detransform_chunk

    remote = seg.remote
    assert remote is not None
    suffix, name = _INDEX_KINDS[kind]
    try:
        if remote.layout == "kafka-local":
            return seg.storage.read(seg.path[: -len(".log")] + suffix)
        manifest, key = load_manifest(seg)
        where = manifest.indexes.get(name)
        if where is None or where[1] == 0:
            return b""
        data = seg.storage.read_range(remote.indexes, where[0], where[1])  # type: ignore[arg-type]
        return detransform_chunk(data, manifest, key, compressed=False, source=remote.indexes)
    except (OSError, ValueError, FormatError):
        return b""
