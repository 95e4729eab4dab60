"""A replay's transactions (``apply._pieces``: the pieces of runs sent, each with whether it ends its
transaction): each ends at the record that makes it ``txn_records`` records or ``txn_bytes`` bytes, or at
the last record, however the source's runs of batches fall; the records, their order and every column
kept."""

from __future__ import annotations

import random

import pytest

from logdoctor.replay.apply import _pieces
from logdoctor.replay.source import RecordColumns


def _runs(sizes: list[int], cuts: list[int], headers: bool) -> list[RecordColumns]:
    out, at = [], 0
    for end in [*cuts, len(sizes)]:
        idx = range(at, end)
        out.append(
            RecordColumns(
                list(idx),
                [i * 10 for i in idx],
                [None if i % 3 else b"k%d" % i for i in idx],
                [b"v" * sizes[i] for i in idx],
                [[("h", b"%d" % i)] if i % 2 else None for i in idx] if headers and at % 2 == 0 else None,
                [sizes[i] for i in idx],
            )
        )
        at = end
    return [r for r in out if r.offsets]


@pytest.mark.parametrize("seed", range(40))
def test_transactions_end_at_either_limit(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randrange(1, 300)
    sizes = [rng.choice((0, 1, 7, 50, 400)) for _ in range(n)]
    cuts = sorted(rng.sample(range(1, n), min(n - 1, rng.randrange(0, 12)))) if n > 1 else []
    max_records, max_bytes = rng.randrange(1, 60), rng.randrange(1, 3000)
    runs = _runs(sizes, cuts, headers=seed % 2 == 1)
    want: list[list[int]] = [[]]  # the rule, one record at a time
    size = 0
    for i in range(n):
        want[-1].append(i)
        size += sizes[i]
        if len(want[-1]) >= max_records or size >= max_bytes:
            want.append([])
            size = 0
    want = [w for w in want if w]
    pieces = list(_pieces(runs, max_records, max_bytes))
    assert pieces[-1][1]
    txns: list[list[int]] = [[]]
    for piece, ends in pieces:
        assert piece.offsets
        txns[-1].extend(piece.offsets)
        if ends:
            txns.append([])
    assert txns[:-1] == want
    flat = {
        f: [x for r in runs for x in (getattr(r, f) or [None] * len(r.offsets))]
        for f in RecordColumns._fields
    }
    for c, _ in pieces:
        for f in RecordColumns._fields:
            col = getattr(c, f) or [None] * len(c.offsets)
            assert col == [flat[f][i] for i in c.offsets], f
