"""The typed data set of ../shared/typed read in place (its README.md): the log dir, its facts, and the raw
records of a partition read with the project's batch parser. Tests that need it skip when it is absent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

TYPED = Path(__file__).resolve().parents[2].parent / "shared" / "typed"
LOG_DIR = TYPED / "kafka-logs"
SKIP_REASON = f"typed: no typed data set at {TYPED} (../shared/typed exists only in the workspace)"


def require() -> Path:
    if not (TYPED / "facts" / "counts.json").is_file():
        pytest.skip(SKIP_REASON)
    return TYPED


@cache
def counts() -> dict:
    return json.loads((require() / "facts" / "counts.json").read_text())


@cache
def facts() -> list[dict]:
    """Every line of facts/records.jsonl."""
    with (require() / "facts" / "records.jsonl").open() as f:
        return [json.loads(line) for line in f]


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
