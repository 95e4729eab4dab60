"""Aligned text for a terminal: a header and a summary line per file, one row per batch or entry."""

from __future__ import annotations

import datetime as dt
import functools
import sys
from pathlib import Path
from typing import Any

from logdoctor.cli.dump.context import DumpFailure, Event, FileContext
from logdoctor.cli.dump.kinds import FileKind
from logdoctor.cli.dump.options import DumpOptions
from logdoctor.cli.dump.sink import Sink
from logdoctor.cli.escape import printable
from logdoctor.cli.jsonvalues import compact_json
from logdoctor.cli.plain import Column, field_lines, is_plain_stream, table_lines


@functools.lru_cache(maxsize=4096)
def _iso_seconds(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _iso(ms: int | None) -> str:
    """Epoch ms as ISO-8601 UTC with milliseconds (the second's text is cached: records of a batch
    and batches of a segment mostly share seconds)."""
    if ms is None or ms < 0:
        return "-"
    try:
        return f"{_iso_seconds(ms // 1000)}.{ms % 1000:03d}Z"
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


_NOT_SHOWN = frozenset({"tagged_fields", "unknown_tagged_fields"})


def _kafka_value(value: Any) -> Any:
    """A decoded message as Kafka's generated JsonConverter writes it: camelCase names, absent
    (None) fields and tagged-field bookkeeping left out."""
    if isinstance(value, dict):
        return {_camel(k): _kafka_value(v) for k, v in value.items() if v is not None and k not in _NOT_SHOWN}
    if isinstance(value, list | tuple):
        return [_kafka_value(v) for v in value]
    return value


def _kafka_json(value: Any) -> str:
    return compact_json(_kafka_value(value))


def _field_text(value: Any) -> str:
    """One value of a small file's fields: lists and maps as JSON, strings as they are ('""' if empty)."""
    if isinstance(value, dict | list | tuple):
        return _kafka_json(value)
    if value == "":
        return '""'
    return str(value)


_SGR = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "yellow": "33",
    "bold red": "1;31",
    "bold dim": "1;2",
}


class _Lines:
    """Lines straight to the console's file (one ``write`` each, no rich rendering per line: rich costs
    ~0.6 ms a line, which made text dumps 5x slower than --json). Styles become ANSI SGR codes only
    when rich would color (a terminal, NO_COLOR unset); otherwise lines are plain. Control characters
    in a line (a file name's) are escaped (:func:`logdoctor.cli.output.printable`)."""

    def __init__(self, file: Any, color: bool) -> None:
        self.file = file
        self.color = color

    @classmethod
    def of(cls, console: Any) -> _Lines:
        return cls(
            console.file,
            bool(console.is_terminal and console.color_system is not None and not console.no_color),
        )

    def write(self, line: str, style: str | None = None) -> None:
        line = printable(line, keep_newlines=True)  # a file name's ESC never reaches the terminal
        if style and self.color and style in _SGR:
            self.file.write(f"\x1b[{_SGR[style]}m{line}\x1b[0m\n")
        else:
            self.file.write(line + "\n")


class _Table:
    """A table printed row by row with fixed widths, through :class:`_Lines` (no buffering: a segment can
    have millions of rows). A longer value just widens its own row; the header comes before the first
    row, dimmed. Rows are indented under the file's header line."""

    def __init__(self, out: _Lines, columns: list[Any]) -> None:
        self.out = out
        self.columns = columns
        # one format string for the whole row (str.format is several times faster than a join of
        # rjust/ljust per cell)
        self._fmt = "  " + "  ".join(f"{{!s:{'>' if c.right else '<'}{c.width}}}" for c in columns)
        self._header_done = False

    def row(self, cells: list[Any], *, style: str | None = None, tail: str = "") -> None:
        if not self._header_done:
            self._header_done = True
            self.out.write(self._fmt.format(*(c.header for c in self.columns)).rstrip(), "bold dim")
        line = self._fmt.format(*cells).rstrip()
        self.out.write(f"{line}  {tail}" if tail else line, style)


def _preview(data: bytes | memoryview | None, limit: int = 200) -> str:
    """Bytes as text for a terminal: UTF-8 when it decodes cleanly, else hex; long values cut. The
    printable test is str.isprintable (C), not a Python loop per character: key and value previews were
    the larger part of a text -p dump."""
    if data is None:
        return "null"
    cut = len(data) > limit
    raw = bytes(data[: limit + 1]) if cut else bytes(data)
    try:
        text = raw[:limit].decode("utf-8")
        printable = text.isprintable() or text.replace("\t", "").isprintable()
    except UnicodeDecodeError:
        printable = False
    if printable:
        out = repr(text)
    else:
        out = "0x" + raw[: limit // 2].hex()
        cut = cut or len(raw) > limit // 2
    return out + ("..." if cut else "")


_TS_SHORT = {"CreateTime": "create", "LogAppendTime": "append", "NoTimestampType": "-"}
#: the entries listed as a table, by their event's type: its fields, in the order of the table's columns
#: (their headers)
_ENTRY_FIELDS = {
    "aborted_txn": ("producer_id", "first_offset", "last_offset", "last_stable_offset"),
    "checkpoint_entry": ("topic", "partition", "offset"),
    "leader_epoch_entry": ("epoch", "start_offset"),
}
_ENTRIES_OF = {
    FileKind.TXN_INDEX.value: "aborted_txn",
    FileKind.OFFSET_CHECKPOINT.value: "checkpoint_entry",
    FileKind.LEADER_EPOCH_CHECKPOINT.value: "leader_epoch_entry",
}
_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
_MAX_INFO_LINES = 10


class TextSink(Sink):
    """Aligned text for a terminal: a header and a summary line per file, one row per batch/entry."""

    # a batch's record lines written at once (formats.record_lines: exactly what _record prints for each,
    # printable ASCII, no style), one write a batch
    takes_record_lines = True

    def __init__(self, opts: DumpOptions) -> None:
        self.opts = opts
        # off a terminal the lines are plain and rich is imported only for what only rich lays out
        # (cli.plain); on one, its console decides the colours
        self.plain = is_plain_stream(sys.stdout)
        self.out = _Lines(sys.stdout, False) if self.plain else _Lines.of(self.console)
        self._reset()

    @functools.cached_property
    def console(self) -> Any:
        from logdoctor.cli.render import make_console

        return make_console()

    @functools.cached_property
    def err(self) -> Any:
        from logdoctor.cli.render import make_console

        return make_console(stderr=True)

    def _reset(self) -> None:
        self.table: Any = None
        self.rows: list[list[Any]] = []
        self.headers: list[str] = []
        self.title: str | None = None
        self.findings: list[Event] = []
        self.summary: Event | None = None

    def _print(self, text: str, style: str | None = None) -> None:
        self.out.write(text, style)

    def _file_header(self, ev: Event) -> None:
        kind = ev.get("kind")
        extra = [f"{ev['size']:,} bytes"] if "size" in ev else []
        if ev.get("base_offset") is not None and kind != FileKind.KRAFT_SNAPSHOT.value:
            extra.insert(0, f"base offset {ev['base_offset']}")
        if kind == FileKind.KRAFT_SNAPSHOT.value:
            extra.insert(
                0,
                "KRaft bootstrap snapshot"
                if ev.get("bootstrap")
                else f"snapshot end offset {ev.get('snapshot_end_offset')}, epoch {ev.get('snapshot_epoch')}",
            )
        if ev.get("decoder"):
            extra.append(f"decoder {ev['decoder']}")
        self._print(f"Dumping {ev['file']}  ({kind}; {', '.join(extra)})", "bold")
        w_off = max(6, len(str(ev.get("base_offset") or ev.get("snapshot_end_offset") or 0)) + 2)
        w_pos = max(8, len(str(ev.get("size", 0))))
        if kind in (FileKind.LOG.value, FileKind.KRAFT_SNAPSHOT.value):
            self.table = _Table(
                self.out,
                [
                    Column("position", w_pos),
                    Column("base_offset", max(11, w_off)),
                    Column("last_offset", max(11, w_off)),
                    Column("count", 5),
                    Column("magic", 5),
                    Column("codec", 6, right=False),
                    Column("crc", 4, right=False),
                    Column("ts", 6, right=False),
                    Column("max_timestamp", 24, right=False),
                    Column("producer", 12),
                    Column("epoch", 5),
                    Column("sequence", 13),
                    Column("leader", 6),
                    Column("flags", 9, right=False),
                ],
            )
        elif kind == FileKind.OFFSET_INDEX.value:
            self.table = _Table(
                self.out,
                [
                    Column("slot", 6),
                    Column("offset", max(8, w_off)),
                    Column("position", 10),
                ],
            )
        elif kind == FileKind.TIME_INDEX.value:
            self.table = _Table(
                self.out,
                [
                    Column("slot", 6),
                    Column("timestamp", 14),
                    Column("time", 24, right=False),
                    Column("offset", max(8, w_off)),
                ],
            )
        elif kind in _ENTRIES_OF:
            self.headers = list(_ENTRY_FIELDS[_ENTRIES_OF[kind]])
            if kind != FileKind.TXN_INDEX.value:  # a checkpoint's version and count
                self._print(
                    f"  version {ev.get('version')}, {ev.get('count')} entries"
                    + (" (empty file: no entries)" if ev.get("empty") else "")
                )
        elif kind == FileKind.PRODUCER_SNAPSHOT.value:
            self.headers = [
                "producer_id",
                "epoch",
                "first_seq",
                "last_seq",
                "last_offset",
                "offset_delta",
                "timestamp",
                "coordinator_epoch",
                "txn_first_offset",
            ]
            self._print(f"  version {ev.get('version')}, crc {ev.get('crc')}, {ev.get('entries')} producers")

    def _batch(self, ev: Event) -> None:
        txn = "txn" if not ev.get("transaction_result") else f"txn({ev['transaction_result']})"
        flags = "+".join(f for f, on in ((txn, ev["is_transactional"]), ("control", ev["is_control"])) if on)
        crc = "-" if ev["crc_valid"] is None else ("ok" if ev["crc_valid"] else "BAD")
        seq = "-" if ev["base_sequence"] < 0 else f"{ev['base_sequence']}..{ev['last_sequence']}"
        self.table.row(
            [
                ev["position"],
                ev["base_offset"],
                ev["last_offset"],
                ev["record_count"],
                ev["magic"],
                ev["compression"],
                crc,
                _TS_SHORT.get(ev["timestamp_type"], ev["timestamp_type"]),
                _iso(ev["max_timestamp"]),
                ev["producer_id"],
                ev["producer_epoch"],
                seq,
                ev["partition_leader_epoch"],
                flags or "-",
            ],
            style="red" if ev["crc_valid"] is False else None,
        )

    def _record(self, ev: Event) -> None:
        text_preview = _preview
        parts = [
            f"    | offset {ev['offset']}",
            f"{ev['timestamp_type']} {_iso(ev['timestamp'])}",
            f"key {ev['key_size']} B",
            f"value {ev['value_size']} B",
        ]
        if ev["sequence"] >= 0:
            parts.append(f"seq {ev['sequence']}")
        if ev.get("transaction_result"):
            parts.append(f"transaction {ev['transaction_result']}")
        if ev["headers"]:
            parts.append("headers [" + ", ".join(h["key"] for h in ev["headers"]) + "]")
        decoded = ev.get("decoded")
        if decoded is not None and decoded.get("type") == "control":
            v = decoded.get("value") or {}
            detail = _kafka_json(v) if v else ""  # as DumpLogSegments prints control records
            parts.append(f"control {decoded['control_type']}" + (f" {detail}" if detail else ""))
        if self.opts.print_data:
            if decoded is not None and decoded.get("type") != "control":
                parts.append("decoded " + compact_json(decoded))
            else:
                parts.append(f"key {text_preview(ev['key'])}")
                parts.append(f"value {text_preview(ev['value'])}")
            for h in ev["headers"]:
                parts.append(f"header {h['key']}={text_preview(h['value'])}")
        if ev.get("decode_error"):
            parts.append(f"decode error: {ev['decode_error']}")
        self._print("  ".join(parts), "red" if ev.get("decode_error") else None)

    def event(self, ev: Event) -> None:
        t = ev["type"]
        if t == "file":
            self._reset()
            self._file_header(ev)
        elif t == "batch":
            self._batch(ev)
        elif t == "record":
            self._record(ev)
        elif t == "record_lines":
            self.out.file.write(ev["text"])
        elif t == "index_entry":
            status = ev.get("status")
            tail = "" if status in (None, "ok") else status
            if ev["index"] == "offset":
                self.table.row(
                    [ev["slot"], ev["offset"], ev["position"]],
                    tail=tail,
                    style="red" if tail and tail != "append-chunk" else None,
                )
            else:
                self.table.row(
                    [ev["slot"], ev["timestamp"], _iso(ev["timestamp"]), ev["offset"]],
                    tail=tail,
                    style="red" if tail else None,
                )
        elif t in _ENTRY_FIELDS:
            self.rows.append([ev[k] for k in _ENTRY_FIELDS[t]])
        elif t == "producer_state":
            self.rows.append(
                [
                    ev["producer_id"],
                    ev["producer_epoch"],
                    ev["first_sequence"],
                    ev["last_sequence"],
                    ev["last_offset"],
                    ev["offset_delta"],
                    _iso(ev["timestamp"]),
                    ev["coordinator_epoch"],
                    ev["current_txn_first_offset"],
                ]
            )
        elif t == "finding":
            self.findings.append(ev)
        elif t == "summary":
            self.summary = ev
        else:  # single-object kinds: partition_metadata, meta_properties, quorum_state, clean_shutdown, lock
            self._print(f"Dumping {ev.get('file')}  ({t.replace('_', ' ')})", "bold")
            # absent fields (None) are left out, as Kafka's MetaProperties.toString and JSON converters do
            fields = {
                k: _field_text(v)
                for k, v in ev.items()
                if k not in ("type", "file", "properties") and v is not None
            }
            fields.update({f"[{k}]": _field_text(v) for k, v in (ev.get("properties") or {}).items()})
            lines = field_lines(fields, indent="  ") if self.plain else None
            if lines is None:
                from logdoctor.cli.render import print_fields

                print_fields(self.console, fields, indent="  ")
            else:
                for text in lines:
                    self._print(text)

    def _summary_line(self, s: Event) -> str:
        kind = s.get("kind")
        if kind in (FileKind.LOG.value, FileKind.KRAFT_SNAPSHOT.value):
            first = "?" if s["first_offset"] is None else s["first_offset"]
            offs = "" if s["last_offset"] is None else f", offsets {first}..{s['last_offset']}"
            text = (
                f"{s['batches']} batches, {s['records']} records{offs}, {s['valid_bytes']:,} valid bytes"
                f", {s['invalid_bytes']:,} invalid bytes"
            )
            if s.get("seek") != "start" or s.get("start_position"):
                text += f"; seek via {s['seek']} to position {s['start_position']}"
            text += f"; read {s['bytes_read']:,} of {s['size']:,} bytes"
        elif "zero_slots" in s:
            text = f"{s['entries']} entries" + (
                f" ({s['shown']} shown)" if s["shown"] != s["entries"] else ""
            )
            if s["zero_slots"]:
                text += f", {s['zero_slots']} zero slots after them (preallocated, not entries)"
        else:
            text = f"{s.get('entries', 0)} entries"
        n = len(self.findings)
        note = f"\n  note: {s['note']}" if s.get("note") else ""
        return f"  summary: {text}; {n} finding{'s' if n != 1 else ''}{note}"

    def end_file(self, ctx: FileContext) -> None:
        if self.rows:
            right = [not isinstance(c, str) for c in self.rows[0]]
            lines = table_lines(self.title, self.headers, self.rows, right) if self.plain else None
            if lines is None:
                from logdoctor.cli.render import print_table

                print_table(self.console, self.title, self.headers, self.rows, right=right)
            else:
                for text in lines:
                    self._print(text)
        infos = 0
        for f in self.findings:
            if f["severity"] == "info":
                infos += 1
                if infos > _MAX_INFO_LINES:
                    continue
            slot = f" slot {f['slot']}" if f.get("slot") is not None else ""
            self._print(
                f"  {f['severity'].upper():7} {f['code']}{slot}: {f['message']}",
                _SEVERITY_STYLE.get(f["severity"]),
            )
        if infos > _MAX_INFO_LINES:
            self._print(
                f"  ... and {infos - _MAX_INFO_LINES} more info findings (--json lists them all)", "dim"
            )
        if self.summary is not None:
            self._print(self._summary_line(self.summary), "bold")
        self._reset()

    def error(self, path: Path, failure: DumpFailure) -> None:
        from rich.text import Text

        self.out.file.flush()
        self.err.print(Text(f"error: {failure.line}", style="bold red"))
