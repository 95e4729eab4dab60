"""The report's "who loses what" section, above the per-broker details: the consumer groups that will
reset, the diverged replicas with the records they lose, and the transactions that hang
(docs/who-loses-what.md). Built from the findings alone (their ``details`` where the input has them, else
their message), so a scan and a census render it alike."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

from logdoctor.report.model import FindingView, broker_label

__all__ = ["SECTION_ID", "who_loses_section"]

SECTION_ID = "who-loses-what"

_Row = Callable[[dict[str, Any]], list[str]]


def _groups(d: dict[str, Any]) -> list[str]:
    return [
        str(d.get("group", "")),
        f"{d.get('topic', '')}-{d.get('partition', '')}",
        str(d.get("committed_offset", "")),
        f"[{d.get('log_start_offset', '')}, {d.get('log_end_offset', '')}]",
        f"skips {d.get('earliest_skips', '')}, re-reads {d.get('earliest_rereads', '')}",
        f"skips {d.get('latest_skips', '')}, re-reads {d.get('latest_rereads', '')}",
    ]


def _diverged(d: dict[str, Any]) -> list[str]:
    offs = d.get("lost_offsets") or ["", ""]
    times = d.get("lost_timestamps") or ["", ""]
    return [
        f"{d.get('topic', '')}-{d.get('partition', '')}",
        str(d.get("leader", "")),
        str(d.get("truncate_to", "")),
        str(d.get("records_lost", "")),
        f"{offs[0]}-{offs[1]}",
        f"{times[0]}-{times[1]}",
        ", ".join(map(str, d.get("lost_leader_epochs") or [])),
    ]


def _hanging(d: dict[str, Any]) -> list[str]:
    return [
        f"{d.get('topic', '')}-{d.get('partition', '')}",
        f"{d.get('producer_id', '')} (epoch {d.get('producer_epoch', '')})",
        str(d.get("first_offset", "")),
        str(d.get("last_stable_offset", d.get("first_offset", ""))),
        str(d.get("records_above", "")),
        str(d.get("command_for_running_cluster", "")),
    ]


_TABLES: tuple[tuple[str, str, tuple[str, ...], Sequence[str], _Row], ...] = (
    (
        "groups",
        "Consumer groups that will reset",
        ("group", "partition", "committed", "log range", "earliest", "latest"),
        ("CONSUMER_OFFSET_OUT_OF_RANGE",),
        _groups,
    ),
    (
        "diverged",
        "Diverged replicas: what their brokers' truncation loses",
        ("partition", "leader", "truncate to", "records lost", "offsets", "timestamps", "epochs"),
        ("REPLICA_DIVERGED",),
        _diverged,
    ),
    (
        "hanging",
        "Hanging transactions: what read_committed consumers cannot see",
        ("partition", "producer", "first offset", "last stable offset", "records above", "abort (cluster)"),
        ("TRANSACTION_HANGING", "TRANSACTION_STATE_MISMATCH"),
        _hanging,
    ),
)


def _wanted(f: FindingView, codes: Sequence[str]) -> bool:
    if f.code not in codes:
        return False
    # of the coordinator's disagreements only a transaction nothing will end hangs
    return f.code != "TRANSACTION_STATE_MISMATCH" or (f.details or {}).get("case") == "open-in-log"


def who_loses_section(findings: Sequence[FindingView], *, fleet: bool = False) -> str:
    """The section's HTML (always there: an empty table says nothing was found)."""
    e = html.escape
    parts = [
        f'<section id="{SECTION_ID}"><h2>Who loses what</h2><p class="note">Consumer groups whose committed '
        "offset is outside their partition's log, replicas an unclean leader election left diverged, and "
        "transactions that hold back read_committed consumers (docs/who-loses-what.md).</p>"
    ]
    for key, title, head, codes, row in _TABLES:
        rows = [f for f in findings if _wanted(f, codes)]
        cols = (("broker",) if fleet else ()) + head
        parts.append(f'<h3>{e(title)} ({len(rows)})</h3>')
        if not rows:
            parts.append(f'<p class="note" data-table="{key}">none found</p>')
            continue
        parts.append(f'<table class="who-loses" data-table="{key}"><thead><tr>')
        parts.append("".join(f"<th>{e(c)}</th>" for c in cols) + "</tr></thead><tbody>")
        for f in rows:
            cells = row(f.details) if f.details else [f.message, *[""] * (len(head) - 1)]
            if fleet:
                cells = [broker_label(f.broker) if f.broker is not None else "", *cells]
            parts.append(
                f'<tr data-code="{e(f.code)}" title="{e(f.path)}">'
                + "".join(f"<td>{e(str(c))}</td>" for c in cells)
                + "</tr>"
            )
        parts.append("</tbody></table>")
    parts.append("</section>")
    return "".join(parts)
