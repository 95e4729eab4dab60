"""One self-contained HTML file for a scan (one broker's log dirs) or a fleet census.

The file opens offline: plotly.js is inlined once, gzip-compressed (the ``report`` extra pins plotly;
the page unpacks it with the browser's DecompressionStream, then draws every chart from the data), the
data, the charts' figures included, is one compact JSON block, and nothing is fetched (not even a
favicon). Its size stays bounded for
big fleets: the overview charts show the top rows, the timeline embeds per-segment data for the
``max_timeline_partitions`` worst partitions only (one drawn at a time, picked in a selector),
and the findings table embeds the ``max_findings`` worst findings (the counts cover all).
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import json
import os
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import plotly
from plotly.offline import get_plotlyjs

from logdoctor.checks.topic_config import ConfigInputs
from logdoctor.logdir.atomic import atomic_write
from logdoctor.report import figures
from logdoctor.report.model import (
    CORRUPT_CODES,
    FLAG_CORRUPT,
    FLAG_RISK,
    RISK_CODE,
    SEVERITY_RANK,
    PartitionView,
    ReplicaView,
    ReportData,
    broker_label,
    flag_segments,
    from_census,
    from_scan,
    high_watermark_text,
    partition_path,
)
from logdoctor.report.segments import DEFAULT_READ_BUDGET, ReadBudget, segment_views
from logdoctor.report.templates import CSS, FINDINGS_BODY, JS, LAGGING_HEAD, TIMELINE_BODY
from logdoctor.report.who_loses import loss_words, records_at_risk, who_loses_section

MAX_TIMELINE_PARTITIONS = 200
MAX_FINDINGS = 2000
MAX_LAGGING_ROWS = 50

__all__ = [
    "MAX_FINDINGS",
    "MAX_TIMELINE_PARTITIONS",
    "render_census_report",
    "render_report",
    "render_scan_report",
    "write_census_report",
    "write_scan_report",
]


def _iso(ms: int | None) -> str:
    if ms is None:
        return "?"
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _duration(ms: int) -> str:
    s = ms / 1000
    if s >= 86400:
        return f"{s / 86400:g} days" if s % 86400 == 0 else f"{s / 86400:.1f} days"
    if s >= 3600:
        return f"{s / 3600:.1f} hours"
    return f"{s:.0f} s"


def _json_script(obj: Any) -> str:
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    # "<" as \u003c: no "</script" or "<!--" can end or bend the script element
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


# --- choosing and loading what the timeline shows --------------------------------------------------


def _badness(p: PartitionView, data: ReportData) -> tuple:
    codes = {data.findings[i].code for i in p.findings}
    return (
        -(p.worst + 1),
        -int(RISK_CODE in codes or bool(codes & CORRUPT_CODES)),
        -(p.lag or 0),
        -len(p.findings),
        -p.bytes,
        p.topic,
        p.partition,
        p.broker if p.broker is not None else -1,
    )


def _timeline_partitions(data: ReportData, limit: int, budget: ReadBudget) -> list[PartitionView]:
    chosen: list[PartitionView] = []
    for p in sorted(data.partitions, key=lambda p: _badness(p, data)):
        if len(chosen) >= limit:
            break
        p.segments = segment_views(p.path, p.raw_segments, p.log_end_offset, budget)
        if p.segments is None:
            continue
        flag_segments(p, data.findings, data.now_ms)
        chosen.append(p)
    return chosen


# --- payload ---------------------------------------------------------------------------------------


#: the page's column of each segment field (the script's names)
_SEGMENT_COLUMNS = {"b": "base_offset", "l": "last_offset", "z": "size", "t0": "min_timestamp",
                    "tb": "broker_largest_timestamp", "src": "broker_timestamp_source",
                    "tt": "true_largest_timestamp", "fl": "flags", "rs": "retention_reason"}


def _payload(data: ReportData, parts: list[PartitionView], max_findings: int) -> dict[str, Any]:
    shown = data.findings[:max_findings]
    codes = sorted({f.code for f in shown})
    code_ix = {c: i for i, c in enumerate(codes)}
    part_of: dict[int, int] = {}
    out_parts = []
    for k, p in enumerate(parts):
        for i in p.findings:
            part_of.setdefault(i, k)
        segs = p.segments or []
        cfg = p.topic_config
        out_parts.append({
            "n": p.name, "br": None if p.broker is None else broker_label(p.broker), "d": p.log_dir,
            "lso": p.log_start_offset, "leo": p.log_end_offset,
            # a tiered partition: its local log start (records below it are in the remote tier)
            "llso": p.local_log_start_offset if p.tiered else None, "tier": p.tiered,
            "hw": p.high_watermark, "phw": p.partition_high_watermark,
            "bytes": p.bytes, "lag": p.lag or 0, "w": p.worst, "nf": len(p.findings),
            # a tiered partition's remote tier: segments, bytes, [start, end) (None: not tiered/unknown)
            "rt": None if p.remote is None else {
                "n": p.remote.segments, "b": p.remote.bytes,
                "s": p.remote.start_offset, "e": p.remote.end_offset,
            },
            # this partition's time-retention cut-off (None: compact or retention.ms=-1) and its config
            "cut": data.now_ms - cfg.retention_ms.value if cfg is not None and cfg.time_retention else None,
            "rc": cfg.describe() if cfg is not None else None,
            "s": {**{k: [getattr(s, a) for s in segs] for k, a in _SEGMENT_COLUMNS.items()},
                  "f": [[i for i in s.findings if i < max_findings] for s in segs]},
        })
    return {
        "kind": data.kind,
        "now": data.now_ms,
        "retention_ms": data.retention_ms,
        "cutoff": data.now_ms - data.retention_ms,
        "parts": out_parts,
        "findings": {
            "codes": codes,
            "c": [code_ix[f.code] for f in shown],
            "s": [SEVERITY_RANK[f.severity] for f in shown],
            "p": [f.path for f in shown],
            "pos": [f.position for f in shown],
            "m": [f.message for f in shown],
            "x": [f.fix for f in shown],
            "b": [None if f.broker is None else broker_label(f.broker) for f in shown],
            "fc": [f.command for f in shown],
            "part": [part_of.get(i, -1) for i in range(len(shown))],
        },
    }


# --- the headline ----------------------------------------------------------------------------------


def _lagging(data: ReportData) -> tuple[set[str], list[ReplicaView]]:
    """The diverged replicas' folders, and the replicas behind that are not among them: a diverged replica
    does not lag, it loses records when it fetches (REPLICA_DIVERGED, at risk in the headline)."""
    diverged = {f.path for f in data.findings if f.code == "REPLICA_DIVERGED"}
    behind = [r for r in data.replicas if r.lag > 0]
    return diverged, [r for r in behind if partition_path(r.log_dir, r.topic, r.partition) not in diverged]


def summarize(data: ReportData) -> dict[str, Any]:
    """The figures of the "how bad is it" headline (over every finding, not only the embedded ones)."""
    sev = Counter(f.severity for f in data.findings)
    risk_segments = {f.details.get("segment") or f.path for f in data.findings if f.code == RISK_CODE}
    corrupt_files = {f.path for f in data.findings if f.code in CORRUPT_CODES}
    diverged, lagging = _lagging(data)
    lagging_partitions = {(r.topic, r.partition) for r in lagging}
    full = [d for d in data.disks if d.fullness is not None]
    fullest = max(full, key=lambda d: d.fullness or 0.0) if full else None
    return {
        "errors": sev["error"], "warnings": sev["warning"], "info": sev["info"],
        "risk_segments": len(risk_segments), "corrupt_files": len(corrupt_files),
        "lagging_replicas": len(lagging), "lagging_partitions": len(lagging_partitions),
        "diverged_replicas": len(diverged),
        "max_lag": max((r.lag for r in lagging), default=0),
        "fullest": fullest,
        "partitions": len(data.partitions), "bytes": sum(p.bytes for p in data.partitions),
        "log_dirs": len(data.disks), "brokers": len(data.brokers),
        "at_risk": records_at_risk(data.findings, _segment_offsets(data)),
    }


def _segment_offsets(data: ReportData) -> Any:
    """A segment's offsets (its ``.log`` path): up to the next segment's base offset, or the partition's log
    end offset for the last one; None where the input has no segment list."""
    by_folder = {os.path.normpath(p.path): p for p in data.partitions}

    def offsets(segment: str) -> int | None:
        folder, name = os.path.split(os.path.normpath(segment))
        p = by_folder.get(folder)
        base = name.split(".")[0]
        if p is None or not base.isdigit():
            return None
        bases = sorted(int(r.get("base_offset", -1)) for r in p.raw_segments or [])
        later = [b for b in bases if b > int(base)]
        end = later[0] if later else p.log_end_offset
        return None if end is None else max(0, end - int(base))

    return offsets


def _verdict(data: ReportData, s: dict[str, Any]) -> tuple[str, str, list[str]]:
    fullest = s["fullest"]
    full_frac = fullest.fullness if fullest is not None else 0.0
    lines: list[str] = []
    risk = s["at_risk"]
    if risk.records or risk.lost_replicas or risk.hanging or risk.groups or risk.early_segments:
        lines.append(f"{risk.records:,} record(s) at risk, lost against the operator's intent: "
                     + loss_words(risk))
    if s["risk_segments"]:
        lines.append(f"{s['risk_segments']} segment(s) would be deleted early by time retention "
                     "(RETENTION_RISK: the broker sees a wrong largest timestamp)")
    if s["corrupt_files"]:
        lines.append(f"{s['corrupt_files']} corrupt log/index file(s) (LOG_CORRUPT / INDEX_CORRUPT)")
    if s["lagging_replicas"]:
        lines.append(f"{s['lagging_replicas']} replica(s) of {s['lagging_partitions']} partition(s) lagging, "
                     f"up to {s['max_lag']:,} offsets behind")
    if fullest is not None and full_frac >= 0.75:
        lines.append(f"fullest disk {fullest.used_percent}% full ({fullest.log_dir})")
    # said above
    headline_codes = CORRUPT_CODES | {RISK_CODE, "REPLICA_LAG", "LOG_DIR_NEARLY_FULL", "REPLICA_DIVERGED",
                                      "TRANSACTION_HANGING"}
    in_headline = sum(1 for f in data.findings if f.severity == "error" and f.code in headline_codes)
    other_errors = s["errors"] - in_headline
    if other_errors > 0:
        lines.append(f"{other_errors} other error(s)")
    if s["warnings"]:
        lines.append(f"{s['warnings']} warning(s)")
    if s["errors"] or full_frac >= 0.9:
        level, label = "critical", "Action needed"
    elif s["warnings"] or s["lagging_replicas"] or full_frac >= 0.75:
        level, label = "warning", "Needs attention"
    else:
        level, label = "ok", "Healthy"
        lines.append(f"no errors or warnings in {s['partitions']:,} partition folder(s)")
    return level, label, lines


def _routine_retention(risk: Any) -> str:
    """Routine retention, apart from the headline: what the topics' retention deletes as configured."""
    if not risk.retention_partitions:
        return ""
    return (f'<p class="routine" id="routine-retention" data-records="{risk.retention}">Routine, not at '
            f"risk: the next retention check deletes {risk.retention:,} record(s) of "
            f"{risk.retention_partitions} partition(s) as the topics' retention is configured "
            "(RETENTION_DUE, a note per partition under findings).</p>")


def _card(n: Any, label: str, kind: str = "", attrs: str = "") -> str:
    return (f'<div class="card {kind}"{attrs}><div class="n">{html.escape(str(n))}</div>'
            f'<div class="l">{html.escape(label)}</div></div>')


def _cards(s: dict[str, Any], data: ReportData) -> str:
    risk = s["at_risk"]
    out = [
        _card(f"{risk.records:,}", "records at risk (lost against intent)",
              "error" if risk.records else "ok", ' id="card-at-risk"'),
        _card(f"{s['errors']:,}", "errors", "error" if s["errors"] else "ok", ' id="card-errors"'),
        _card(f"{risk.retention:,}", "records retention deletes as configured (RETENTION_DUE)", "routine",
              ' id="card-routine-retention"'),
        _card(f"{s['warnings']:,}", "warnings", "warning" if s["warnings"] else "ok"),
        _card(f"{s['risk_segments']:,}", "segments at RETENTION_RISK",
              "error" if s["risk_segments"] else "ok"),
        _card(f"{s['corrupt_files']:,}", "corrupt log/index files", "error" if s["corrupt_files"] else "ok"),
    ]
    if data.kind == "fleet":
        out.append(_card(f"{s['lagging_replicas']:,}", f"lagging replicas (max {s['max_lag']:,})",
                         "warning" if s["lagging_replicas"] else "ok"))
        if s["diverged_replicas"]:  # behind the leader too, but they lose records: never "0 behind" alone
            out.append(_card(f"{s['diverged_replicas']:,}", "diverged replicas (REPLICA_DIVERGED)", "error"))
    f = s["fullest"]
    if f is not None:
        frac = f.fullness or 0.0
        out.append(_card(f"{f.used_percent}%", "fullest disk",
                         "error" if frac >= 0.9 else "warning" if frac >= 0.75 else "ok"))
    out.append(_card(f"{s['partitions']:,}", "partition folders" if data.kind == "scan" else "replicas"))
    out.append(_card(figures.human_bytes(s["bytes"]), "of log data"))
    return '<div class="cards">' + "".join(out) + "</div>"


def _lagging_table(data: ReportData) -> str:
    best: dict[tuple[str, int], int] = {}
    for r in data.replicas:
        if r.log_end_offset is not None:
            k = (r.topic, r.partition)
            best[k] = max(best.get(k, r.log_end_offset), r.log_end_offset)
    diverged, lagging = _lagging(data)
    lagging.sort(key=lambda r: (-r.lag, r.topic, r.partition))
    if not lagging and not diverged:
        return ('<p class="empty">No replica is behind: every replica of every partition has the same log '
                "end offset.</p>")
    gone = (f'<p class="note diverged-replicas">{len(diverged):,} diverged replica(s), not lagging: their '
            "logs went another way than their partition's leader's, and they lose records when they fetch "
            "(REPLICA_DIVERGED, under findings: " + html.escape(", ".join(sorted(diverged))) + ").</p>"
            if diverged else "")
    if not lagging:
        return gone + '<p class="empty">No other replica is behind its partition\'s most advanced one.</p>'

    rows = []
    for r in lagging[:MAX_LAGGING_ROWS]:
        name = html.escape(f"{r.topic}-{r.partition}")
        hw = html.escape(high_watermark_text(r.high_watermark))
        phw = html.escape(high_watermark_text(r.partition_high_watermark))
        rows.append(
            f'<tr class="lagging-replica" data-partition="{name}" data-broker="{html.escape(str(r.broker))}">'
            f'<td class="code">{name}</td><td class="num">{html.escape(broker_label(r.broker))}</td>'
            f'<td class="where">{html.escape(r.log_dir)}</td><td class="num">{r.log_end_offset:,}</td>'
            f'<td class="num">{best[(r.topic, r.partition)]:,}</td>'
            f'<td class="num"><span class="badge lag">{r.lag:,} behind</span></td>'
            f'<td class="num">{phw}</td><td class="num">{hw}</td></tr>'
        )
    more = ""
    if len(lagging) > MAX_LAGGING_ROWS:
        more = f'<p class="note">{len(lagging) - MAX_LAGGING_ROWS:,} more lagging replica(s) not listed.</p>'
    return gone + LAGGING_HEAD + "".join(rows) + "</tbody></table>" + more


MAX_COMPACTION_ROWS = 200


def _compaction_section(data: ReportData) -> str:
    """The census's compaction table: where each compacted replica's log cleaner stands (the most dirty
    bytes first) and its compaction findings (their messages and fixes are in the findings table)."""
    e = html.escape
    comp = sorted(data.compaction or [], key=lambda r: (-(r.get("dirty_bytes") or 0), str(r.get("topic")),
                                                         r.get("partition") or 0, str(r.get("broker"))))
    note = ("Each compacted replica as its broker's scan saw it (LogCleanerManager's rules): the cleaner "
            "checkpoint, the first dirty and first uncleanable offsets, the clean and dirty (cleanable) "
            "bytes, the cleanable ratio against min.cleanable.dirty.ratio, the oldest dirty record and the "
            "compaction findings. The most dirty bytes first.")
    if not comp:
        return (f'<section id="compaction"><h2>Compaction</h2><p class="note">{e(note)}</p>'
                '<p class="empty">No compacted replica.</p></section>')
    head = ('<table class="compaction"><thead><tr><th>partition</th><th class="num">broker</th>'
            '<th>log dir</th>'
            '<th class="num">checkpoint</th><th class="num">first dirty</th><th class="num">first uncleanable'
            '</th><th class="num">clean bytes</th><th class="num">dirty bytes</th><th class="num">ratio / min'
            '</th><th>oldest dirty record</th><th>findings</th></tr></thead><tbody>')
    out = []
    for r in comp[:MAX_COMPACTION_ROWS]:
        name = e(f"{r.get('topic')}-{r.get('partition')}")
        codes = r.get("compaction_findings") or []
        badges = " ".join(f'<span class="badge">{e(str(c))}</span>' for c in codes)
        ratio = r.get("cleanable_ratio")
        mn = r.get("min_cleanable_dirty_ratio")
        cp = r.get("cleaner_checkpoint")

        def num(v: Any) -> str:
            return "" if v is None else f"{int(v):,}"

        out.append(
            f'<tr class="compacted-replica" data-partition="{name}" data-broker="{e(str(r.get("broker")))}">'
            f'<td class="code">{name}</td><td class="num">{e(str(r.get("broker")))}</td>'
            f'<td class="where">{e(str(r.get("log_dir") or ""))}</td><td class="num">{num(cp)}</td>'
            f'<td class="num">{num(r.get("first_dirty_offset"))}</td>'
            f'<td class="num">{num(r.get("first_uncleanable_offset"))}</td>'
            f'<td class="num">{num(r.get("clean_bytes"))}</td>'
            f'<td class="num">{num(r.get("dirty_bytes"))}</td>'
            f'<td class="num">{"" if ratio is None else f"{ratio:.2f}"} / {"" if mn is None else mn}</td>'
            f'<td>{e(_iso(r.get("oldest_dirty_timestamp")))}</td><td>{badges}</td></tr>'
        )
    more = ""
    if len(comp) > MAX_COMPACTION_ROWS:
        more = (f'<p class="note">{len(comp) - MAX_COMPACTION_ROWS:,} more compacted replica(s) not '
                "listed.</p>")
    return (f'<section id="compaction"><h2>Compaction</h2><p class="note">{e(note)}</p>' + head + "".join(out)
            + "</tbody></table>" + more + "</section>")


def _figure(fig: Any, div_id: str, figs: dict[str, Any]) -> str:
    """The chart's place (its height kept while plotly.js unpacks); its figure goes to the page's JSON."""
    figs[div_id] = json.loads(fig.to_json())
    height = int(fig.layout.height or 400)
    return f'<div id="{div_id}" class="plot" style="height:{height}px;width:100%"></div>'


@functools.cache
def plotly_js_gzip_base64() -> str:
    """plotly.js, gzip-compressed (no time stamp: the same bytes every run) and in base64, the one copy the
    page holds (4.8 MB as it ships, 1.5 MB compressed): the page unpacks it with the browser's
    DecompressionStream before it draws its charts."""
    return base64.b64encode(gzip.compress(get_plotlyjs().encode(), compresslevel=9, mtime=0)).decode("ascii")


def _timeline_section(data: ReportData, parts: list[PartitionView]) -> str:
    e = html.escape
    n_risk = sum(1 for p in parts for sg in p.segments or [] if sg.flags & FLAG_RISK)
    n_corrupt = sum(1 for p in parts for sg in p.segments or [] if sg.flags & FLAG_CORRUPT)
    note = (
        f"{len(parts):,} of {len(data.partitions):,} partition folders have a timeline here (the worst "
        f"first: errors, then RETENTION_RISK/corrupt segments, lag, findings, size); {n_risk} segment(s) "
        f"at RETENTION_RISK and {n_corrupt} corrupt one(s) among them. Left: segments along offsets; "
        "right: along time, with the partition's retention cut-off at now − its topic's retention.ms (the "
        "config used and where it comes from is listed above the chart; none for compacted topics nor for "
        "retention.ms -1, as __remote_log_metadata's). Grey segments are the ones the next retention check "
        "deletes, exactly as `logdoctor retention` says: oldest first, up to the high watermark, while the "
        "broker-visible largest timestamp (◆) is left of the cut-off (the active segment too, after a roll)."
    )
    inner = TIMELINE_BODY if parts else '<p class="empty">No partition with segment data.</p>'
    return f'<section id="timeline"><h2>Partition timeline</h2><p class="note">{e(note)}</p>{inner}</section>'


def _findings_section(data: ReportData, max_findings: int) -> str:
    e = html.escape
    codes = Counter(f.code for f in data.findings[:max_findings])
    options = "".join(f'<option value="{e(c)}">{e(c)} ({n:,})</option>' for c, n in sorted(codes.items()))
    trunc = ""
    if len(data.findings) > max_findings:
        trunc = (f" The {max_findings:,} worst of {len(data.findings):,} findings are listed here; the JSON "
                 "output has all of them.")
    broker_col = '<th class="num">broker</th>' if data.kind == "fleet" else ""
    return FINDINGS_BODY.format(note=e(trunc), code_options=options, broker_col=broker_col)


def _retention_meta(data: ReportData) -> str:
    """The time retention the partitions get (their topic configs), for the page's header line."""
    values = {p.topic_config.retention_ms.value for p in data.partitions
              if p.topic_config is not None and p.topic_config.time_retention}
    compacted = sum(1 for p in data.partitions if p.topic_config is not None and not p.topic_config.delete)
    if not any(p.topic_config is not None for p in data.partitions):
        text = f"retention.ms {data.retention_ms:,} ({_duration(data.retention_ms)})"
    elif len(values) == 1:
        ms = next(iter(values))
        text = f"retention.ms {ms:,} ({_duration(ms)})"
    elif values:
        lo, hi = _duration(min(values)), _duration(max(values))
        text = f"retention.ms per topic ({len(values)} values, {lo} to {hi})"
    else:
        text = "no time retention"
    return text + (f"; {compacted:,} compacted partition(s)" if compacted else "")


def render_report(
    data: ReportData,
    *,
    max_timeline_partitions: int = MAX_TIMELINE_PARTITIONS,
    max_findings: int = MAX_FINDINGS,
    read_budget: int = DEFAULT_READ_BUDGET,
) -> str:
    """The whole page for normalised report data."""
    parts = _timeline_partitions(data, max_timeline_partitions, ReadBudget(read_budget))
    s = summarize(data)
    level, label, lines = _verdict(data, s)
    e = html.escape
    meta = [f"generated {_iso(int(datetime.now(tz=UTC).timestamp() * 1000))}", f"now {_iso(data.now_ms)}",
            _retention_meta(data)]
    if data.depth:
        meta.append(f"depth {data.depth}")
    meta.append(f"{s['brokers']} broker(s), {s['log_dirs']} log dir(s)")
    figs: dict[str, Any] = {}
    body = [
        f'<header class="top"><h1>{e(data.title)}</h1><div class="meta">{e(" · ".join(meta))}</div></header>',
        f'<div class="verdict {level}" id="verdict" data-level="{level}">'
        f'<div class="level">{e(label)}</div><ul>'
        + "".join(f"<li>{e(x)}</li>" for x in lines) + "</ul></div>",
        _routine_retention(s["at_risk"]),
        _cards(s, data),
        who_loses_section(data.findings, fleet=data.kind == "fleet", risk=s["at_risk"]),
        '<div class="grid2"><section id="findings-by-code">'
        + _figure(figures.findings_by_code(data), "fig-findings", figs)
        + '</section><section id="disks">' + _figure(figures.disk_fullness(data), "fig-disks", figs)
        + "</section></div>",
    ]
    if data.kind == "fleet":
        body.append(
            '<section id="replicas"><h2>Replicas across brokers</h2><p class="note">The most lagging '
            "partitions first; each cell is a replica's log end offset, coloured by how far it is behind the "
            "partition's "
            "highest one.</p>" + _figure(figures.replica_offsets(data), "fig-replicas", figs)
            + _lagging_table(data)
            + "</section>"
        )
    if data.compaction is not None:
        body.append(_compaction_section(data))
    body.append(_timeline_section(data, parts))
    topics = _figure(figures.topic_usage(data), "fig-topics", figs)
    body.append(f'<section id="topics">{topics}</section>')
    body.append(_findings_section(data, max_findings))
    body.append(f"<footer>kafka-logdoctor report · plotly.js {e(plotly.__version__)} embedded · works "
                "offline</footer>")
    payload = _json_script(_payload(data, parts, max_findings) | {"figs": figs, "config": figures.CONFIG})
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{e(data.title)}</title><link rel="icon" href="data:,">'
        f"<style>{CSS}</style>"
        f'</head><body><main>{"".join(body)}</main>'
        f'<script type="application/json" id="report-data">{payload}</script>'
        f'<script type="application/octet-stream" id="plotly-js-gz">{plotly_js_gzip_base64()}</script>'
        f"<script>{JS}</script></body></html>\n"
    )


def render_scan_report(result: Any, *, now_ms: int | None = None, retention: Any = None,
                       title: str | None = None, config_inputs: ConfigInputs | None = None,
                       **limits: int) -> str:
    data = from_scan(result, now_ms=now_ms, retention=retention, title=title, config_inputs=config_inputs)
    return render_report(data, **limits)


def render_census_report(census: Any, *, now_ms: int | None = None, retention: Any = None,
                         title: str | None = None, config_inputs: ConfigInputs | None = None,
                         **limits: int) -> str:
    data = from_census(census, now_ms=now_ms, retention=retention, title=title, config_inputs=config_inputs)
    return render_report(data, **limits)


def _write(path: str | os.PathLike[str], text: str) -> Path:
    out = Path(path)
    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, text.encode("utf-8"))
    return out


def write_scan_report(result: Any, path: str | os.PathLike[str], **options: Any) -> Path:
    """Write the HTML report of a scan (``ScanReport`` or its JSON dict) to ``path``; ``options``:
    :func:`render_scan_report`'s.

    ``now_ms`` defaults to the scan's own ``now_ms``. Each partition's retention settings are the ones the
    scan applied (its ``topic_config``), else resolved by :mod:`logdoctor.checks.topic_config` from the log
    dirs and ``config_inputs``, with ``retention`` (int) as --retention-ms. ``limits``:
    ``max_timeline_partitions``, ``max_findings``, ``read_budget`` (bytes of .log read for true largest
    timestamps).
    """
    return _write(path, render_scan_report(result, **options))


def write_census_report(census: Any, path: str | os.PathLike[str], **options: Any) -> Path:
    """Write the HTML report of a fleet census to ``path`` (its input: see ``model.from_census``);
    ``options``: :func:`render_census_report`'s."""
    return _write(path, render_census_report(census, **options))
