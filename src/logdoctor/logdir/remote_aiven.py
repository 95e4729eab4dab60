"""Reading Aiven's tiered-storage objects (v1.0.0): a segment's ``.rsm-manifest`` loaded and its data key
unwrapped with the user's private key (:func:`load_manifest`), and its ``.log`` object's original bytes read
by position (:class:`AivenLogReader`). The bytes themselves (chunks, compression, encryption) are
:mod:`logdoctor.formats.aiven_rsm`'s.

Invariants: only the chunks a read needs are fetched, each span of them in one ranged read; a chunk larger
than :data:`~logdoctor.formats.aiven_rsm.STREAM_ABOVE` is read as a stream, never whole; chunks are
detransformed into pairs of buffers reused from a small pool (:func:`_span_buffers`), not new memory per
chunk. Bad objects raise :class:`~logdoctor.errors.FormatError` naming the object key and, for a chunk, its
original bytes (a missing or truncated object, a chunk that does not decompress or decrypt, a wrong private
key, a manifest version other than 1), never a silent gap.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from logdoctor.errors import CorruptRecordError, FormatError, TruncatedError
from logdoctor.formats.aiven_rsm import STREAM_ABOVE
from logdoctor.logdir.refs import SegmentRef
from logdoctor.logdir.remote_store import missing_object, private_key_spec
from logdoctor.logdir.storage import RangeReader, Storage

if TYPE_CHECKING:
    from concurrent.futures import Future

    from logdoctor.formats.aiven_rsm import Chunk

__all__ = ["AivenLogReader", "load_manifest"]


def _read_private_key(spec: str | None, manifest_location: str, key_id: str | None) -> bytes:
    if not spec:
        raise CorruptRecordError(
            f"the private key of key pair {key_id!r} (--remote-private-key PEM): the segment is encrypted",
            source=manifest_location,
        )
    given, path = private_key_spec(spec)
    if given is not None and key_id is not None and given != key_id:
        raise CorruptRecordError(
            f"the private key of key pair {key_id!r} (the manifest's data key is wrapped with it)",
            source=manifest_location,
            found=f"the key of key pair {given!r} given ({path})",
        )
    try:
        if "://" in path:
            storage, loc = Storage.of(path)
            return storage.read(loc)
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise CorruptRecordError(
            "a readable private key file", source=path, found=exc.strerror or str(exc)
        ) from None


def load_manifest(seg: SegmentRef) -> tuple[Any, bytes | None]:
    """An Aiven segment's manifest, parsed, and its data key unwrapped (None: not encrypted); FormatError
    naming the object for a missing or bad manifest or key."""
    from logdoctor.formats.aiven_rsm import parse_manifest, unwrap_data_key

    remote = seg.remote
    assert remote is not None and remote.manifest is not None
    try:
        data = seg.storage.read(remote.manifest)
    except FileNotFoundError:
        raise missing_object(remote.manifest, ".rsm-manifest") from None
    manifest = parse_manifest(data, source=remote.manifest)
    key = None
    if manifest.encrypted:
        pem = _read_private_key(remote.private_key, remote.manifest, manifest.data_key_id)
        try:
            key = unwrap_data_key(manifest, pem, source=remote.manifest)
        except CorruptRecordError as exc:  # name the key given beside the key pair the manifest names
            exc.found = f"{exc.found}: {private_key_spec(remote.private_key or '')[1]}"
            exc.args = (exc._render(),)
            raise
    return manifest, key


_T = TypeVar("_T")


def _name_chunk(exc: FormatError, c: Chunk) -> None:
    """Name the chunk and its original bytes in a chunk's error."""
    exc.expected = (
        f"{exc.expected} (chunk {c.index}: original bytes {c.original_position}-"
        f"{c.original_position + c.original_size - 1})"
    )
    exc.args = (exc._render(),)


def _original_size(group: list[Chunk]) -> int:
    return group[-1].original_position + group[-1].original_size - group[0].original_position


def _transformed_size(group: list[Chunk]) -> int:
    return group[-1].transformed_position + group[-1].transformed_size - group[0].transformed_position


def _spans(chunks: list[Chunk], span: int) -> list[list[Chunk]]:
    """Consecutive chunks in groups of about ``span`` original bytes (one chunk at least)."""
    out: list[list[Chunk]] = []
    group: list[Chunk] = []
    size = 0
    for c in chunks:
        if group and size + c.original_size > span:
            out.append(group)
            group, size = [], 0
        group.append(c)
        size += c.original_size
    if group:
        out.append(group)
    return out


_FREE_BUFFERS: list[tuple[bytearray, bytearray]] = []
_BUFFERS_LOCK = threading.Lock()


def _round_up(size: int) -> int:
    """``size`` rounded up to a whole MiB."""
    return -(-size // (1 << 20)) << 20


def _take_buffers(
    pair: tuple[bytearray, bytearray] | None, raw: int, original: int
) -> tuple[bytearray, bytearray]:
    """``pair`` (None: one from the pool), grown to hold ``raw`` transformed and ``original`` original bytes
    (sizes rounded up: spans of about one size fit)."""
    if pair is None:
        with _BUFFERS_LOCK:
            pair = _FREE_BUFFERS.pop() if _FREE_BUFFERS else (bytearray(), bytearray())
    if len(pair[0]) < raw or len(pair[1]) < original:
        pair = (
            bytearray(max(_round_up(raw), len(pair[0]))),
            bytearray(max(_round_up(original), len(pair[1]))),
        )
    return pair


def _give_back(pair: tuple[bytearray, bytearray]) -> None:
    with _BUFFERS_LOCK:
        if len(_FREE_BUFFERS) < 4:
            _FREE_BUFFERS.append(pair)


@contextmanager
def _span_buffers(raw: int, original: int) -> Iterator[tuple[memoryview, memoryview]]:
    """A pair of buffers (transformed bytes, original bytes) lent to one span and taken back: a process
    keeps a few (as many as spans run at once), each grown to the largest span it held."""
    pair = _take_buffers(None, raw, original)
    try:
        yield memoryview(pair[0]), memoryview(pair[1])
    finally:
        _give_back(pair)


#: what a chunk's stream is read ahead by (and skipped through)
_STREAM_PIECE = 1 << 20


@dataclass(slots=True)
class _OpenStream:
    """A large chunk's stream and the bytes from ``start`` (in the chunk) it last handed out and after."""

    index: int
    stream: Any
    start: int = 0
    held: bytearray = field(default_factory=bytearray)


class AivenLogReader:
    """The original bytes of an Aiven ``.log`` object, read by position: each read fetches (in one ranged
    read) only the transformed chunks it needs and detransforms them; the last chunks are kept, so
    reads that walk the segment fetch each chunk once. ``size`` is the segment's original size."""

    _KEEP = 4

    def __init__(
        self,
        seg: SegmentRef,
        loaded: tuple[Any, bytes | None] | None = None,
        opened: RangeReader | None = None,
    ) -> None:
        self.source = seg.path
        self.manifest, self._key = loaded if loaded is not None else load_manifest(seg)
        self._chunks = self.manifest.chunks()
        self.size = self.manifest.original_file_size
        try:
            self._reader = opened if opened is not None else seg.storage.open(seg.path)
        except FileNotFoundError:
            raise missing_object(seg.path, ".log") from None
        want = self.manifest.transformed_file_size
        if self._reader.size != want:
            have = self._reader.size
            why = "truncated, or chunks missing" if have < want else "bytes the chunk index does not know"
            self._reader.close()
            raise TruncatedError(
                f"{want} bytes of {len(self._chunks)} transformed chunks (the manifest's chunk index)",
                source=seg.path,
                position=min(have, want),
                found=f"an object of {have} bytes ({why})",
            )
        self._cache: dict[int, bytes | memoryview] = {}
        self._pair: tuple[bytearray, bytearray] | None = None
        self._stream: _OpenStream | None = None  # the chunk larger than STREAM_ABOVE read last

    def _chunk_range(self, first: int, last: int) -> None:
        """Chunks ``first``-``last`` detransformed into the cache: read (one ranged read) and detransformed
        into a pair of buffers this reader keeps until it is closed (:func:`_span_buffers`' pool: no new
        memory per chunk, whose page faults cost more than zstd); the chunks cached before are copied out
        of them first."""
        todo = [i for i in range(first, last + 1) if i not in self._cache]
        if not todo:
            return
        lo, hi = todo[0], todo[-1]
        chunks = self._chunks[lo : hi + 1]
        if len(self._cache) + len(chunks) > self._KEEP:
            self._cache = {k: v for k, v in self._cache.items() if first <= k <= last}  # this read's
        # out of the buffers reused below (those read again are detransformed again)
        self._cache = {k: bytes(v) for k, v in self._cache.items() if not lo <= k <= hi}
        scratch = self._scratch_size(lo, hi)
        self._pair = _take_buffers(self._pair, _transformed_size(chunks) + scratch, _original_size(chunks))
        raw, out = memoryview(self._pair[0]), memoryview(self._pair[1])
        self._detransform(chunks, raw, out, scratch)
        base = chunks[0].original_position
        for i, c in enumerate(chunks, lo):
            self._cache[i] = out[c.original_position - base : c.original_position - base + c.original_size]

    def _detransform(self, chunks: list[Chunk], raw: memoryview, out: memoryview, scratch: int) -> None:
        """Consecutive ``chunks`` read in one ranged read into ``raw`` and detransformed into ``out`` (from
        the first's original bytes on), decrypted first into the ``scratch`` bytes of ``raw`` after them
        (:meth:`_scratch_size`). A short read, a chunk that does not detransform: a FormatError naming the
        object and the chunks."""
        from logdoctor.formats.aiven_rsm import detransform_chunk_into

        start, length = chunks[0].transformed_position, _transformed_size(chunks)
        got = self._reader.read_into(start, raw[:length])
        if got != length:
            raise TruncatedError(
                f"chunks {chunks[0].index}-{chunks[-1].index} ({length} bytes)",
                source=self.source,
                position=start,
                found=f"{got} bytes",
            )
        base = chunks[0].original_position
        for c in chunks:
            at = c.transformed_position - start
            try:
                detransform_chunk_into(
                    raw[at : at + c.transformed_size],
                    self.manifest,
                    self._key,
                    out[c.original_position - base : c.original_position - base + c.original_size],
                    source=self.source,
                    position=c.transformed_position,
                    scratch=raw[length : length + scratch] if scratch else None,
                )
            except FormatError as exc:
                _name_chunk(exc, c)
                raise

    def _scratch_size(self, lo: int, hi: int) -> int:
        """The room after a read's transformed bytes that chunks ``lo``-``hi`` are decrypted into before
        they are decompressed (encrypted and compressed chunks; else 0)."""
        if not (self.manifest.encrypted and self.manifest.compression):
            return 0
        return max(self._chunks[i].transformed_size for i in range(lo, hi + 1))

    def read_at(self, offset: int, length: int) -> bytes:
        length = max(0, min(length, self.size - offset))
        if length == 0:
            return b""
        size = self.manifest.original_chunk_size
        first, last = offset // size, (offset + length - 1) // size
        streamed = self._chunks[first].original_size > STREAM_ABOVE or (
            self._chunks[last].original_size > STREAM_ABOVE
        )  # every chunk but the last has the first's size
        if not streamed:
            self._chunk_range(first, last)
        parts = []
        for i in range(first, last + 1):
            c = self._chunks[i]
            lo = max(offset, c.original_position) - c.original_position
            hi = min(offset + length, c.original_position + c.original_size) - c.original_position
            if c.original_size > STREAM_ABOVE:
                parts.append(self._streamed(c, lo, hi))
            else:
                if streamed:
                    self._chunk_range(i, i)
                parts.append(self._cache[i][lo:hi])
        return parts[0] if len(parts) == 1 and isinstance(parts[0], (bytes, bytearray)) else b"".join(parts)

    def _open_stream(self, c: Chunk) -> Any:
        """A :class:`~logdoctor.formats.aiven_rsm.ChunkStream` of chunk ``c``: its stored bytes read (one
        ranged read: what is held is what the object holds, never what the chunk declares)."""
        from logdoctor.formats.aiven_rsm import ChunkStream

        raw = bytearray(c.transformed_size)
        got = self._reader.read_into(c.transformed_position, memoryview(raw))
        if got != c.transformed_size:
            raise TruncatedError(
                f"chunk {c.index} ({c.transformed_size} bytes)",
                source=self.source,
                position=c.transformed_position,
                found=f"{got} bytes",
            )
        try:
            return ChunkStream(
                raw,
                self.manifest,
                self._key,
                expected_size=c.original_size,
                source=self.source,
                position=c.transformed_position,
            )
        except FormatError as exc:
            _name_chunk(exc, c)
            raise

    def _stream_into(self, stream: Any, c: Chunk, out: memoryview) -> int:
        try:
            return int(stream.readinto(out))
        except FormatError as exc:
            _name_chunk(exc, c)
            raise

    def _streamed(self, c: Chunk, lo: int, hi: int) -> bytes | bytearray:
        """Bytes ``lo``-``hi`` of a chunk larger than :data:`STREAM_ABOVE`, from its stream: read on from
        where the last read of it ended (reads that walk the chunk decompress it once), reopened from the
        chunk's start for a read behind that. What is held: the bytes from the last read's start on (a
        piece read ahead after a small read). A read of more than a piece is decompressed straight into the
        one buffer it returns, which is also what is held (never resized afterwards): a batch of 1 GiB is
        in memory once, not four times (issue 57 item 6)."""
        st = self._stream
        if st is None or st.index != c.index or lo < st.start:
            if st is not None:
                st.stream.close()
            st = self._stream = _OpenStream(c.index, self._open_stream(c))
        held_end = st.start + len(st.held)
        if hi <= held_end:  # held already
            return bytes(memoryview(st.held)[lo - st.start : hi - st.start])
        if lo >= held_end:  # skip to ``lo``, a piece at a time
            skip = lo - held_end
            st.start, st.held = lo, bytearray()
            scratch = memoryview(bytearray(min(skip, _STREAM_PIECE) or 1))
            while skip:
                n = self._stream_into(st.stream, c, scratch[: min(skip, len(scratch))])
                if not n:
                    break
                skip -= n
            held_end = lo
        want = hi - lo
        size = max(want, min(_STREAM_PIECE, c.original_size - lo))
        out = bytearray(size)
        kept = held_end - lo  # the held bytes from ``lo`` on (fewer than ``want``)
        if kept:
            out[:kept] = memoryview(st.held)[lo - st.start :]
        filled = kept
        view = memoryview(out)
        while filled < size:
            n = self._stream_into(st.stream, c, view[filled:])
            if not n:
                break
            filled += n
        view.release()
        if filled < size:
            del out[filled:]
        st.start, st.held = lo, out
        if want > _STREAM_PIECE and len(out) <= want:
            return out  # shared with what is held: never resized while held
        return bytes(out[:want])

    def _streamed_spans(
        self,
        c: Chunk,
        work: Callable[[int, memoryview], _T],
        done: Callable[[int, int, _T], None],
        span: int,
    ) -> None:
        """:meth:`for_each_span` over one chunk larger than :data:`STREAM_ABOVE`: its stream in pieces of
        ``span`` bytes into one buffer, on the caller's thread (a stream is read in order)."""
        stream = self._open_stream(c)
        try:
            with _span_buffers(0, min(span, c.original_size)) as (_, out):
                pos = c.original_position
                while pos < c.original_position + c.original_size:
                    n = self._stream_into(
                        stream, c, out[: min(span, c.original_position + c.original_size - pos)]
                    )
                    if not n:
                        break
                    done(pos, n, work(pos, out[:n]))
                    pos += n
        finally:
            stream.close()

    def for_each_span(
        self,
        work: Callable[[int, memoryview], _T],
        done: Callable[[int, int, _T], None],
        *,
        span: int = 8 << 20,
        workers: int = 2,
    ) -> None:
        """The segment's original bytes, span by span: consecutive chunks of about ``span`` original bytes
        (each span's transformed chunks fetched in one ranged read), detransformed on ``workers`` threads
        into buffers the threads reuse (no new memory per chunk: fresh memory's page faults cost more than
        zstd, which like the reads runs without the GIL). ``work(position, view)`` runs on that thread
        with the span's original bytes (``view`` is valid only during the call); ``done(position, length,
        result)`` on the caller's, span by span in order of position. Errors are :meth:`read_at`'s (a
        short read, a chunk that does not detransform, named by object, chunk and original bytes), the
        first raised once no thread is still working. A chunk larger than :data:`STREAM_ABOVE` is read as a
        stream, ``span`` bytes at a time on the caller's thread: never whole."""
        spans = _spans(self._chunks, span)
        if any(g[0].original_size > STREAM_ABOVE for g in spans):  # such a chunk is a group of its own
            run: list[list[Chunk]] = []
            for group in [*spans, []]:
                if group and group[0].original_size <= STREAM_ABOVE:
                    run.append(group)
                    continue
                if run:
                    self._for_spans(run, work, done, workers)
                    run = []
                if group:
                    self._streamed_spans(group[0], work, done, span)
            return
        self._for_spans(spans, work, done, workers)

    def _for_spans(
        self,
        spans: list[list[Chunk]],
        work: Callable[[int, memoryview], _T],
        done: Callable[[int, int, _T], None],
        workers: int,
    ) -> None:
        from concurrent.futures import ThreadPoolExecutor

        if len(spans) == 1 or workers < 2:  # nothing to overlap: no thread to hand over to
            for group in spans:
                done(group[0].original_position, _original_size(group), self._span(group, work))
            return
        pending: deque[tuple[list[Chunk], Future[_T]]] = deque()
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="aiven-span") as ex:
            try:
                for group in spans:
                    pending.append((group, ex.submit(self._span, group, work)))
                    if len(pending) > workers:
                        first, fut = pending.popleft()
                        done(first[0].original_position, _original_size(first), fut.result())
                while pending:
                    first, fut = pending.popleft()
                    done(first[0].original_position, _original_size(first), fut.result())
            except BaseException:
                for _, fut in pending:
                    fut.cancel()
                raise

    def _span(self, group: list[Chunk], work: Callable[[int, memoryview], _T]) -> _T:
        scratch = self._scratch_size(group[0].index, group[-1].index)
        with _span_buffers(_transformed_size(group) + scratch, _original_size(group)) as (raw, out):
            self._detransform(group, raw, out, scratch)
            return work(group[0].original_position, out[: _original_size(group)])

    def detach(self) -> RangeReader:
        """The open object, left open by this reader's close (for another:
        :func:`~logdoctor.logdir.remote_reader.open_remote_log`)."""
        opened, self._reader = self._reader, RangeReader(None, self._reader.size, False)
        return opened

    def close(self) -> None:
        self._reader.close()
        if self._stream is not None:
            self._stream.stream.close()
            self._stream = None
        pair, self._pair = self._pair, None
        self._cache = {}  # views of the buffers given back
        if pair is not None:
            _give_back(pair)

    def __enter__(self) -> AivenLogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
