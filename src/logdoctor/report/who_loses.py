"""The report's "who loses what" section, above the per-broker details: the consumer groups that will
reset, the diverged replicas with the records they lose, and the transactions that hang
(docs/who-loses-what.md). Each number is a cell of its own. Built from the findings alone: their
``details`` where the input has them (a scan), else read back from their message and fix (a census's
findings table holds the words, whose templates are the catalog's), so a scan and a census render it alike.
The headline's count of records at risk is :func:`records_at_risk`."""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from logdoctor.report.model import FindingView, broker_label

__all__ = ["SECTION_ID", "RecordsAtRisk", "facts", "loss_words", "records_at_risk",
           "who_loses_section"]

SECTION_ID = "who-loses-what"

# --- the facts of a finding: its details, or its message read back ---------------------------------------

_N = r"(-?\d+)"
_DIVERGED = re.compile(
    r"^(?P<tp>\S+) here \(leader epoch (?P<own_epoch>\d+)\) diverged from the replica in (?P<leader>.+?), "
    r"which leads with leader epoch (?P<leader_epoch>\d+): when this broker fetches from it, it truncates "
    rf"the log to offset {_N} and loses {_N} records, offsets {_N} to {_N}"
    rf"(?:, timestamps {_N} \([^)]*\) to {_N} \([^)]*\))?, written in leader epoch\(s\) (?P<epochs>.+)$"
)
#: the census's words for an inventory's replica (its records unread: the offsets only)
_DIVERGED_OFFSETS = re.compile(
    r"^(?P<tp>\S+) on (?P<broker>.+?) \(leader epoch (?P<own_epoch>\d+)\) diverged from the replica on "
    r"(?P<leader_broker>.+?) \((?P<leader>.+?)\), which leads with leader epoch (?P<leader_epoch>\d+): when "
    rf".+? fetches from it, it truncates the log to offset {_N} and loses offsets {_N} to {_N} "
    rf"\({_N} offsets\)$"
)
_HANGING = re.compile(
    rf"^producer {_N} \(epoch {_N}\) has had a transaction open since offset {_N} .*the last stable offset "
    rf"is {_N}, so {_N} records \({_N} offsets\) up to the log end offset {_N} "
)
_GROUP = re.compile(
    rf"^group (?P<group>.+?) committed offset {_N} for (?P<tp>\S+), .* \(log start offset {_N}, log end "
    rf"offset {_N}\): "
)
#: RETENTION_DUE's words (checks/catalog/retention_compaction.py): what the next retention check deletes
_DUE = re.compile(
    r"deletes (?P<segments>\d+) segment\(s\), (?P<size>[\d,.]+ (?:B|KiB|MiB|GiB|TiB)) holding offsets "
    r"(?P<first>\d+) to "
    r"(?P<last>\d+) \((?P<offsets>[\d,]+) offsets\)"
)
_EXPORT = re.compile(r"`(logdoctor export [^`]*)`")
_ABORT = re.compile(r"`?(kafka-transactions\.sh [^`(]*? abort [^`(]*?)`?(?: \(|$)")


def _topic_partition(tp: str) -> tuple[str, int | None]:
    topic, _, part = tp.rpartition("-")
    return (topic, int(part)) if part.isdigit() else (tp, None)


def _ints(m: re.Match[str], *names: int) -> list[int | None]:
    return [int(g) if (g := m.group(n)) is not None else None for n in names]


def facts(f: FindingView) -> dict[str, Any] | None:
    """The numbers of a REPLICA_DIVERGED, TRANSACTION_HANGING or CONSUMER_OFFSET_OUT_OF_RANGE finding:
    its details, else its message and fix read back (None: neither says them)."""
    d = dict(f.details or {})
    if f.code == "REPLICA_DIVERGED":
        export = _EXPORT.search(f.fix or "")
        d.setdefault("salvage_command", export.group(1) if export else (f.command or ""))
        if "truncate_to" in d:
            return d
        m = _DIVERGED.match(f.message)
        if m is not None:
            to, records, first, last, t1, t2 = _ints(m, 5, 6, 7, 8, 9, 10)
            epochs = [int(e) for e in re.findall(r"\d+", m.group("epochs"))]
            topic, partition = _topic_partition(m.group("tp"))
            return d | {
                "topic": topic, "partition": partition, "leader": m.group("leader"),
                "leader_epoch": int(m.group("leader_epoch")), "truncate_to": to, "records_lost": records,
                "lost_offsets": [first, last], "lost_timestamps": [t1, t2], "lost_leader_epochs": epochs,
            }  # fmt: skip
        m = _DIVERGED_OFFSETS.match(f.message)
        if m is not None:
            to, first, last, _n = _ints(m, 7, 8, 9, 10)
            topic, partition = _topic_partition(m.group("tp"))
            return d | {
                "topic": topic, "partition": partition,
                "leader": f"{m.group('leader_broker')} ({m.group('leader')})",
                "leader_epoch": int(m.group("leader_epoch")), "truncate_to": to, "records_lost": None,
                "lost_offsets": [first, last], "lost_timestamps": [None, None], "lost_leader_epochs": [],
            }  # fmt: skip
        return None
    if f.code in ("TRANSACTION_HANGING", "TRANSACTION_STATE_MISMATCH"):
        abort = _ABORT.search(f.fix or "")
        if "command_for_running_cluster" not in d and abort is not None:
            d["command_for_running_cluster"] = abort.group(1).strip()
        if "first_offset" in d:
            return d
        m = _HANGING.match(f.message) if f.code == "TRANSACTION_HANGING" else None
        if m is None:
            return None
        pid, epoch, first, lso, above, offsets, leo = _ints(m, 1, 2, 3, 4, 5, 6, 7)
        topic, partition = _topic_partition(os.path.basename(os.path.dirname(f.path)))
        return d | {
            "topic": topic, "partition": partition, "producer_id": pid, "producer_epoch": epoch,
            "first_offset": first, "last_stable_offset": lso, "records_above": above,
            "offsets_above": offsets, "log_end_offset": leo,
        }  # fmt: skip
    if f.code == "RETENTION_DUE":
        if "offsets" in d:
            return d
        m = _DUE.search(f.message)
        if m is None:
            return None
        return d | {  # the words give the size in binary units: the exact bytes are the details' only
            "first_offset": int(m.group("first")), "last_offset": int(m.group("last")),
            "offsets": int(m.group("offsets").replace(",", "")),
        }  # fmt: skip
    if f.code == "CONSUMER_OFFSET_OUT_OF_RANGE":
        if "committed_offset" in d:
            return d
        m = _GROUP.match(f.message)
        if m is None:
            return None
        committed, start, end = _ints(m, 3, 4, 5)
        topic, partition = _topic_partition(m.group("tp"))
        return d | {
            "group": m.group("group"), "topic": topic, "partition": partition, "committed_offset": committed,
            "log_start_offset": start, "log_end_offset": end,
        }  # fmt: skip
    return None


# --- records at risk (the headline) ---------------------------------------------------------------------

#: LOG_CORRUPT's fix (checks/default.py truncation_effects): what the recovery's truncation takes
_TORN = re.compile(r"([\d,]+)\+? record\(s\) leave the log")


@dataclass(frozen=True, slots=True)
class RecordsAtRisk:
    """What the headline counts, the records lost against the operator's intent (:attr:`records`): the
    records the diverged replicas' truncation deletes (offsets where an inventory's records were not read),
    records above hanging transactions' last stable offsets (invisible to read_committed consumers), the
    records a torn log's recovery truncates (LOG_CORRUPT), the offsets of segments time retention deletes
    early because of a wrong largest timestamp (RETENTION_RISK, ``largestTime=0``), and the offsets consumer
    groups committed out of range skip when they reset (to latest, Kafka's default ``auto.offset.reset``).
    Apart, never in :attr:`records`: what the brokers' next retention check deletes as configured
    (RETENTION_DUE, :attr:`retention`: retention as configured, or below the log start offset)."""

    lost: int = 0
    lost_replicas: int = 0
    invisible: int = 0
    hanging: int = 0
    groups: int = 0
    retention: int = 0
    retention_partitions: int = 0
    torn: int = 0
    torn_partitions: int = 0
    early: int = 0
    early_segments: int = 0
    skipped: int = 0

    @property
    def records(self) -> int:
        return self.lost + self.invisible + self.torn + self.early + self.skipped


def _segment_path(f: FindingView) -> str:
    return str((f.details or {}).get("segment") or f.path)


def records_at_risk(
    findings: Sequence[FindingView], segment_offsets: Callable[[str], int | None] | None = None
) -> RecordsAtRisk:
    """``segment_offsets``: the offsets a segment (its ``.log`` path) holds, None where not known (a
    RETENTION_RISK segment's records are then not counted, its segment is)."""
    lost = replicas = invisible = hanging = groups = retention = retained = 0
    skipped = early = early_segments = 0
    torn: dict[str, int] = {}
    due: list[tuple[FindingView, int]] = []  # RETENTION_DUE and its offsets
    risky: dict[str, int] = {}  # RETENTION_RISK segment -> its offsets (0: unknown)
    for f in findings:
        if f.code == "RETENTION_RISK":
            seg = _segment_path(f)
            if seg not in risky:
                n = segment_offsets(seg) if segment_offsets is not None else None
                risky[seg] = n or 0
            continue
        if f.code == "LOG_CORRUPT":
            # recovery truncates at a partition's first damage: the largest count of its findings
            m = _TORN.search(f.fix or "") or _TORN.search(f.message)
            folder = os.path.dirname(f.path)
            torn[folder] = max(torn.get(folder, 0), int(m.group(1).replace(",", "")) if m else 0)
            continue
        if not _wanted(f, ("REPLICA_DIVERGED", "TRANSACTION_HANGING", "TRANSACTION_STATE_MISMATCH",
                           "CONSUMER_OFFSET_OUT_OF_RANGE", "RETENTION_DUE")):  # fmt: skip
            continue
        d = facts(f) or {}
        if f.code == "RETENTION_DUE":
            due.append((f, int(d.get("offsets") or 0)))
        elif f.code == "REPLICA_DIVERGED":
            replicas += 1
            n = d.get("records_lost")
            if n is None and d.get("lost_offsets") and None not in d["lost_offsets"]:
                n = d["lost_offsets"][1] - d["lost_offsets"][0] + 1
            lost += int(n or 0)
        elif f.code == "CONSUMER_OFFSET_OUT_OF_RANGE":
            groups += 1
            skipped += int(d.get("latest_skips") or 0)
        else:
            hanging += 1
            invisible += int(d.get("records_above") or 0)
    early_segments = len(risky)
    early = sum(risky.values())
    # a RETENTION_RISK segment the next check deletes is in its partition's RETENTION_DUE too: counted once,
    # as a loss; a partition whose due segments are all early ones has no routine retention
    for f, offsets in due:
        routine = offsets - sum(n for seg, n in risky.items() if _due_in(f, seg))
        if routine > 0:
            retained += 1
            retention += routine
    return RecordsAtRisk(lost, replicas, invisible, hanging, groups, retention, retained, sum(torn.values()),
                         sum(1 for n in torn.values() if n), early, early_segments, skipped)


def _due_in(f: FindingView, segment: str) -> bool:
    """Is ``segment`` among the segments RETENTION_DUE ``f`` deletes?"""
    folder, name = os.path.split(segment)
    base = name.split(".")[0]
    if os.path.dirname(f.path) != folder or not base.isdigit():
        return False
    segs = (f.details or {}).get("segments")
    if isinstance(segs, list):
        return int(base) in segs
    m = _DUE.search(f.message)  # a census's words: the segment is due when its offsets are
    return m is not None and int(m.group("first")) <= int(base) <= int(m.group("last"))


# --- the tables -----------------------------------------------------------------------------------------

_Row = Callable[[FindingView, dict[str, Any]], list[Any]]


def _where(f: FindingView) -> str:
    """Who holds it: the census's broker, else the scan's log dir of the finding's partition folder."""
    if f.broker is not None:
        return broker_label(f.broker)
    path = f.path
    if path.endswith(".log"):
        path = os.path.dirname(path)
    return os.path.dirname(path)


def _pair(v: Any) -> tuple[Any, Any]:
    return (v[0], v[1]) if isinstance(v, list | tuple) and len(v) == 2 else ("", "")


def _groups(f: FindingView, d: dict[str, Any]) -> list[Any]:
    return [
        d.get("group", ""), d.get("topic", ""), d.get("partition", ""), d.get("committed_offset", ""),
        d.get("log_start_offset", ""), d.get("log_end_offset", ""),
        d.get("earliest_skips", ""), d.get("earliest_rereads", ""), d.get("latest_skips", ""),
    ]  # fmt: skip


def _time(ms: Any) -> Any:
    """A record timestamp (epoch ms) as a UTC date, as the rest of the page shows times."""
    from logdoctor.checks.state.time_words import iso

    return iso(ms) if isinstance(ms, int) else ms


def _diverged(f: FindingView, d: dict[str, Any]) -> list[Any]:
    first, last = _pair(d.get("lost_offsets"))
    t1, t2 = _pair(d.get("lost_timestamps"))
    return [
        f"{d.get('topic', '')}-{d.get('partition', '')}", _where(f), d.get("leader", ""),
        d.get("truncate_to", ""), d.get("records_lost", ""), first, last, _time(t1), _time(t2),
        ", ".join(map(str, d.get("lost_leader_epochs") or [])), d.get("salvage_command", ""),
    ]  # fmt: skip


def _hanging(f: FindingView, d: dict[str, Any]) -> list[Any]:
    return [
        f"{d.get('topic', '')}-{d.get('partition', '')}", _where(f), d.get("producer_id", ""),
        d.get("producer_epoch", ""), d.get("first_offset", ""),
        d.get("last_stable_offset", d.get("first_offset", "")), d.get("records_above", ""),
        d.get("command_for_running_cluster", ""),
    ]  # fmt: skip


#: (key, title, columns, codes, row); the columns' names are the cells' ``data-col``
_TABLES: tuple[tuple[str, str, tuple[str, ...], Sequence[str], _Row], ...] = (
    (
        "groups",
        "Consumer groups that will reset",
        ("group", "topic", "partition", "committed offset", "log start", "log end",
         "earliest: skips", "earliest: re-reads", "latest: skips"),
        ("CONSUMER_OFFSET_OUT_OF_RANGE",),
        _groups,
    ),
    (
        "diverged",
        "Diverged replicas: what their brokers' truncation loses",
        ("replica", "broker", "leader", "truncate to", "records lost", "first offset", "last offset",
         "first timestamp", "last timestamp", "epochs", "salvage command"),
        ("REPLICA_DIVERGED",),
        _diverged,
    ),
    (
        "hanging",
        "Hanging transactions: what read_committed consumers cannot see",
        ("partition", "broker", "producer", "epoch", "first offset", "last stable offset", "records above",
         "abort (cluster)"),
        ("TRANSACTION_HANGING", "TRANSACTION_STATE_MISMATCH"),
        _hanging,
    ),
)  # fmt: skip

_NUMERIC = {"partition", "committed offset", "log start", "log end", "earliest: skips", "earliest: re-reads",
            "latest: skips", "truncate to", "records lost", "first offset", "last offset", "producer",
            "epoch", "last stable offset", "records above"}  # fmt: skip


_NUM = ' class="num"'


def _wanted(f: FindingView, codes: Sequence[str]) -> bool:
    if f.code not in codes:
        return False
    # of the coordinator's disagreements only a transaction nothing will end hangs
    return f.code != "TRANSACTION_STATE_MISMATCH" or (f.details or {}).get("case") == "open-in-log"


def loss_words(risk: RecordsAtRisk) -> str:
    """The headline's number, part by part (what each code loses; the parts that lose nothing left out)."""
    r = risk
    parts = [
        (r.lost_replicas, f"{r.lost:,} lost by {r.lost_replicas} diverged replica(s) (REPLICA_DIVERGED)"),
        (r.torn_partitions, f"{r.torn:,} truncated from {r.torn_partitions} torn log(s) (LOG_CORRUPT)"),
        (r.early_segments, f"{r.early:,} deleted early from {r.early_segments} segment(s) with a wrong "
                           "largest timestamp (RETENTION_RISK)"),
        (r.groups, f"{r.skipped:,} skipped by {r.groups} consumer group partition(s) that reset to latest "
                   "(CONSUMER_OFFSET_OUT_OF_RANGE)"),
        (r.hanging, f"{r.invisible:,} invisible to read_committed consumers behind {r.hanging} hanging "
                    "transaction(s)"),
    ]  # fmt: skip
    return ", ".join(text for n, text in parts if n) or "none"


def who_loses_section(findings: Sequence[FindingView], *, fleet: bool = False,
                      risk: RecordsAtRisk | None = None) -> str:
    """The section's HTML (always there: an empty table says nothing was found). ``fleet``: a census's
    (the consumer groups' rows name the broker that holds the group's commits)."""
    e = html.escape
    risk = risk if risk is not None else records_at_risk(findings)
    parts = [
        f'<section id="{SECTION_ID}"><h2>Who loses what</h2><p class="note">Consumer groups whose committed '
        "offset is outside their partition's log, replicas an unclean leader election left diverged, and "
        "transactions that hold back read_committed consumers (docs/who-loses-what.md).</p>",
        f'<p class="at-risk" data-records="{risk.records}">{risk.records:,} record(s) at risk, lost '
        f"against the operator's intent: {loss_words(risk)}</p>",
    ]
    if risk.retention_partitions:
        parts.append(
            f'<p class="routine-retention note" data-records="{risk.retention}">Apart, not at risk: '
            f"{risk.retention:,} record(s) of {risk.retention_partitions} partition(s) that the next "
            "retention check deletes as the topic's retention is configured (RETENTION_DUE).</p>"
        )
    for key, title, head, codes, row in _TABLES:
        rows = [f for f in findings if _wanted(f, codes)]
        cols = (("broker",) if fleet and key == "groups" else ()) + head
        parts.append(f"<h3>{e(title)} ({len(rows)})</h3>")
        if not rows:
            parts.append(f'<p class="note" data-table="{key}">none found</p>')
            continue
        parts.append(f'<table class="who-loses" data-table="{key}"><thead><tr>')
        parts.append("".join(f"<th>{e(c)}</th>" for c in cols) + "</tr></thead><tbody>")
        for f in rows:
            d = facts(f)
            cells: list[Any] = row(f, d) if d is not None else [f.message, *[""] * (len(head) - 1)]
            if fleet and key == "groups":
                cells = [broker_label(f.broker) if f.broker is not None else "", *cells]
            parts.append(
                f'<tr data-code="{e(f.code)}" title="{e(f.path)}">'
                + "".join(
                    f'<td data-col="{e(c)}"{_NUM if c in _NUMERIC else ""}>'
                    f"{e('' if v is None else str(v))}</td>"
                    for c, v in zip(cols, cells, strict=True)
                )
                + "</tr>"
            )
        parts.append("</tbody></table>")
    parts.append("</section>")
    return "".join(parts)
