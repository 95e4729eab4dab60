"""The report's overview charts as plotly figures (the per-partition timeline is drawn by the page).

Each function takes the normalised :class:`ReportData` and returns a ``plotly.graph_objects.Figure``
of bounded size whatever the fleet's size (top-N rows, the rest summed into "other").
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from typing import Any

import plotly.graph_objects as go

from logdoctor.report.model import (
    SEVERITY_RANK,
    Broker,
    ReportData,
    broker_key,
    broker_label,
    high_watermark_text,
)

SEVERITY_COLOR = {"error": "#c62828", "warning": "#e08a00", "info": "#78909c"}
OK_COLOR = "#2e7d32"
FONT = "-apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
#: plotly.js config for every chart: no logo, no link anywhere, nothing fetched
CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "responsive": True,
    "modeBarButtonsToRemove": ["select2d", "lasso2d"],
    "toImageButtonOptions": {"scale": 2},
}


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left", "font": {"size": 15}},
        height=height, margin={"l": 10, "r": 20, "t": 44, "b": 36},
        font={"family": FONT, "size": 12, "color": "#263238"},
        paper_bgcolor="white", plot_bgcolor="white", showlegend=False,
        hoverlabel={"font": {"family": FONT}},
    )
    fig.update_xaxes(gridcolor="#eceff1", zerolinecolor="#cfd8dc", automargin=True)
    fig.update_yaxes(gridcolor="#eceff1", automargin=True)
    return fig


def human_bytes(n: float | None) -> str:
    from logdoctor.logdir.disk import human_bytes as human

    return "?" if n is None else human(n)


def findings_by_code(data: ReportData) -> go.Figure:
    """How many findings of each code, coloured by severity, worst first."""
    count: Counter[tuple[str, str]] = Counter((f.code, f.severity) for f in data.findings)
    items = sorted(count.items(), key=lambda kv: (SEVERITY_RANK[kv[0][1]], kv[1], kv[0][0]))
    fig = go.Figure(go.Bar(
        x=[n for _k, n in items], y=[f"{code} " for (code, _s), _n in items], orientation="h",
        marker_color=[SEVERITY_COLOR[s] for (_c, s), _n in items],
        text=[f"{n:,}" for _k, n in items], textposition="auto", cliponaxis=False,
        hovertemplate="%{y}: %{x} finding(s)<extra></extra>",
    ))
    top = max((n for _k, n in items), default=0)
    fig.update_xaxes(tick0=0, dtick=max(1, -(-top // 5)), rangemode="tozero")  # whole counts
    if not items:
        fig.add_annotation(text="no findings", showarrow=False, font={"size": 16, "color": OK_COLOR},
                           xref="paper", yref="paper", x=0.5, y=0.5)
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
    return _layout(fig, "Findings by code", max(190, 80 + 26 * len(items)))


def _fullness_colors(frac: float | None) -> tuple[str, str]:
    """(Kafka's bytes, other used bytes): red from 90% full, amber from 75%, else green."""
    if frac is None:
        return "#78909c", "#cfd8dc"
    if frac >= 0.9:
        return SEVERITY_COLOR["error"], "#ef9a9a"
    if frac >= 0.75:
        return SEVERITY_COLOR["warning"], "#ffcc80"
    return OK_COLOR, "#a5d6a7"


def disk_fullness(data: ReportData, top: int = 30) -> go.Figure:
    """Each log dir's file system: Kafka's bytes, other used bytes and free space, in % of the disk."""
    disks = sorted(data.disks, key=lambda d: -(d.fullness or 0))[:top]
    disks.reverse()  # fullest at the top of a horizontal chart
    labels = [_disk_label(d.log_dir, d.broker) for d in disks]
    kafka, other, free, texts = [], [], [], []
    for d in disks:
        total = d.total_bytes or 0
        if total:
            used = d.used_bytes or 0
            k = min(d.kafka_bytes, used)
            kafka.append(100 * k / total)
            other.append(100 * (used - k) / total)
            free.append(100 * (total - used) / total)
            texts.append(f"{d.used_percent}% full")  # df's Use%, as every command prints it
        else:
            kafka.append(0)
            other.append(0)
            free.append(0)
            texts.append(f"{human_bytes(d.kafka_bytes)} (disk size unknown)")
    custom = [[human_bytes(d.kafka_bytes), human_bytes(d.used_bytes), human_bytes(d.total_bytes),
               human_bytes(d.free_bytes), d.partitions, d.log_dir] for d in disks]
    hover = ("<b>%{customdata[5]}</b><br>Kafka data %{customdata[0]} in %{customdata[4]} partition(s)<br>"
             "disk used %{customdata[1]} of %{customdata[2]}, free %{customdata[3]}<extra></extra>")
    fig = go.Figure()
    colors = [_fullness_colors(d.fullness) for d in disks]
    fig.add_bar(y=labels, x=kafka, orientation="h", name="Kafka data (dark)",
                marker_color=[c[0] for c in colors], customdata=custom, hovertemplate=hover)
    fig.add_bar(y=labels, x=other, orientation="h", name="other used space (light)",
                marker_color=[c[1] for c in colors], customdata=custom, hovertemplate=hover)
    fig.add_bar(y=labels, x=free, orientation="h", name="free", marker_color="#eceff1", customdata=custom,
                hovertemplate=hover)
    for label, text, d in zip(labels, texts, disks, strict=True):  # the figure right of each bar
        fig.add_annotation(x=100, y=label, text=text, xanchor="left", xshift=6, showarrow=False,
                           font={"size": 11, "color": _fullness_colors(d.fullness)[0]})
    fig.update_layout(barmode="stack")
    fig.update_xaxes(range=[0, 100], ticksuffix="%", title=None, tickvals=[0, 25, 50, 75, 90, 100],
                     ticktext=["0%", "25%", "50%", "75%", "90%", "100%"])
    for x, dash in ((75, "dot"), (90, "dash")):
        fig.add_vline(x=x, line={"color": "#9e9e9e", "dash": dash, "width": 1})
    _layout(fig, "How full is each log dir's disk<br><sup>dark: Kafka's data · light: other used space · "
            "grey: free</sup>", max(190, 110 + 28 * len(disks)))
    fig.update_layout(margin={"r": 80})
    return fig


def _disk_label(log_dir: str, broker: Broker) -> str:
    short = log_dir if len(log_dir) <= 40 else "…" + log_dir[-39:]
    if broker is None:
        return f"{short} "
    return f"b{broker} {short} " if isinstance(broker, int) else f"{broker} {short} "


def topic_usage(data: ReportData, top: int = 20) -> go.Figure:
    """Bytes on disk per topic (all replicas), the biggest ``top`` and the rest as "other"."""
    per: dict[str, int] = defaultdict(int)
    parts: Counter[str] = Counter()
    for p in data.partitions:
        per[p.topic] += p.bytes
        parts[p.topic] += 1
    items = sorted(per.items(), key=lambda kv: -kv[1])
    shown, rest = items[:top], items[top:]
    if rest:
        shown.append((f"other ({len(rest)} topics)", sum(n for _t, n in rest)))
    shown.reverse()
    fig = go.Figure(go.Bar(
        y=[f"{t} " for t, _n in shown], x=[n for _t, n in shown], orientation="h", marker_color="#5b8def",
        text=[human_bytes(n) for _t, n in shown], textposition="auto",
        customdata=[parts.get(t, 0) for t, _n in shown],
        hovertemplate="%{y}: %{text} in %{customdata} partition folder(s)<extra></extra>",
    ))
    fig.update_xaxes(title=None, tickformat="~s", ticksuffix="B")
    return _layout(fig, "Disk usage per topic (all replicas)", max(190, 80 + 24 * len(shown)))


def lagging_partitions(data: ReportData, top: int) -> list[tuple[str, int]]:
    """Topic-partitions ordered by their worst replica lag (then by replica count), the ``top`` first."""
    worst: dict[tuple[str, int], int] = defaultdict(int)
    for r in data.replicas:
        key = (r.topic, r.partition)
        worst[key] = max(worst[key], r.lag)
    order = sorted(worst, key=lambda k: (-worst[k], k))
    return order[:top]


def replica_offsets(data: ReportData, top: int = 40) -> go.Figure:
    """Log end offset of every replica of the most lagging partitions, per broker (lag in colour)."""
    keys = lagging_partitions(data, top)
    brokers = sorted({r.broker for r in data.replicas if r.broker is not None}, key=broker_key)
    col = {b: i for i, b in enumerate(brokers)}
    row = {k: i for i, k in enumerate(keys)}
    z: list[list[float | None]] = [[None] * len(brokers) for _ in keys]
    text: list[list[str]] = [[""] * len(brokers) for _ in keys]
    hover: list[list[str]] = [[""] * len(brokers) for _ in keys]
    for r in data.replicas:
        k = (r.topic, r.partition)
        if k not in row or r.broker not in col:
            continue
        i, j = row[k], col[r.broker]
        z[i][j] = r.lag
        if r.log_end_offset is None:
            text[i][j] = "?"
        else:
            text[i][j] = f"{r.log_end_offset:,}" + (f" (−{r.lag:,})" if r.lag else "")
        hover[i][j] = (f"{r.topic}-{r.partition} on {broker_label(r.broker)}<br>"
                       f"{os.path.basename(r.log_dir)}<br>"
                       f"log end offset {r.log_end_offset}<br>log start offset {r.log_start_offset}<br>"
                       + (f"local log start offset {r.local_log_start_offset} (tiered: below it the "
                          "remote tier)<br>" if r.tiered else "") +
                       "this replica's checkpointed high watermark "
                       f"{high_watermark_text(r.high_watermark)}<br>"
                       f"partition's high watermark {high_watermark_text(r.partition_high_watermark)}<br>"
                       f"lag {r.lag:,}")
    zmax = max([v for line in z for v in line if v is not None] + [1])
    fig = go.Figure(go.Heatmap(
        z=z, x=[broker_label(b) for b in brokers], y=[f"{t}-{p}" for t, p in keys], text=text,
        texttemplate="%{text}", customdata=hover, hovertemplate="%{customdata}<extra></extra>",
        colorscale=[[0, "#e8f5e9"], [1e-9, "#ffe0b2"], [0.5, "#f57c00"], [1, "#b71c1c"]], zmin=0, zmax=zmax,
        xgap=2, ygap=2, colorbar={"title": {"text": "lag"}, "thickness": 12},
    ))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(side="top", type="category")
    _layout(fig, "Replica log end offsets (colour: lag behind the partition's highest log end offset)",
            max(240, 90 + 26 * len(keys)))
    fig.update_layout(margin={"t": 80})
    return fig
