"""The latest view's working sets kept within a fixed budget whatever the number of keys (issue 57 item 5).

The first pass of :mod:`logdoctor.spark.latest` finds the highest offset of each key; the second keeps the
rows at those offsets. Held in memory both grow with the distinct keys (about 450 bytes per key at the
peak: pyarrow's hash grouping over the keys' bytes). Here they are bounded:

- :class:`KeyOffsets` holds (key, highest offset) pairs up to :data:`RUN_ENTRIES`; past that it sorts them
  by key and writes them to a temporary Arrow IPC file, a *run*, and starts again. With no run written
  (every partition of up to about a quarter of a million keys) nothing touches the disk.
- :meth:`KeyOffsets.winners` merges the runs by key, a block of each at a time: the rows of every run up to
  the smallest of the blocks' last keys are taken together and grouped (a key is once in each run, so all
  of its entries are in the same take), giving each key's highest offset once. The offsets come out in key
  order; :class:`Winners` sorts them into runs of :data:`OFFSET_RUN` int64 values on disk too, and gives
  them back in ascending order, merged a window at a time.
- :class:`AscendingMatch` answers the second pass: its rows come in ascending offsets (each offset once:
  ``latest._ReadOnce``), so the winners are walked once alongside them.

Memory is then a run's entries, a block per run in the merge and a window per offset run, whatever the
partition; the temporary files (in ``tempfile``'s folder: a Spark worker's is under its local dirs) are
removed when the view has been read.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["OFFSET_RUN", "RUN_ENTRIES", "AscendingMatch", "KeyOffsets", "Winners"]

#: (key, offset) entries held before a sorted run is written (about 100 MiB with 40-byte keys at the peak)
RUN_ENTRIES = 262_144
#: winning offsets held before a sorted run of them is written (32 MiB)
OFFSET_RUN = 4_194_304
_MERGE_ENTRIES = 262_144  # the key merge's blocks, all runs together
_MERGE_EVERY = 65_536  # entries added between two groupings of what is held
_WINDOW = 65_536  # values of each offset run read at a time


def _max_per_key(table: Any) -> Any:
    return table.group_by("key").aggregate([("offset", "max")]).rename_columns(["key", "offset"])


class _Folder:
    """A temporary folder made on first use, removed by :meth:`close`."""

    def __init__(self) -> None:
        self.path: str | None = None
        self._n = 0

    def new(self, suffix: str) -> str:
        if self.path is None:
            self.path = tempfile.mkdtemp(prefix="logdoctor-latest-")
        self._n += 1
        return os.path.join(self.path, f"{self._n:06d}{suffix}")

    def close(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None


class Winners:
    """The winning offsets of one partition, given back in ascending order (:meth:`ascending`): in memory,
    or as sorted runs of :data:`OFFSET_RUN` values on disk."""

    def __init__(self, folder: _Folder) -> None:
        self._folder = folder
        self._held: list[np.ndarray] = []
        self._held_n = 0
        self._runs: list[str] = []
        self.count = 0

    def add(self, offsets: np.ndarray) -> None:
        self._held.append(offsets)
        self._held_n += len(offsets)
        self.count += len(offsets)
        if self._held_n >= OFFSET_RUN:
            self._spill()

    def _spill(self) -> None:
        run = np.sort(np.concatenate(self._held)) if self._held else np.empty(0, np.int64)
        self._held, self._held_n = [], 0
        if len(run):
            path = self._folder.new(".offsets")
            run.astype(np.int64, copy=False).tofile(path)
            self._runs.append(path)

    def ascending(self) -> Iterator[np.ndarray]:
        """The offsets in ascending order, in blocks."""
        if not self._runs:
            if self._held:
                yield np.sort(np.concatenate(self._held))
            return
        self._spill()
        # read with plain reads, a window at a time (a memory map's pages would stay in the process's RSS)
        files = [open(p, "rb") for p in self._runs]  # noqa: SIM115 - closed below
        try:
            windows = [np.fromfile(f, np.int64, _WINDOW) for f in files]
            while True:
                live = [i for i, w in enumerate(windows) if len(w)]
                if not live:
                    return
                bound = min(int(windows[i][-1]) for i in live)  # every value up to it is in these windows
                taken = []
                for i in live:
                    n = int(np.searchsorted(windows[i], bound, side="right"))
                    taken.append(windows[i][:n])
                    windows[i] = windows[i][n:]
                    if not len(windows[i]):
                        windows[i] = np.fromfile(files[i], np.int64, _WINDOW)
                yield np.sort(np.concatenate(taken))
        finally:
            for f in files:
                f.close()


class KeyOffsets:
    """(key, highest offset) of a partition's records, added table by table (columns ``key``, ``offset``),
    spilled as sorted runs past :data:`RUN_ENTRIES` entries; :meth:`winners` gives each key's highest
    offset. :meth:`close` removes what was written."""

    def __init__(self) -> None:
        self._folder = _Folder()
        self._table: Any = None
        self._merged = 0
        self._runs: list[str] = []

    def add(self, part: Any) -> None:
        import pyarrow as pa

        part = _max_per_key(part)
        self._table = part if self._table is None else pa.concat_tables([self._table, part])
        if self._table.num_rows > 2 * self._merged + _MERGE_EVERY:  # now and then: about one entry per key
            self._table = _max_per_key(self._table)
            self._merged = self._table.num_rows
            if self._merged > RUN_ENTRIES:
                self._spill()

    def _spill(self) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        table = _max_per_key(self._table)
        self._table, self._merged = None, 0
        if not table.num_rows:
            return
        table = table.take(pc.sort_indices(table, sort_keys=[("key", "ascending")]))
        path = self._folder.new(".arrow")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=max(1, _MERGE_ENTRIES // 8))
        self._runs.append(path)

    def winners(self) -> Winners:
        """Each key's highest offset, once."""
        out = Winners(self._folder)
        if not self._runs:
            if self._table is not None:
                out.add(_max_per_key(self._table).column("offset").to_numpy())
                self._table = None
            return out
        if self._table is not None:
            self._spill()
        for block in self._merge():
            out.add(block)
        return out

    def _merge(self) -> Iterator[np.ndarray]:
        import pyarrow as pa

        # plain reads, a batch at a time (a memory map's pages would stay in the process's RSS)
        files = [pa.OSFile(p, "rb") for p in self._runs]
        try:
            yield from KeyOffsets._merge_files([pa.ipc.open_file(f) for f in files])
        finally:
            for f in files:
                f.close()

    @staticmethod
    def _merge_files(readers: list[Any]) -> Iterator[np.ndarray]:
        import pyarrow as pa
        import pyarrow.compute as pc

        next_batch = [0] * len(readers)
        bufs: list[Any] = [None] * len(readers)

        def refill(i: int) -> None:
            while (bufs[i] is None or not bufs[i].num_rows) and next_batch[i] < readers[i].num_record_batches:
                bufs[i] = readers[i].get_batch(next_batch[i])
                next_batch[i] += 1

        for i in range(len(readers)):
            refill(i)
        while True:
            live = [i for i, b in enumerate(bufs) if b is not None and b.num_rows]
            if not live:
                return
            bound = min(bufs[i].column("key")[-1].as_py() for i in live)
            taken = []
            for i in live:
                keys = bufs[i].column("key")
                n = int(pc.sum(pc.less_equal(keys, pa.scalar(bound, keys.type))).as_py() or 0)  # sorted
                taken.append(bufs[i].slice(0, n))
                bufs[i] = bufs[i].slice(n)
                refill(i)
            grouped = _max_per_key(pa.Table.from_batches(taken))
            yield grouped.column("offset").to_numpy()

    def close(self) -> None:
        self._table = None
        self._folder.close()


class AscendingMatch:
    """Which offsets of ascending batches are winners: the winners (ascending blocks) walked once."""

    def __init__(self, blocks: Iterator[np.ndarray]) -> None:
        self._blocks = blocks
        self._buf = np.empty(0, np.int64)
        self._done = False

    def keep(self, offsets: np.ndarray) -> np.ndarray:
        """A mask over ``offsets`` (ascending, each above every offset asked before)."""
        if not len(offsets):
            return np.zeros(0, bool)
        top = int(offsets[-1])
        while not self._done and (not len(self._buf) or int(self._buf[-1]) < top):
            block = next(self._blocks, None)
            if block is None:
                self._done = True
            else:
                self._buf = np.concatenate([self._buf, block])
        buf = self._buf
        if not len(buf):
            return np.zeros(len(offsets), bool)
        idx = np.minimum(np.searchsorted(buf, offsets), len(buf) - 1)
        mask = buf[idx] == offsets
        self._buf = buf[np.searchsorted(buf, top, side="right") :]
        return mask
