"""The census's six tables and every finding of each census fixture, as one canonical JSON document per
fixture: what issue 60's engine changes must leave as it is. The same function runs on the census engine
of another checkout (its own interpreter, ``python tests/census_snapshot.py OUT_DIR``: the code before a
change) and in ``tests/spark/test_census_before_after.py`` (the code after), on the same inputs.

Fixtures: the demo fleet (planted faults, simulated disks), ../shared/forensics (diverged replicas, a
hanging transaction) as log dirs and as inventories, the realworld multi-broker sets of one cluster, and a
generated fleet of 20 brokers x 400 replicas of inventories (benchmarks/bench_census.py's generator). Each
is written once under :data:`INPUTS`, at a fixed path, so both checkouts read the same bytes.

Rows are sorted (a table's row order is its partitioning's), the inputs' root is replaced by ``<root>``,
and a log dir's disk figures that ``statvfs`` reads at the moment of the run are left out (a simulated
disk's are kept)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

TABLES = ("replicas", "partitions", "log_dirs", "findings", "consumer_groups", "compaction")
NOW = 1_790_000_000_000
INPUTS = Path(os.environ.get("LOGDOCTOR_CENSUS_FIXTURES", "/tmp/logdoctor-census-fixtures"))
REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
REALWORLD_SETS = {
    "tuyen-nnt": ("zk-3.0-tuyen-nnt-b0", "zk-3.0-tuyen-nnt-b1", "zk-3.0-tuyen-nnt-b2"),
    "greenlemont": ("kraft-3.5-greenlemont-n1", "kraft-3.5-greenlemont-n2", "kraft-3.5-greenlemont-n3"),
    "nikhildighe": ("zk-3.7-nikhildighe-b0", "zk-3.7-nikhildighe-b1"),
}
_STATVFS = (
    "disk_total_bytes",
    "disk_used_bytes",
    "disk_available_bytes",
    "disk_used_fraction",
    "disk_used_percent",
)


def fixtures(only: str | None = None) -> dict[str, dict[str, Any]]:
    """name -> the census's arguments (``paths`` and ``simulated_disks``), inputs written under INPUTS
    (``only``: that fixture's inputs, the others' left unwritten if they are not yet)."""
    out: dict[str, dict[str, Any]] = {}
    from logdoctor.sample.fleet import generate_demo_fleet

    if only in (None, "demo"):
        demo_root = INPUTS / "demo"
        shutil.rmtree(demo_root, ignore_errors=True)  # byte-identical each time (its clock fixed)
        demo = generate_demo_fleet(demo_root, now_ms=NOW)
        out["demo"] = {"paths": [str(demo_root)], "simulated_disks": demo.simulated_disks}
    forensics = SHARED / "forensics"
    if forensics.is_dir():
        dirs = [str(forensics / f"broker-{n}" / "kafka-logs") for n in (1, 2, 3)]
        out["forensics"] = {"paths": dirs}
        inv = INPUTS / "forensics-inventories"
        if not (inv / "DONE").exists():
            from logdoctor.checks.context import Depth
            from logdoctor.checks.inventory import build_inventory, write_inventory

            shutil.rmtree(inv, ignore_errors=True)
            inv.mkdir(parents=True)
            for i, d in enumerate(dirs):
                write_inventory(build_inventory([d], Depth.DEFAULT, now_ms=NOW), str(inv / f"b{i}.parquet"))
            (inv / "DONE").write_text("")
        out["forensics-inventories"] = {"paths": [str(inv)]}
    realworld = SHARED / "realworld"
    for name, sets in REALWORLD_SETS.items():
        if all((realworld / n).is_dir() for n in sets):
            out[name] = {"paths": [str(realworld / n) for n in sets]}
    if only in (None, "fleet-20x400"):
        out["fleet-20x400"] = {"paths": [str(generated_fleet(20, 400))]}
    return out


def generated_fleet(brokers: int, replicas: int) -> Path:
    """benchmarks/bench_census.py's inventories of a generated fleet, under INPUTS."""
    folder = INPUTS / f"fleet-{brokers}x{replicas}"
    if (folder / "DONE").exists():
        return folder
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_census import _write_inventories

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    _write_inventories(folder, brokers, replicas, 7, range(brokers))
    (folder / "DONE").write_text("")
    return folder


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if isinstance(v, float):
        return round(v, 9)
    if isinstance(v, bytes):
        return v.hex()
    if v is None or isinstance(v, bool | int | str):
        return v
    return str(v)


def canonical(tables: dict[str, str], roots: list[str]) -> dict[str, list[str]]:
    """Each table's rows as sorted JSON strings, the inputs' roots replaced by ``<root>``."""
    import pyarrow.parquet as pq

    out: dict[str, list[str]] = {}
    for name in TABLES:
        rows = pq.read_table(tables[name]).to_pylist()
        texts = []
        for r in rows:
            if name == "log_dirs" and r.get("disk_source") == "statvfs":
                r = {k: v for k, v in r.items() if k not in _STATVFS}
            text = json.dumps(_plain(r), sort_keys=True)
            for root in roots:
                text = text.replace(root, "<root>")
            texts.append(text)
        out[name] = sorted(texts)
    return out


def snapshot(spark: Any, name: str, args: dict[str, Any], out: Path) -> dict[str, list[str]]:
    """The canonical tables of the census of one fixture (run with ``spark``, written under ``out``)."""
    from logdoctor.spark.census import run_census

    result = run_census(
        spark, args["paths"], out / name, now_ms=NOW, simulated_disks=args.get("simulated_disks")
    )
    roots = sorted({str(INPUTS), str(SHARED)}, key=len, reverse=True)
    return canonical(result.tables, roots)


def main(argv: list[str]) -> None:
    """``census_snapshot.py OUT_DIR [NAME...]``: write OUT_DIR/NAME.json of each fixture."""
    from logdoctor.spark.session import get_spark

    dest = Path(argv[0])
    dest.mkdir(parents=True, exist_ok=True)
    spark = get_spark("local[2]")
    for name, args in fixtures().items():
        if argv[1:] and name not in argv[1:]:
            continue
        doc = snapshot(spark, name, args, dest / "census")
        (dest / f"{name}.json").write_text(json.dumps(doc, indent=0) + "\n")
        print(name, {k: len(v) for k, v in doc.items()}, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
