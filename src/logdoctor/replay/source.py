"""The records a replay sends, read from log dirs without Spark: every record once, in offset order, as a
consumer of the read options' isolation level reads them.

The same logdir-level read path every output plans with (``export``'s executors read a slice of a segment
the same way, ``logdoctor.spark.sources.slice_reader``): the read plan
(:func:`logdoctor.logdir.read_plan.plan_read`: discovery, the remote tier, the topics, what is not read
once), the outcome of every transaction from its markers
(:func:`logdoctor.logdir.transactions.partition_transactions` and ``segment_views``: ``read_committed``
by default, so the records of aborted and open transactions are left out, and everything at or above the
last stable offset), each segment's batches walked once as every reader walks them
(:class:`logdoctor.logdir.batch_walk.BatchAdmission`, :class:`logdoctor.logdir.read_plan.OffsetOrder`,
CRC-bad batches left out alone and named: ``skip_crc_mismatches``). Control records are never replayed.
A partition is read one batch at a time: memory is bounded by the largest batch, never by the input.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from logdoctor.errors import FormatError
from logdoctor.formats.batch_v2 import RecordBatchV2
from logdoctor.formats.ranged_bytes import RangedBytes
from logdoctor.logdir.batch_walk import SKIP, BatchAdmission, resolve_range
from logdoctor.logdir.coordinator import CoordinatorDecisions
from logdoctor.logdir.cut import apply_cut
from logdoctor.logdir.read_options import ReadOptions
from logdoctor.logdir.refs import PartitionRef, SegmentRef
from logdoctor.logdir.transactions import (
    PartitionTransactions,
    SegmentTransactions,
    partition_transactions,
    segment_views,
)

if TYPE_CHECKING:
    import numpy as np

    from logdoctor.checks.replica_lag import LagReplica

__all__ = ["BATCH_OVERHEAD", "PartitionSource", "RecordColumns", "SourceRecord"]

#: the bytes of a v2 batch's header (K:clients/.../record/DefaultRecordBatch.java RECORD_BATCH_OVERHEAD):
#: a batch holding one record alone is this plus the record (what max.message.bytes is compared with)
BATCH_OVERHEAD = 61


#: a SourceRecord made from a tuple of its fields without the Python-level ``__new__`` (the hot path)
_record = tuple.__new__


class SourceRecord(NamedTuple):
    """One record to replay, as the source's consumer reads it (a tuple: made once per record, the
    replay's hot path)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    #: None: no header (what the producer is given as it is)
    headers: list[tuple[str, bytes | None]] | None = None
    #: 0 CreateTime, 1 LogAppendTime, -1 none (magic 0)
    timestamp_type: int = 0
    #: key, value and headers' bytes (what the bytes of a replay count)
    size: int = 0


def alone_batch_bytes(size: int, headers: int) -> int:
    """The bytes of an uncompressed v2 batch holding one record alone whose key, value and headers are
    ``size`` bytes (:attr:`SourceRecord.size`) in ``headers`` headers, an upper bound of its varints
    included (K:clients/.../record/DefaultRecord.java sizeInBytes: the record's length 5, attributes 1,
    timestamp delta 10, offset delta 5, key and value lengths 5 each, header count 5; each header's key and
    value lengths 5 each): what the target broker compares with ``max.message.bytes`` when the producer
    sends it alone and uncompressed."""
    return BATCH_OVERHEAD + 5 + 1 + 10 + 5 + 5 + 5 + 5 + size + HEADER_LENGTHS * headers


#: the bytes of a header's key and value lengths in :func:`alone_batch_bytes` (5 each)
HEADER_LENGTHS = 10

#: the batch bytes :meth:`PartitionSource.sizes` decodes in one run (memory: about that much again for
#: the keys, values and headers copied out)
SIZES_RUN_BYTES = 8 << 20


class RecordSizes(NamedTuple):
    """What the plan counts of a run of records (:meth:`PartitionSource.sizes`), as int64 arrays: their
    offsets, timestamps, :attr:`SourceRecord.size` and header counts; ``keys`` only when asked."""

    offsets: np.ndarray
    timestamps: np.ndarray
    sizes: np.ndarray
    headers: np.ndarray
    keys: list[bytes | None] | None = None


def _decoded(batches: list[RecordBatchV2]) -> tuple | None:
    """The columns of ``batches`` decoded by one C call (:func:`~logdoctor.formats.batch_v2.decode_v2_run`);
    None: a batch does not decode here, or the records are not the batches' counts."""
    from logdoctor.formats.batch_v2 import decode_v2_run

    try:
        cols = decode_v2_run(batches)
    except FormatError:
        return None
    return cols if cols[0] == sum(b.record_count for b in batches) else None


def _taken(
    offs: np.ndarray, sizes: np.ndarray, counts: list[int], start: int | None, stop: int | None, last: int
) -> tuple[np.ndarray, list[int | None]]:
    """Which records of a run (their offsets ``offs`` and :attr:`SourceRecord.size`, ``counts`` a batch)
    :meth:`PartitionSource.records` yields: in [``start``, ``stop``), past ``last`` and past every offset
    taken before; and the bytes each batch gave before the offsets already yielded were left out (None: no
    record), as :meth:`PartitionSource._batch_records` counts :attr:`~PartitionSource.codec_bytes`."""
    import numpy as np

    taken = np.ones(len(offs), bool)
    if start is not None:
        taken &= offs >= start
    if stop is not None:
        taken &= offs < stop
    of_batch = np.repeat(np.arange(len(counts)), counts)
    per_batch = np.bincount(of_batch[taken], weights=sizes[taken], minlength=len(counts))
    read = np.bincount(of_batch[taken], minlength=len(counts))
    # each offset once: past ``last`` and past every offset taken before it (what records() yielded)
    prior = np.maximum.accumulate(np.concatenate(([last], np.where(taken, offs, last))))[:-1]
    taken &= offs > prior
    return taken, [None if not r else int(b) for r, b in zip(read, per_batch, strict=True)]


def _run_sizes(
    batches: list[RecordBatchV2], start: int | None, stop: int | None, last: int, keys: bool
) -> tuple[RecordSizes, list[int | None]] | None:
    """:class:`RecordSizes` of the records of ``batches`` (v2, one buffer) in [``start``, ``stop``) past
    ``last``, decoded by one C call, and the bytes each batch gave before the offsets already yielded were
    left out (None: no record), as :meth:`PartitionSource._batch_records` counts
    :attr:`~PartitionSource.codec_bytes`.
    None: a batch does not decode here, or a header key is not ASCII (its size is that of the text
    :class:`~logdoctor.formats.record_types.Header` decodes, one key at a time): read them as records."""
    import numpy as np

    cols = _decoded(batches)
    if cols is None:
        return None
    (n, offsets, timestamps, _types, key_nulls, key_valid, key_ends, key_data, _vn, _vv, value_ends, _vd,
     list_ends, _nh, hkey_ends, hkey_data, _hvn, _hvv, hvalue_ends, _hvd) = cols  # fmt: skip
    if not bytes(hkey_data).isascii():  # a key's size is its UTF-8 text's (Header decodes each key alone)
        return None
    counts = [b.record_count for b in batches]
    offs = np.frombuffer(offsets, np.int64)
    ke, ve, le = (np.frombuffer(e, np.int64) for e in (key_ends, value_ends, list_ends))
    header_bytes = np.concatenate(
        (
            [0],
            np.cumsum(
                np.diff(np.frombuffer(hkey_ends, np.int64)) + np.diff(np.frombuffer(hvalue_ends, np.int64))
            ),
        )
    )
    sizes = np.diff(ke) + np.diff(ve) + header_bytes[le[1:]] - header_bytes[le[:-1]]
    taken, codec_bytes = _taken(offs, sizes, counts, start, stop, last)
    got = None
    if keys:
        valid = (
            np.unpackbits(np.frombuffer(key_valid, np.uint8), bitorder="little")[:n] if key_nulls else None
        )
        data = bytes(key_data)
        got = [
            None if valid is not None and not valid[i] else data[ke[i] : ke[i + 1]]
            for i in np.flatnonzero(taken)
        ]
    out = RecordSizes(
        offs[taken], np.frombuffer(timestamps, np.int64)[taken], sizes[taken], np.diff(le)[taken], got
    )
    return out, codec_bytes


class RecordColumns(NamedTuple):
    """Records to replay as columns (:meth:`PartitionSource.columns`): what :class:`SourceRecord` holds,
    one list a field (``headers`` None: no record of them has a header)."""

    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[list[tuple[str, bytes | None]] | None] | None
    sizes: list[int]

    def cut(self, a: int, b: int) -> RecordColumns:
        """Records ``a`` to ``b`` (list slices)."""
        return RecordColumns(*(None if col is None else col[a:b] for col in self))


def _columns_of(rows: list[SourceRecord]) -> RecordColumns:
    headers = [r.headers for r in rows]
    return RecordColumns(
        [r.offset for r in rows], [r.timestamp for r in rows], [r.key for r in rows], [r.value for r in rows],
        headers if any(h is not None for h in headers) else None, [r.size for r in rows],
    )  # fmt: skip


def _byte_slices(
    data: bytearray, ends: bytearray, nulls: int, validity: bytearray, taken: np.ndarray | None
) -> list[bytes | None]:
    """The values of a decoded bytes column (``ends``: n+1 offsets into ``data``), of the rows ``taken``
    (None: all), a null one None."""
    import numpy as np

    whole = bytes(data)
    e = np.frombuffer(ends, np.int64)
    starts, stops = (e[:-1], e[1:]) if taken is None else (e[:-1][taken], e[1:][taken])
    out: list[bytes | None] = [whole[a:b] for a, b in zip(starts.tolist(), stops.tolist(), strict=True)]
    if nulls:
        valid = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[: len(e) - 1]
        if taken is not None:
            valid = valid[taken]
        for i in np.flatnonzero(valid == 0).tolist():
            out[i] = None
    return out


def _run_columns(
    batches: list[RecordBatchV2], start: int | None, stop: int | None, last: int
) -> tuple[RecordColumns, list[int | None]] | None:
    """:class:`RecordColumns` of the records of ``batches`` (v2, one buffer) in [``start``, ``stop``) past
    ``last``, decoded by one C call, and the bytes each batch gave (:func:`_run_sizes`); header keys
    decoded as :class:`~logdoctor.formats.record_types.Header` decodes them (UTF-8, ``replace``), sized
    as :meth:`PartitionSource._batch_records` sizes them. None: a batch does not decode here."""
    import numpy as np

    cols = _decoded(batches)
    if cols is None:
        return None
    (_n, offsets, timestamps, _types, key_nulls, key_valid, key_ends, key_data, value_nulls, value_valid,
     value_ends, value_data, list_ends, nh, hkey_ends, hkey_data, hvalue_nulls, hvalue_valid,
     hvalue_ends, hvalue_data) = cols  # fmt: skip
    counts = [b.record_count for b in batches]
    offs = np.frombuffer(offsets, np.int64)
    ke, ve, le = (np.frombuffer(e, np.int64) for e in (key_ends, value_ends, list_ends))
    sizes = np.diff(ke) + np.diff(ve)
    headers = None
    if nh:
        hkeys = [k.decode("utf-8", "replace") for k in _byte_slices(hkey_data, hkey_ends, 0, b"", None)]
        hvalues = _byte_slices(hvalue_data, hvalue_ends, hvalue_nulls, hvalue_valid, None)
        hbytes = np.fromiter(
            (len(k.encode()) + (0 if v is None else len(v)) for k, v in zip(hkeys, hvalues, strict=True)),
            np.int64, len(hkeys),
        )  # fmt: skip
        cum = np.concatenate(([0], np.cumsum(hbytes)))
        sizes += cum[le[1:]] - cum[le[:-1]]
        pairs = list(zip(hkeys, hvalues, strict=True))
        bounds = le.tolist()
        headers = [pairs[a:b] or None for a, b in itertools.pairwise(bounds)]
    taken, codec_bytes = _taken(offs, sizes, counts, start, stop, last)
    every = bool(taken.all())
    rows = None if every else taken
    if headers is not None and not every:
        headers = [headers[i] for i in np.flatnonzero(taken).tolist()]
    if headers is not None and not any(h is not None for h in headers):
        headers = None
    out = RecordColumns(
        offs[taken].tolist(),
        np.frombuffer(timestamps, np.int64)[taken].tolist(),
        _byte_slices(key_data, key_ends, key_nulls, key_valid, rows),
        _byte_slices(value_data, value_ends, value_nulls, value_valid, rows),
        headers,
        sizes[taken].tolist(),
    )
    return out, codec_bytes


@dataclass
class PartitionSource:
    """One source partition's records to replay (see the module doc). ``problems``: what was not read once
    (damage, a CRC-bad batch, a batch going back), one line each, filled as :meth:`records` reads."""

    ref: PartitionRef
    opts: ReadOptions
    start: int | None = None
    end: int | None = None
    txns: PartitionTransactions | None = None
    problems: list[str] = field(default_factory=list)
    #: the bytes (keys, values, headers) of the records read, by the codec of their batch (its attributes'
    #: codec id, as the batch reader parses it), in the order the codecs were met: see :attr:`codec`
    codec_bytes: dict[int, int] = field(default_factory=dict)

    @classmethod
    def of(
        cls, ref: PartitionRef, opts: ReadOptions, decisions: CoordinatorDecisions | None
    ) -> PartitionSource:
        """``decisions``: the read plan's (what becomes of a transaction left without a marker)."""
        rng = resolve_range(ref, opts)
        start, end = rng.start_offset, rng.end_offset
        txns = None
        if ref.segments:
            walked = partition_transactions(
                ref, start=start, end=end, decisions=decisions, cut_at=opts.cut_at
            )
            txns = apply_cut(walked, decisions)
        return cls(ref, opts, start, end, txns)

    @property
    def codec(self) -> str | None:
        """The codec of the source partition's batches, for the replay's producer (``compression.type``):
        of the records :meth:`records` read, the codec of the batches that held most of their bytes (a
        partition written with one codec throughout has it; of mixed ones, the codec of most of the data,
        not the last batch's: a few records written otherwise at the end do not decide); of codecs tied,
        the one met first. None: no record read."""
        from logdoctor.formats.record_types import Compression

        got = self.codec_bytes
        return Compression(max(got, key=got.__getitem__)).label if got else None

    def records(self, from_offset: int | None = None, *, copy: bool = True) -> Iterator[SourceRecord]:
        """Every record to replay at or after ``from_offset`` (None: from the range's start), in offset
        order, each offset at most once. ``copy=False``: key, value and header values are views into the
        batch (valid while the next record is read: for counting, not for sending)."""
        last = -1  # the last offset yielded: never one twice, across segments too
        for seg, batch, start, stop in self._batches(from_offset):
            for rec in self._batch_records(seg, batch, start, stop, copy):
                if rec.offset > last:
                    last = rec.offset
                    yield rec

    def sizes(self, *, keys: bool = False) -> Iterator[RecordSizes]:
        """What :meth:`records` yields, without a record made: the same records in the same order (and the
        same :attr:`codec_bytes` and :attr:`problems`), as columns (:class:`RecordSizes`) over runs of
        whole batches decoded by the C record decoder (:func:`logdoctor.formats.columns.decode_columns`),
        at most :data:`SIZES_RUN_BYTES` of batches a run. A batch the run cannot take (magic 0/1, over a
        window, its records not decoding) is read as :meth:`records` reads it. ``keys``: with each run's
        keys (bytes or None), for the key hashing of a re-hashed replay."""
        last = -1
        for seg, batches, start, stop, fits in self._runs(None):
            got = _run_sizes(batches, start, stop, last, keys) if fits else None
            if got is None:  # a batch of the run does not decode in it: each read as records() reads it
                for batch in batches:
                    for sizes in self._sizes_of_records(seg, batch, start, stop, last, keys):
                        last = int(sizes.offsets[-1])
                        yield sizes
                continue
            sizes, per_batch = got
            self._count_codecs(batches, per_batch)
            if len(sizes.offsets):
                last = int(sizes.offsets[-1])
                yield sizes

    def columns(self, from_offset: int | None = None) -> Iterator[RecordColumns]:
        """What :meth:`records` yields (``copy=True``), from ``from_offset`` as it, as columns
        (:class:`RecordColumns`) over the runs of whole batches :meth:`sizes` decodes (the C record
        decoder: no record object made; what ``--apply`` sends), with the same :attr:`codec_bytes` and
        :attr:`problems`. A batch a run cannot take is read as :meth:`records` reads it."""
        last = -1
        for seg, batches, start, stop, fits in self._runs(from_offset):
            got = _run_columns(batches, start, stop, last) if fits else None
            if got is None:  # each batch read as records() reads it
                for batch in batches:
                    rows = []
                    for r in self._batch_records(seg, batch, start, stop, True):
                        if r.offset > last:
                            last = r.offset
                            rows.append(r)
                    if rows:
                        yield _columns_of(rows)
                continue
            cols, per_batch = got
            self._count_codecs(batches, per_batch)
            if cols.offsets:
                last = cols.offsets[-1]
                yield cols

    def _count_codecs(self, batches: list[RecordBatchV2], per_batch: list[int | None]) -> None:
        for batch, n in zip(batches, per_batch, strict=True):
            if n is not None:
                self.codec_bytes[batch.compression] = self.codec_bytes.get(batch.compression, 0) + n

    def _runs(
        self, from_offset: int | None
    ) -> Iterator[tuple[SegmentRef, list[Any], int | None, int | None, bool]]:
        """The batches of :meth:`_batches` in runs of at most :data:`SIZES_RUN_BYTES` v2 batches of one
        buffer and one segment (``fits``: the C decoder may take the run whole), a batch it cannot take in
        a run of its own (``fits`` False), with the run's first offset to take and the first past it."""
        run: list = []
        run_bytes = 0
        run_seg: SegmentRef | None = None
        run_start: int | None = None
        run_stop: int | None = None
        for seg, batch, start, stop in self._batches(from_offset):
            fits = isinstance(batch, RecordBatchV2) and not isinstance(batch._buf, RangedBytes)
            if run and (
                not fits
                or seg is not run_seg
                or batch._buf is not run[0]._buf
                or run_bytes >= SIZES_RUN_BYTES
            ):
                yield run_seg, run, run_start, run_stop, True  # type: ignore[misc]
                run, run_bytes = [], 0
            run_seg, run_start, run_stop = seg, start, stop
            run.append(batch)
            run_bytes += batch.size
            if not fits:  # a run of its own, read as records() reads it
                yield seg, run, start, stop, False
                run, run_bytes = [], 0
        if run:
            yield run_seg, run, run_start, run_stop, True  # type: ignore[misc]

    def _sizes_of_records(
        self, seg: SegmentRef, batch: Any, start: int | None, stop: int | None, last: int, keys: bool
    ) -> Iterator[RecordSizes]:
        """:class:`RecordSizes` of one batch read as :meth:`records` reads it (a run's fallback)."""
        import numpy as np

        rows = [r for r in self._batch_records(seg, batch, start, stop, False) if r.offset > last]
        if rows:
            yield RecordSizes(
                np.fromiter((r.offset for r in rows), np.int64, len(rows)),
                np.fromiter((r.timestamp for r in rows), np.int64, len(rows)),
                np.fromiter((r.size for r in rows), np.int64, len(rows)),
                np.fromiter((len(r.headers or ()) for r in rows), np.int64, len(rows)),
                [None if r.key is None else bytes(r.key) for r in rows] if keys else None,
            )

    def _batches(self, from_offset: int | None) -> Iterator[tuple[SegmentRef, Any, int | None, int | None]]:
        """Each batch a consumer of the read options reads, in offset order, with the first offset to take
        of it and the first past what it yields (the range's end, the LSO or the high watermark; None:
        none). :attr:`problems` and :attr:`codec_bytes` start over."""
        ref = self.ref
        if not ref.segments or self.txns is None:
            return
        self.problems.clear()
        self.codec_bytes.clear()
        start = self.start
        if from_offset is not None:
            start = from_offset if start is None else max(start, from_offset)
        views = segment_views(
            self.txns, ref.segments, self.opts.isolation_level, self.opts.upto_high_watermark
        )
        for seg, view in zip(ref.segments, views, strict=True):
            end = self.end
            if seg.remote is not None:  # up to its own last offset, and where the local log takes over
                end = seg.remote.read_end(end)
            if start is not None and seg.next_base_offset is not None and seg.next_base_offset <= start:
                continue
            if end is not None and seg.base_offset >= end:
                continue
            stop = min((o for o in (end, view.stable_end) if o is not None), default=None)
            for batch in self._segment(seg, view, start, end):
                yield seg, batch, start, stop

    def _segment(
        self, seg: SegmentRef, view: SegmentTransactions, start: int | None, end: int | None
    ) -> Iterator[Any]:
        """The batches of ``seg`` its consumer reads (:class:`BatchAdmission`); what is not read is named in
        :attr:`problems`."""
        from logdoctor.formats.records import CrcSkip, skip_crc_mismatches
        from logdoctor.logdir.seek import seek_offset, segment_batches

        read_from = seek_offset(seg, start) if start is not None and start > seg.base_offset else 0
        walk = segment_batches(seg, read_from, verify_crc=False)
        skipped: list[CrcSkip] = []
        batches = skip_crc_mismatches(walk, skipped) if self.opts.verify_crc else walk
        # each offset once, the range, the isolation level; control records are never replayed
        admission = BatchAdmission(seg, start, end, view, False, skipped)
        verdict = admission.verdict
        try:
            for batch in batches:
                v = verdict(batch)
                if v:
                    if v == SKIP:
                        continue
                    break  # past the range's end, or at or above the LSO (or the high watermark)
                yield batch
        except FormatError as exc:
            self.problems.append(f"{seg.path}: its batches stop here: {exc}")
        except OSError as exc:
            if seg.ranged:
                raise  # a remote read failed: never lose records silently
            self.problems.append(f"{seg.path}: not read: {exc}")
        finally:
            batches.close()
            walk.close()
        self.problems.extend(c.describe(seg.path) + ": not replayed" for c in skipped)
        self.problems.extend(admission.order.problems)

    def _batch_records(
        self, seg: SegmentRef, batch: Any, start: int | None, stop: int | None, copy: bool
    ) -> Iterator[SourceRecord]:
        """The records of one admitted batch in [``start``, ``stop``); a batch whose records do not decode
        is named in :attr:`problems` (those before the bad one are yielded)."""
        ts_type = int(batch.timestamp_type)
        got = n = 0  # the batch's records yielded and their bytes (codec_bytes)
        try:
            for r in batch.records():
                offset = r.offset
                if start is not None and offset < start:
                    continue
                if stop is not None and offset >= stop:
                    break
                key, value = r.key, r.value
                if copy:
                    key = None if key is None else bytes(key)
                    value = None if value is None else bytes(value)
                size = (0 if key is None else len(key)) + (0 if value is None else len(value))
                headers = None
                if r.headers:
                    headers = [
                        (h.key, h.value if h.value is None or not copy else bytes(h.value)) for h in r.headers
                    ]
                    for hk, hv in headers:
                        size += len(hk.encode()) + (0 if hv is None else len(hv))
                got += 1
                n += size
                yield _record(SourceRecord, (offset, r.timestamp, key, value, headers, ts_type, size))
        except FormatError as exc:
            self.problems.append(
                f"{seg.path}@{batch.position}: offsets {batch.base_offset}-{batch.last_offset} not "
                f"replayed: its records do not decode: {exc}"
            )
        except OSError as exc:
            if seg.ranged:
                raise  # a remote read failed: never lose records silently
            self.problems.append(f"{seg.path}: not read: {exc}")
        finally:
            if got:
                codec = batch.compression
                self.codec_bytes[codec] = self.codec_bytes.get(codec, 0) + n


def single_replicas(
    refs: Sequence[PartitionRef],
) -> tuple[list[PartitionRef], dict[tuple[str, int], tuple[list[str], PartitionRef | None]]]:
    """``refs`` with each (topic, partition) once, and those found in several log dirs (a replay writes a
    partition once: which copy is the operator's choice): their log dirs and the copy replayed when the
    operator accepts the choice (``SEVERAL_REPLICAS`` ignored): the reference replica of the replica rules
    (:func:`logdoctor.checks.replica_lag.partition_lag`: the newest leader epoch, then the longest log),
    which the first list holds. None, and none of the copies in the first list, when no copy's log end is
    known (copies at URIs: the rule reads a local log dir's leader-epoch-checkpoint and active segment)."""
    from logdoctor.checks.replica_lag import partition_lag

    seen: dict[tuple[str, int], list[PartitionRef]] = {}
    for ref in refs:
        seen.setdefault((ref.topic, ref.partition), []).append(ref)
    out: list[PartitionRef] = []
    several: dict[tuple[str, int], tuple[list[str], PartitionRef | None]] = {}
    for key, copies in seen.items():
        if len(copies) == 1:
            out.append(copies[0])
            continue
        lags = partition_lag([_lag_replica(r) for r in copies])
        leader = lags[0].leader
        chosen = None if leader is None else next(r for r in copies if r.path == leader.path)
        several[key] = (sorted({r.log_dir for r in copies}), chosen)
        if chosen is not None:
            out.append(chosen)
    return out, several


def _lag_replica(ref: PartitionRef) -> LagReplica:
    """What the replica rules read of a copy (its log dir's model; no log end for a copy at a URI)."""
    from logdoctor.checks.replica_lag import LagReplica
    from logdoctor.formats.checkpoint import latest_epoch
    from logdoctor.logdir.model import LogDir

    size = sum(s.size for s in ref.segments)
    if not ref.storage.is_local:
        return LagReplica(ref.log_dir, ref.log_dir, ref.path, ref.topic, ref.partition, None, size, None)
    try:
        p = LogDir.shared(ref.log_dir).partition(ref.topic, ref.partition)
        end, hw, epoch = p.log_end_offset, p.high_watermark, latest_epoch(p.leader_epochs)
    except (OSError, KeyError, ValueError, FormatError):
        end = hw = epoch = None
    return LagReplica(ref.log_dir, ref.log_dir, ref.path, ref.topic, ref.partition, end, size, hw, epoch)
