"""A record ``logdoctor dump --print-data --json`` decoded against the JSON ``kafka-dump-log.sh`` prints
for it with one of its decoders (``--offsets-decoder``, ``--transaction-log-decoder``, ...): Kafka's names
are camelCase, ours snake_case; Kafka's JSON converter leaves out a tagged field at its default, which ours
shows (test code of the broker tests)."""

from __future__ import annotations

from typing import Any

__all__ = ["agrees"]

_DEFAULTS = (0, -1, None, [], "")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def agrees(ours: Any, theirs: Any, where: str) -> None:
    """Every field Kafka printed is ours with the same value; a field only ours holds is at a default."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), where
        mine = {_camel(k): v for k, v in ours.items()}
        for k, v in theirs.items():
            assert k in mine, f"{where}.{k}: not decoded (ours: {sorted(mine)})"
            agrees(mine[k], v, f"{where}.{k}")
        for k in set(mine) - set(theirs):
            assert mine[k] in _DEFAULTS, f"{where}.{k}: {mine[k]!r}, and Kafka prints nothing"
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), (where, ours, theirs)
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            agrees(a, b, f"{where}[{i}]")
    else:
        assert ours == theirs, (where, ours, theirs)
