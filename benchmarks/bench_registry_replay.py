"""Registry replay benchmark: ``_schemas`` records of many subjects and many deletes replayed
(:func:`logdoctor.formats.registry.store.replay_records`), against the floor of parsing the same records'
JSON with the standard library.

    .venv/bin/python benchmarks/bench_registry_replay.py --subjects 100000 --deletes 20000

Records: one SCHEMA record per subject, then ``--deletes`` DELETE_SUBJECT records and half as many
CLEAR_SUBJECT records (issue 75 item 14: a replay that walked the whole store per delete took 21 minutes for
100,000 subjects and 20,000 deletes). Goal: the replay within a small multiple of the JSON floor, linear in
the records.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import command, load_average, machine
from logdoctor.formats.registry.store import replay_records


def _j(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def records(subjects: int, deletes: int) -> list[tuple[int, bytes, bytes]]:
    out = []
    for i in range(subjects):
        key = _j({"keytype": "SCHEMA", "subject": f"s{i}", "version": 1, "magic": 1})
        out.append(
            (key, _j({"subject": f"s{i}", "version": 1, "id": i + 1, "schema": '"string"', "deleted": False}))
        )
    for i in range(deletes):
        out.append(
            (
                _j({"keytype": "DELETE_SUBJECT", "subject": f"s{i}", "magic": 0}),
                _j({"subject": f"s{i}", "version": 1}),
            )
        )
    for i in range(0, deletes, 2):
        out.append(
            (_j({"keytype": "CLEAR_SUBJECT", "subject": f"s{i}", "magic": 0}), _j({"subject": f"s{i}"}))
        )
    return [(offset, k, v) for offset, (k, v) in enumerate(out)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", type=int, default=100_000)
    ap.add_argument("--deletes", type=int, default=20_000)
    args = ap.parse_args()
    recs = records(args.subjects, args.deletes)
    started = time.perf_counter()
    for _, k, v in recs:
        json.loads(k)
        json.loads(v)
    floor = time.perf_counter() - started
    started = time.perf_counter()
    reg = replay_records(recs)
    took = time.perf_counter() - started
    assert len(reg.schemas) == args.subjects
    print(f"{machine()}; load {load_average()}")
    print(
        f"{len(recs):,} records ({args.subjects:,} subjects, {args.deletes:,} deletes): replay {took:.2f} s "
        f"({len(recs) / took:,.0f} records/s); json.loads of every key and value {floor:.2f} s; "
        f"ratio {took / floor:.2f}x"
    )
    print(command())


if __name__ == "__main__":
    main()
