"""The typed data set of ../shared/typed read in place (its README.md): the log dir, its facts, and the raw
records of a partition read with the project's batch parser. Tests that need it skip when it is absent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import realworld
import typed_facts

TYPED = realworld.TYPED
LOG_DIR = TYPED / "kafka-logs"
SKIP_REASON = realworld.TYPED_SKIP_REASON


def require() -> Path:
    return realworld.require_typed()


@cache
def counts() -> dict:
    return json.loads((require() / "facts" / "counts.json").read_text())


def facts() -> tuple[dict, ...]:
    """Every line of facts/records.jsonl (tests/typed_facts.py)."""
    return typed_facts.records()


def raw_records(partition_dir: Path) -> Iterator[tuple[int, bytes | None, bytes | None, list]]:
    """(offset, key, value, headers) of every data record of a partition folder, in offset order: each
    ``.log`` file parsed with :func:`logdoctor.formats.records.iter_batches` (control batches left out)."""
    from logdoctor.formats.records import iter_batches

    for log in sorted(partition_dir.glob("*.log")):
        data = log.read_bytes()
        for batch in iter_batches(data, source=str(log), verify_crc=True):
            if batch.is_control:
                continue
            for r in batch.records():
                yield (
                    r.offset,
                    None if r.key is None else bytes(r.key),
                    None if r.value is None else bytes(r.value),
                    [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers],
                )
