"""A compacted topic as a table (issue 46): the latest record of each key of a partition, as log compaction
would leave it once fully cleaned (K:storage/.../internals/log/LogCleaner.java, Cleaner.cleanInto and
buildOffsetMap: a record is kept when its offset is the highest its key has; a tombstone, a null value,
removes the key once ``delete.retention.ms`` has passed).

One task reads all the slices of one replica's partition (:func:`logdoctor.logdir.slices.partition_groups`)
in two passes over
:func:`logdoctor.spark.sources.slice_reader.read_slice`, the reader every output uses (the isolation level
applies first: an aborted record never changes the state):

1. the keys and offsets only: for each key its highest offset (pyarrow ``group_by``, merged batch by batch,
   never a value; past a fixed number of keys spilled to disk as sorted runs and merged:
   :mod:`logdoctor.spark.latest_spill`);
2. the records again: those whose offset is their key's highest (the winners walked in ascending order
   alongside the rows), tombstones left out (kept, with ``tombstones=True``, for an upsert to delete their
   key).

One row per key holds whatever the bytes: an offset seen twice (a batch copied into an earlier segment
under a later base offset, so that two segments hold the same offsets) is read once, from its first copy in
the log's order, as the per-segment reader reads a segment's batches (:class:`logdoctor.logdir.read_plan.
OffsetOrder`) and as a consumer fetching on from the earlier segment would get it; the overlap is named
(``problems``: the segment, its offsets read already; ``offsets_read_twice`` in the summary).

Memory is bounded by a fixed budget (:data:`logdoctor.spark.latest_spill.RUN_ENTRIES` keys and offsets, the
merge's blocks), whatever the number of keys and the partitioning of the job; nothing is collected on the
driver. Records without a key cannot be compacted
(the broker rejects them in a compacted topic: LogValidator ``validateKey``) and are left out and counted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from logdoctor.spark.latest_spill import KeyOffsets, Winners

__all__ = [
    "APPEND_REFUSAL",
    "VIEWS",
    "LatestStats",
    "latest_json",
    "latest_lines",
    "latest_rows",
]

VIEWS = ("history", "latest")
#: why ``--view latest --mode append`` to Parquet is refused (nothing written): a key would have two rows
APPEND_REFUSAL = (
    "--view latest with --mode append to Parquet would add a second row for every key that changed (the "
    "latest view is a table of one row per key): use --format iceberg or delta, whose append applies the "
    "newer offsets as upserts and deletes in one commit, or --mode overwrite (nothing was written)"
)


@dataclass(slots=True)
class LatestStats:
    """What one partition's latest view counted: records read, without a key, tombstoned keys, rows."""

    records: int = 0
    null_keys: int = 0
    keys: int = 0
    tombstones: int = 0
    rows: int = 0
    #: records of offsets an earlier segment of the partition held already: read once, from that one
    repeated: int = 0


class _ReadOnce:
    """The rows of one partition's slices (in order) with every offset once: a row whose offset is at or
    below the highest read so far is dropped (its first copy was read), and each run of such rows named."""

    __slots__ = ("high", "overlaps")

    def __init__(self) -> None:
        self.high = -1
        #: (segment path, first offset, last offset, records) of each run dropped
        self.overlaps: list[tuple[str, int, int, int]] = []

    def rows(self, path: str, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow.compute as pc

        for rb in batches:
            if not rb.num_rows:
                continue
            offsets = rb.column("offset")
            bounds = pc.min_max(offsets)
            low, top = bounds["min"].as_py(), bounds["max"].as_py()
            if low > self.high:
                self.high = top
                yield rb
                continue
            again = pc.less_equal(offsets, self.high)
            seen = pc.min_max(pc.filter(offsets, again))
            first, last, n = seen["min"].as_py(), seen["max"].as_py(), pc.sum(again).as_py() or 0
            prev = self.overlaps[-1] if self.overlaps else None
            if prev is not None and prev[0] == path and prev[2] < first:
                self.overlaps[-1] = (path, prev[1], last, prev[3] + n)
            else:
                self.overlaps.append((path, first, last, n))
            self.high = max(self.high, top)
            out = rb.filter(pc.invert(again))
            if out.num_rows:
                yield out

    def problems(self) -> list[dict[str, Any]]:
        """One problem per run of offsets read twice (the export's skipped ranges)."""
        return [
            {
                "path": path,
                "valid_bytes": 0,
                "size_bytes": 0,
                "error": (
                    f"offsets {first}-{last} ({n:,} record(s)) are held by an earlier segment of the "
                    "partition too (two segments hold the same offsets: scan calls the log LOG_CORRUPT): the "
                    "latest view read them once, from their first copy"
                ),
            }
            for path, first, last, n in self.overlaps
        ]


def _latest_offsets(batches: Iterator[Any], held: KeyOffsets) -> tuple[Winners, int, int]:
    """(the highest offset of each key, :class:`~logdoctor.spark.latest_spill.Winners`; records read;
    records without a key). ``held``: where the (key, offset) pairs are kept (spilled past its budget)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    records = null_keys = 0
    for rb in batches:
        data = pc.invert(rb.column("is_control"))  # a marker is no record of the topic's table
        n_data = pc.sum(data).as_py() or 0
        keys = rb.column("key")
        has_key = pc.and_(pc.is_valid(keys), data)
        records += n_data
        null_keys += n_data - (pc.sum(has_key).as_py() or 0)
        held.add(pa.table({"key": keys, "offset": rb.column("offset")}).filter(has_key))
    return held.winners(), records, null_keys


def latest_rows(
    slices: Sequence[Any],
    opts: Any,
    read_slice: Any,
    *,
    tombstones: bool = False,
    stats: LatestStats | None = None,
    undecodable: list[dict[str, Any]] | None = None,
    problems: list[dict[str, Any]] | None = None,
) -> Iterator[Any]:
    """The rows of the latest view of one partition (``slices``: all of its slices, in order), each slice read
    with ``read_slice`` (:func:`logdoctor.spark.sources.slice_reader.read_slice`, the reader every output
    uses)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from logdoctor.spark.latest_spill import AscendingMatch, KeyOffsets

    def read(first: bool) -> Iterator[Any]:
        once = _ReadOnce()  # each pass: the same rows, each offset once
        for sl in slices:
            yield from once.rows(
                sl.segment.path,
                read_slice(
                    sl, opts, undecodable=undecodable if first else None, problems=problems if first else None
                ),
            )
        if first:
            st.repeated += sum(n for *_, n in once.overlaps)
            if problems is not None:
                problems.extend(once.problems())

    st = stats if stats is not None else LatestStats()
    held = KeyOffsets()
    try:
        winners, records, null_keys = _latest_offsets(
            (rb.select(["key", "offset", "is_control"]) for rb in read(True)), held
        )
        st.records += records
        st.null_keys += null_keys
        st.keys += winners.count
        match = AscendingMatch(winners.ascending())  # the rows come in ascending offsets (_ReadOnce)
        for rb in read(False):
            keep = pa.array(match.keep(rb.column("offset").to_numpy()))
            if opts.include_control:
                keep = pc.and_(keep, pc.invert(rb.column("is_control")))
            out = rb.filter(keep)
            dead = pc.is_null(out.column("value"))
            st.tombstones += pc.sum(dead).as_py() or 0
            if not tombstones:
                out = out.filter(pc.invert(dead))
            st.rows += out.num_rows
            if out.num_rows:
                yield out
    finally:
        held.close()


def latest_json(stats: dict[tuple[str, str, int], LatestStats]) -> list[dict[str, Any]]:
    """Per partition, what its latest view counted (the export summary's ``latest``)."""
    return [
        {
            "log_dir": log_dir,
            "topic": topic,
            "partition": partition,
            "records": st.records,
            "records_without_key": st.null_keys,
            "keys": st.keys,
            "keys_deleted": st.tombstones,
            "rows": st.rows,
            "offsets_read_twice": st.repeated,
        }
        for (log_dir, topic, partition), st in sorted(stats.items())
    ]


def latest_lines(entries: Sequence[dict[str, Any]]) -> list[str]:
    """The text summary of the latest view: one line per partition."""
    lines = []
    for e in entries:
        line = (
            f"{e['topic']}-{e['partition']} ({e['log_dir']}): {e['rows']:,} live key(s) of {e['keys']:,} "
            f"({e['keys_deleted']:,} deleted by a tombstone), from {e['records']:,} record(s)"
        )
        if e["records_without_key"]:
            line += f"; {e['records_without_key']:,} record(s) without a key left out (never compacted)"
        if e.get("offsets_read_twice"):
            line += (
                f"; {e['offsets_read_twice']:,} offset(s) held by two segments read once, from the first "
                "(named among the skipped ranges)"
            )
        lines.append(line)
    return lines
