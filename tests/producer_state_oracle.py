"""Kafka 4.4.0's own producer state, run on logs the tests build: the driver
tests/oracles/producer_state/ProducerStateDriver.java, compiled here with ``javac --release 17`` against a
Kafka release's jars, runs each log through ``ProducerStateManager`` as ``LogSegment.recover`` does
(``recover``), as a starting broker loads it from its snapshot (``load``) and as a broker opens the
partition folder after an unclean shutdown (``open``: ``UnifiedLog.create``), and prints what Kafka's
classes hold after each (see the driver's class comment for the modes and the fields)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable
from pathlib import Path

DRIVER = Path(__file__).parent / "oracles" / "producer_state" / "ProducerStateDriver.java"
MAIN = "logdoctor.oracle.ProducerStateDriver"
#: producer.id.expiration.ms's default (ProducerStateManagerConfig; TransactionLogConfig)
DEFAULT_EXPIRATION_MS = 86_400_000


def compile_driver(libs: Path, dest: Path) -> Path:
    """The driver's classes, compiled into ``dest`` against the jars of ``libs``."""
    cp = ":".join(str(j) for j in sorted(libs.glob("*.jar")))
    proc = subprocess.run(
        ["javac", "--release", "17", "-nowarn", "-cp", cp, "-d", str(dest), str(DRIVER)],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"javac {DRIVER.name} failed:\n{proc.stderr[-4000:]}")
    return dest


def run(
    libs: Path,
    classes: Path,
    cases: Iterable[tuple[str, bytes, int, bytes | None, int | None, int, int]],
    work: Path,
) -> dict[str, dict]:
    """Kafka's outcome of each case (name, log bytes, base offset, snapshot bytes at the base offset or
    None, now in ms or None, producer.id.expiration.ms, log start offset), by name: one JVM for all."""
    work.mkdir(parents=True, exist_ok=True)
    lines = []
    for name, log, base, snapshot, now, expiration, log_start in cases:
        (work / f"{name}.log").write_bytes(log)
        snap = "-"
        if snapshot is not None:
            (work / f"{name}.snapshot").write_bytes(snapshot)
            snap = str(work / f"{name}.snapshot")
        # without a moment, 0: every producer is younger than the expiration (now - last timestamp < 0)
        fields = [name, work / f"{name}.log", base, snap, now or 0, expiration, log_start]
        lines.append("\t".join(str(f) for f in fields))
    manifest = work / "cases.tsv"
    manifest.write_text("\n".join(lines) + "\n")
    cp = ":".join([str(classes), *(str(j) for j in sorted(libs.glob("*.jar")))])
    proc = subprocess.run(
        ["java", "-Xshare:auto", "-Dlog4j2.level=OFF", "-cp", cp, MAIN, str(manifest)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"the producer-state driver failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT ") :])
            out[result["name"]] = result
    return out
