"""What issue 45's consumer view costs (``python benchmarks/bench_transactions.py [--mb 512]``).

A partition of generated transactional segments (lz4, 3 producers, 40% of transactions aborted, 1 KiB
values, 16 KiB batches; /tmp, never the repo). Side by side in one run, page cache warm:

- ``cat`` of the segments (the anchor: reading the bytes at all);
- ``plan_transactions``: the one walk of the batch headers that finds every transaction's outcome
  (what every export and the ``kafka-log`` source now do once per partition before reading);
- the records of every slice as a Spark task reads them (``read_slice``), with ``read_uncommitted`` and
  with ``read_committed`` (the labels and the filter), and with the slices planned without transactions
  (what the readers did before issue 45).

The rows of BENCHMARKS.md's "Records" table follow (``benchmarks/update_table.py`` puts them in place).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH_TMP, TableRows, best_of, command, machine, ratio
from logdoctor.formats.record_types import Compression
from logdoctor.sample.records import RecordDataSpec, write_segment


def partition(total_mb: int, segment_mb: int = 128) -> Path:
    folder = BENCH_TMP / f"txn-{total_mb}mb" / "kafka-logs" / "orders-0"
    if folder.is_dir() and any(folder.glob("*.log")):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    base = 0
    for k in range(max(1, total_mb // segment_mb)):
        spec = RecordDataSpec(
            seed=k, record_count=None, target_bytes=segment_mb * 1024 * 1024, value_size=1024,
            compression=Compression.LZ4, transactional=True, producers=3, abort_ratio=0.4,
            batches_per_transaction=3, base_offset=base,
        )  # fmt: skip
        info = write_segment(folder / f"{base:020d}.log", spec, keep_batches=False)
        base = info.next_offset
    return folder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from logdoctor.logdir.discovery import discover
    from logdoctor.logdir.slices import parse_read_options, plan_slices, plan_transactions
    from logdoctor.spark.sources.slice_reader import read_slice

    table = TableRows()
    folder = partition(args.mb)
    logs = sorted(str(p) for p in folder.glob("*.log"))
    size = sum(os.path.getsize(p) for p in logs)
    refs = discover(str(folder.parent))

    def cat() -> None:
        subprocess.run(["cat", *logs], stdout=subprocess.DEVNULL, check=True)

    def walk() -> int:
        return sum(len(t.transactions) for t in plan_transactions(refs, parse_read_options({})).values())

    def read(level: str | None) -> int:
        opts = parse_read_options({"kafka.isolation.level": level or "read_uncommitted"})
        slices = plan_slices(refs, opts, {} if level is None else None)
        return sum(rb.num_rows for sl in slices for rb in read_slice(sl, opts))

    cat()  # warm the page cache
    t_cat, _ = best_of(args.repeat, cat)
    t_walk, txns = best_of(args.repeat, walk)
    t_before, n_all = best_of(args.repeat, lambda: read(None))
    t_unc, n_unc = best_of(args.repeat, lambda: read("read_uncommitted"))
    t_com, n_com = best_of(args.repeat, lambda: read("read_committed"))
    load = os.getloadavg()[0]
    print(f"# {command()}\n# {machine()}, load {load:.2f}, {size / 2**20:.0f} MiB in {len(logs)} segments, "
          f"{txns:,} transactions")  # fmt: skip
    print(f"| what | best of {args.repeat} | vs cat | records |")
    print("|---|---|---|---|")
    for name, t, n in (
        ("cat of the segments", t_cat, None),
        ("plan_transactions (the header walk)", t_walk, None),
        ("read_slice, no transactions planned (before issue 45)", t_before, n_all),
        ("read_slice, read_uncommitted (labels)", t_unc, n_unc),
        ("read_slice, read_committed (labels and filter)", t_com, n_com),
    ):
        print(f"| {name} | {t:.3f} s | {t / t_cat:.2f}x | {'' if n is None else f'{n:,}'} |")
    print(f"walk + read_committed over the plain read: {(t_walk + t_com) / t_before:.3f}x")
    table.add(
        f"transaction outcomes of {args.mb} MiB (`plan_transactions`, the header walk)",
        f"{t_walk:.3f} s",
        f"`cat` of the segments {t_cat:.3f} s",
        ratio(t_walk, t_cat),
    )
    plain = f"the plain read without a transaction walk {t_before:.3f} s ({n_all:,} records)"
    table.add(
        f"{args.mb} MiB of transactional records read `read_committed` "
        "(walk, labels, no aborted batch decoded)",
        f"{t_com:.3f} s ({n_com:,} records)",
        plain,
        ratio(t_com, t_before),
    )
    table.add(
        f"{args.mb} MiB of transactional records read `read_uncommitted` "
        "(walk and `transaction_result` labels)",
        f"{t_unc:.3f} s",
        plain,
        ratio(t_unc, t_before),
    )
    table.print()


if __name__ == "__main__":
    main()
