"""Fast paths beside their general code (issue 61 item 4), each timed against the general path on the same
input, alternated round by round in one run: does the fast path pay?

- ``__remote_log_metadata`` replay: the direct reader of the plain segment records
  (``formats.internal.remote_segment_records``) against the schema-driven reader alone, on a generated
  metadata partition of ``--segments`` segments (one RemoteLogSegmentMetadataRecord and one
  COPY_SEGMENT_FINISHED update each, as Kafka writes them), replayed whole
  (``replay_metadata_folders``) and decoded value by value (``decode_remote_log_metadata``).
- ``restore``'s check of a stored index against its segment (``_index_problem``): the check over all entries
  at once (``_entries_fit``, numpy) against the entry-by-entry walk (``_first_bad_entry``) on indexes that
  fit (the case of every segment of a sound store) of a 4 MiB segment and of a full 1 GiB one.

CPU seconds, best of ``--repeat``; ratio: fast path / general path (below 1: the fast path pays).

    .venv/bin/python benchmarks/bench_fast_paths.py [--segments 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import base64
import random
import shutil
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import BENCH_TMP, TableRows, load_average, machine


def _cpu(fn: Callable[[], object]) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def alternate(cases: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Best CPU seconds of each case, the cases run in turn in every round (a load change hits both)."""
    best = {name: float("inf") for name in cases}
    for _ in range(repeat):
        for name, fn in cases.items():
            best[name] = min(best[name], _cpu(fn))
    return best


def general_only(module: Any, name: str, stand_in: Any, fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` run with ``module.name`` (a fast path's entry) replaced by ``stand_in``, which declines every
    input: the general path alone. The fast path is ``fn`` itself."""

    def run() -> object:
        fast = getattr(module, name)
        setattr(module, name, stand_in)
        try:
            return fn()
        finally:
            setattr(module, name, fast)

    return run


def _uuid(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).rstrip(b"=").decode()


def metadata_partition(segments: int) -> Path:
    """A ``__remote_log_metadata-0`` folder of ``segments`` copied segments (two events each)."""
    from logdoctor.logdir.remote_metadata import SegmentState, TopicIdPartition
    from logdoctor.sample.remote_tier import MetadataEvent, metadata_batches, segment_metadata, segment_update

    folder = BENCH_TMP / f"fast-paths-metadata-{segments}" / "__remote_log_metadata-0"
    if (folder / "00000000000000000000.log").exists():
        return folder
    shutil.rmtree(folder.parent, ignore_errors=True)
    folder.mkdir(parents=True)
    rng = random.Random(61)
    parts = [TopicIdPartition(_uuid(rng), f"topic-{t:02d}", p) for t in range(10) for p in range(10)]
    ts = 1_790_000_000_000
    evs = []
    for i in range(segments):
        tip = parts[i % len(parts)]
        start = (i // len(parts)) * 1000
        sid = _uuid(rng)
        kw = dict(broker_id=0, event_timestamp_ms=ts + i)
        evs.append(
            MetadataEvent(
                segment_metadata(
                    tip, sid, start, start + 999, max_timestamp_ms=ts + i, leader_epochs=[(0, start)],
                    size=1 << 20, **kw,
                ),
                ts + i,
            )
        )  # fmt: skip
        evs.append(MetadataEvent(segment_update(tip, sid, SegmentState.COPY_SEGMENT_FINISHED, **kw), ts + i))
    (folder / "00000000000000000000.log").write_bytes(metadata_batches(evs, base_offset=0))
    (folder / "00000000000000000000.index").write_bytes(b"")
    (folder / "00000000000000000000.timeindex").write_bytes(b"")
    return folder


def bench_metadata(segments: int, repeat: int, rows: TableRows) -> None:
    from logdoctor.formats.internal import remote_log_metadata as rlm
    from logdoctor.formats.records import iter_batches
    from logdoctor.logdir.remote_metadata import replay_metadata_folders

    folder = metadata_partition(segments)
    values = [
        bytes(r.value)
        for b in iter_batches((folder / "00000000000000000000.log").read_bytes())
        for r in b.records()
    ]

    def schema_only(fn: Callable[[], object]) -> Callable[[], object]:
        return general_only(rlm, "read_plain_segment_record", lambda *_a: None, fn)  # "not plain": schema

    def replay() -> object:
        md = replay_metadata_folders({0: str(folder)}, num_partitions=1)  # every partition in -0
        assert not md.problems, md.problems[:3]
        return md

    def decode() -> None:
        for v in values:
            rlm.decode_remote_log_metadata(None, v)

    # the same answer either way (tests/formats/test_remote_segment_records.py checks it field by field)
    assert replay().summary() == schema_only(replay)().summary()  # type: ignore[attr-defined]
    best = alternate(
        {
            "replay direct": replay,
            "replay schema": schema_only(replay),
            "decode direct": decode,
            "decode schema": schema_only(decode),
        },
        repeat,
    )
    n = len(values)
    for what, fast, slow in (
        ("replay", best["replay direct"], best["replay schema"]),
        ("decode", best["decode direct"], best["decode schema"]),
    ):
        label = (
            f"`__remote_log_metadata` {what} of {n:,} segment events ({segments:,} segments), "
            "direct reader of the plain segment records"
        )
        rows.add(
            label,
            f"{fast:.3f} s CPU ({n / fast:,.0f} events/s)",
            f"schema-driven reader alone {slow:.3f} s",
            f"{fast / slow:.2f}x",
        )
        print(f"metadata {what:7s} direct {fast:.3f} s   schema only {slow:.3f} s   ratio {fast / slow:.2f}")


def _offset_index(entries: int, interval: int) -> bytes:
    """An offset index as the broker writes it: an entry every ``interval`` bytes, the first batch not
    indexed (a relative offset 0 after slot 0 is a zero slot: ``real_entry_count``)."""
    return b"".join(struct.pack(">ii", (i + 1) * 7, (i + 1) * interval) for i in range(entries))


def _time_index(entries: int) -> bytes:
    return b"".join(struct.pack(">qi", 1_790_000_000_000 + i * 10, (i + 1) * 7) for i in range(entries))


def bench_index_fit(repeat: int, rows: TableRows) -> None:
    from logdoctor.formats.index import real_entry_count
    from logdoctor.repair.procedures import restore

    for label, entries in (("4 MiB segment", 1024), ("1 GiB segment", 262_144)):
        size = (entries + 1) * 4096
        base = 1_000_000
        end = base + (entries + 1) * 7
        inputs = (
            ("index", _offset_index(entries, 4096)),
            ("timeindex", _time_index(entries)),
        )
        for suffix, data in inputs:  # every entry checked, none taken for a zero slot
            assert real_entry_count(data, 8 if suffix == "index" else 12) == entries, suffix
        calls = max(1, 2_000_000 // entries)  # about the same number of entries checked per case

        def check(
            suffix: str, data: bytes, calls: int = calls, base: int = base, end: int = end, size: int = size
        ) -> Callable[[], object]:
            def run() -> None:
                for _ in range(calls):
                    assert restore._index_problem(suffix, data, base, end, size, "x") is None

            return run

        check("index", inputs[0][1], 1)()  # numpy imported before the clocks run
        cases: dict[str, Callable[[], object]] = {}
        for suffix, data in inputs:
            cases[f"{suffix} numpy"] = check(suffix, data)
            # "does not fit": _index_problem walks every entry with _first_bad_entry
            walk = general_only(restore, "_entries_fit", lambda *_a: False, check(suffix, data))
            cases[f"{suffix} walk"] = walk
        best = alternate(cases, repeat)
        for suffix, _data in inputs:
            fast, slow = best[f"{suffix} numpy"] / calls, best[f"{suffix} walk"] / calls
            rows.add(
                f"`restore` plan: a stored `.{suffix}` that fits its segment checked, {entries:,} entries "
                f"({label}), all entries at once (`_entries_fit`)",
                f"{fast * 1e6:,.0f} µs CPU",
                f"entry by entry (`_first_bad_entry`) {slow * 1e6:,.0f} µs",
                f"{fast / slow:.2f}x",
            )
            print(
                f"{suffix:9s} {entries:>7,} entries: numpy {fast * 1e6:9,.0f} µs   walk {slow * 1e6:9,.0f} µs"
                f"   ratio {fast / slow:.2f}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--segments", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(machine(), f"load {load_average()}")
    rows = TableRows()
    bench_metadata(args.segments, args.repeat, rows)
    bench_index_fit(args.repeat, rows)
    rows.print()


if __name__ == "__main__":
    main()
