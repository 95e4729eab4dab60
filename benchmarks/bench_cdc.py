"""``export --view cdc`` beside ``export --typed`` of the same Debezium topic, in one run (issue 56, item 6).

    PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/python benchmarks/bench_cdc.py [--events 1000000]
        [--keys 100000] [--repeat 1] [--master local[2]]

Generates (once, cached in /tmp/logdoctor-bench) one partition of a PostgreSQL connector's change events of
a table (tests/debezium_logs.py: JsonConverter JSON, schemas inline, no registry): a snapshot ``r`` of
``--keys`` rows, then updates (80 %), inserts (10 %), deletes each followed by its tombstone (5 %) and
updates whose ``note`` is the unavailable-value placeholder (5 %), in batches of 500 records.

Measures, in one Spark session, best of ``--repeat`` after a warm-up of each: (a) ``--typed`` to Parquet (the
envelopes decoded into their typed columns, every event a row); (b) ``--view cdc`` to Parquet (the same
decoding, then the fold: one row per live key). Goal: (b) <= 1.3 x (a). Then the fold alone on one core
(:func:`logdoctor.spark.cdc.fold_topic` over (a)'s Parquet, which holds the columns the fold reads), in
events/s. Prints the machine and its load (``uptime``), which the figures depend on (shared cores).

Measured (2 cores shared with other jobs, load average 7, 1,000,000 events, 1,672 MB): (a) 314.7 s,
(b) 216.2 s, ratio 0.69: the JSON decoding dominates both, and (b) writes one row per live key where (a)
writes every event. The fold alone: 125,542 events/s (it was half that while the cyclic garbage collector
was re-enabled after each batch: each re-enable scanned every row kept).
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import debezium_logs as dl
from _common import BENCH_TMP, command, machine


def make_topic(events: int, keys: int, seed: int = 56) -> Path:
    """The log dir of ``events`` change events (cached by its parameters)."""
    root = BENCH_TMP / f"cdc-{events}e-{keys}k-{seed}"
    if (root / "done").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    rnd = random.Random(seed)
    w = dl.TopicWriter(root)
    live: list[int] = []
    batch: list[dl.Event] = []
    n = lsn = 0
    next_id = 1

    def emit(e: dl.Event) -> None:
        nonlocal n
        batch.append(e)
        n += 1
        if len(batch) == 500:
            w.plain(*batch)
            batch.clear()

    while next_id <= keys and n < events:
        lsn += 1
        emit(dl.upsert("r", next_id, f"name-{next_id}", f"note-{next_id}", lsn, lsn))
        live.append(next_id)
        next_id += 1
    while n < events:
        lsn += 1
        p = rnd.random()
        if p < 0.10 or not live:
            emit(dl.upsert("c", next_id, f"name-{next_id}", f"note-{next_id}", lsn, lsn))
            live.append(next_id)
            next_id += 1
        elif p < 0.15:
            i = rnd.randrange(len(live))
            key = live[i]
            live[i] = live[-1]
            live.pop()
            emit(dl.delete(key, lsn, lsn))
            emit(dl.tombstone(key))
        else:
            key = live[rnd.randrange(len(live))]
            note = dl.PLACEHOLDER if p >= 0.95 else f"note-{key}-{lsn}"
            emit(dl.upsert("u", key, f"name-{key}-{lsn}", note, lsn, lsn))
    if batch:
        w.plain(*batch)
    (root / "done").write_text("")
    return root


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()

    from logdoctor.spark.cdc_job import run_cdc_export
    from logdoctor.spark.export import run_export
    from logdoctor.spark.session import get_spark

    print(command())
    print(machine())
    started = time.perf_counter()
    root = make_topic(args.events, args.keys)
    size = sum(p.stat().st_size for p in root.rglob("*.log"))
    made = time.perf_counter() - started
    print(f"topic: {args.events:,} events, {size / 1e6:,.0f} MB ({made:.1f} s to make)")
    spark = get_spark(args.master, "bench-cdc")
    out = BENCH_TMP / "cdc-out"

    def typed() -> None:
        shutil.rmtree(out / "typed", ignore_errors=True)
        run_export(spark, [str(root)], str(out / "typed"), options={"typed": "true"})

    def cdc() -> None:
        shutil.rmtree(out / "cdc", ignore_errors=True)
        run_cdc_export(spark, [str(root)], str(out / "cdc"), options={"view": "cdc"})

    typed()  # warm-up: the session's workers, the page cache
    cdc()
    t_typed = min(timed(typed) for _ in range(args.repeat))
    t_cdc = min(timed(cdc) for _ in range(args.repeat))
    print(f"(a) --typed     {t_typed:7.1f} s  {args.events / t_typed:10,.0f} events/s")
    print(f"(b) --view cdc  {t_cdc:7.1f} s  {args.events / t_cdc:10,.0f} events/s")
    print(f"ratio (b)/(a)   {t_cdc / t_typed:7.2f}  (goal <= 1.3)")
    spark.stop()

    import pyarrow.parquet as pq

    from logdoctor.spark.cdc import fold_topic

    files = sorted((out / "typed" / dl.TOPIC).rglob("*.parquet"))
    batches = [b for f in files for b in pq.read_table(f).to_batches(max_chunksize=4096)]
    t_fold = timed(lambda: fold_topic({0: batches}))
    print(f"the fold alone (one core) {t_fold:6.1f} s  {args.events / t_fold:10,.0f} events/s")
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
