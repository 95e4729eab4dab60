"""What an export left out as a consumer of its isolation level would, per partition (issue 45).

The readers apply the rule (:mod:`logdoctor.logdir.transactions`,
:func:`logdoctor.spark.sources.slice_reader.read_slice`);
this says what it left out, from the same transactions the slices were planned with: per partition the
records of aborted transactions, the open transactions (producer id, epoch, first offset, records: with
``TRANSACTION_HANGING`` where the scan's rule, :func:`logdoctor.formats.producer_state.is_late`, finds the
transaction late), the last stable offset, and the records at or above the checkpointed high watermark
(left out with ``upTo=high-watermark``, counted always).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from logdoctor.logdir.refs import PartitionRef
from logdoctor.logdir.transactions import (
    READ_COMMITTED,
    PartitionTransactions,
    count_left_out,
    describe_without_marker,
)

__all__ = ["summary_lines", "transaction_summary"]


def transaction_summary(
    refs: Sequence[PartitionRef], txns: Mapping[tuple[str, str, int], PartitionTransactions], opts: Any
) -> list[dict[str, Any]]:
    """One entry per partition read that holds transactions, records above its high watermark, or whose
    walk met damage (it went on at the next segment, as the rows do); ``opts``: the export's ReadOptions.
    ``invalid_markers``: the markers Kafka's validation refuses that still decided their transaction."""
    from logdoctor.formats.producer_state import is_late
    from logdoctor.logdir.slices import resolve_range, txn_key

    out: list[dict[str, Any]] = []
    upto_hw = opts.upto_high_watermark
    committed_only = opts.isolation_level == READ_COMMITTED
    cut_at = opts.cut_at
    if cut_at is not None:
        from logdoctor.logdir.cut import straddling

        straddle = straddling(txns.values(), cut_at)
    for ref in refs:
        t = txns.get(txn_key(ref))
        if t is None:
            continue
        rng = resolve_range(ref, opts)
        counts = count_left_out(ref, t, upto_hw, rng.start_offset, rng.end_offset)
        if not t.transactions and not counts.above_high_watermark and t.error is None and cut_at is None:
            continue
        lso = t.last_stable_offset(upto_hw)
        if committed_only:
            left = counts.aborted + counts.open + counts.above_stable + counts.after_cut
        else:
            left = counts.above_high_watermark if upto_hw else 0
        cut = None
        if cut_at is not None:
            cut = {
                "at": cut_at,
                "end_offset": t.log_end_offset if t.cut_end is None else t.cut_end,
                "transactions_after": sum(1 for x in t.transactions if x.after_cut),
                "records_left_out": counts.after_cut,
                "straddling_producers": sorted(
                    {(x.producer_id, x.producer_epoch) for x in t.transactions} & straddle
                ),
            }
        out.append(
            {
                "topic": ref.topic,
                "partition": ref.partition,
                "log_dir": ref.log_dir,
                "isolation_level": opts.isolation_level,
                "upto": opts.upto,
                "log_end_offset": t.log_end_offset,
                "high_watermark": t.high_watermark,
                "last_stable_offset": t.log_end_offset if lso is None else lso,
                "transactions": {
                    r: sum(1 for x in t.transactions if x.result == r)
                    for r in ("committed", "aborted", "open")
                },
                "records_left_out": left,
                "left_out": (
                    counts.to_json() | ({"after_cut": counts.after_cut} if cut is not None else {})
                    if committed_only
                    else {"above_high_watermark": left}
                ),
                "records_above_high_watermark": counts.above_high_watermark,
                "open_transactions": [
                    {
                        "producer_id": x.producer_id,
                        "producer_epoch": x.producer_epoch,
                        "first_offset": x.first_offset,
                        "records": x.records,
                        "last_timestamp": x.last_timestamp,
                        "finding": "TRANSACTION_HANGING"
                        if is_late(x.last_timestamp, t.newest_timestamp)
                        else None,
                    }
                    for x in t.open_transactions()
                ],
                "decided_transactions": [x.without_marker_json() for x in t.decided()],
                "error": t.error,
                "invalid_markers": [m.to_json() for m in t.invalid_markers],
                "cut": cut,
            }
        )
    return out


def summary_lines(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The text summary: one line per partition, one more per open transaction."""
    lines: list[str] = []
    for e in entries:
        where = f"{e['topic']}-{e['partition']} ({e['log_dir']})"
        lo = e["left_out"]
        if e["isolation_level"] == READ_COMMITTED:
            parts = [f"{lo['aborted']:,} record(s) of aborted transactions"]
            if lo["open"] or e["open_transactions"]:
                parts.append(f"{lo['open']:,} of open transactions")
            if lo["above_last_stable_offset"]:
                parts.append(f"{lo['above_last_stable_offset']:,} more at or above the LSO")
            if lo.get("after_cut"):
                parts.append(f"{lo['after_cut']:,} more past the cut")
            text = (
                f"{where}: read_committed left out {e['records_left_out']:,} record(s): {', '.join(parts)}; "
                f"last stable offset {e['last_stable_offset']}, log end {e['log_end_offset']}"
            )
        else:
            text = (
                f"{where}: read_uncommitted: every data record kept, labelled in transaction_result "
                f"({e['transactions']['aborted']} aborted, {e['transactions']['open']} open transaction(s)); "
                f"last stable offset {e['last_stable_offset']}, log end {e['log_end_offset']}"
            )
            if e["records_left_out"]:
                text += f"; {e['records_left_out']:,} record(s) at or above the high watermark left out"
        hw = e["high_watermark"]
        if hw is not None and e["records_above_high_watermark"] and e["upto"] != "high-watermark":
            text += (
                f"; {e['records_above_high_watermark']:,} record(s) at or above the high watermark {hw} kept "
                "(--upto high-watermark leaves them out, as a consumer would)"
            )
        if e["error"]:
            text += (
                f"; damage at {e['error']}: that segment's markers after it are not known, the next "
                "segments' decide their transactions"
            )
        for m in e.get("invalid_markers") or ():
            text += (
                f"; the marker at offset {m['base_offset']} ({m['path']}@{m['position']}) is one Kafka's "
                "validation refuses: it decided its transaction from its base offset, as Kafka's producer "
                "state does"
            )
        cut = e.get("cut")
        if cut is not None:
            text += (
                f"; cut at {cut['at']}: end offset {cut['end_offset']}, {cut['records_left_out']:,} "
                f"record(s) left out by it ({cut['transactions_after']} transaction(s) committed after it)"
            )
            for pid, epoch in cut["straddling_producers"]:
                text += (
                    f"; producer {pid} epoch {epoch} (transaction version 1) committed on both sides of the "
                    "cut: its transactions are cut at each partition's own marker (docs/transactions.md)"
                )
        lines.append(text)
        for o in e["open_transactions"]:
            finding = f" ({o['finding']}: logdoctor scan {shlex.quote(e['log_dir'])})" if o["finding"] else ""
            lines.append(
                f"  open transaction: producer {o['producer_id']} epoch {o['producer_epoch']}, first offset "
                f"{o['first_offset']}, {o['records']:,} record(s){finding}; --open-transactions abort "
                "reads past it"
            )
        lines += [f"  {describe_without_marker(d)}" for d in e.get("decided_transactions") or ()]
    return lines
