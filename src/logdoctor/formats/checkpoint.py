"""Offset checkpoints and the leader-epoch checkpoint (Kafka's CheckpointFile text format).

K: server-common/src/main/java/org/apache/kafka/server/common/CheckpointFile.java,
storage/.../checkpoint/OffsetCheckpointFile.java, LeaderEpochCheckpointFile.java.

Layout: line 1 the version (``0``), line 2 the entry count, then one entry per line; every line,
the last included, ends with a newline (CheckpointWriteBuffer: ``writer.newLine()`` after each
line, ``\\n`` on Linux), so an empty checkpoint is ``0\\n0\\n``. Entries are ``topic partition
offset`` (recovery-point-offset-checkpoint, replication-offset-checkpoint,
log-start-offset-checkpoint, cleaner-offset-checkpoint) or ``epoch startOffset``
(leader-epoch-checkpoint), fields split on ``\\s+``.

How the broker reads it (CheckpointReadBuffer.read): an empty file, or a file with only the
version line, gives no entries; a version other than 0 fails ("Unrecognised version"); a line
that does not split into the right number of fields fails ("Malformed line in checkpoint file");
a count line that differs from the number of entries fails ("Expected [n] entries"). The strict
parsers raise a typed error with that message; :func:`scan_offset_checkpoint` and
:func:`scan_leader_epoch_checkpoint` never raise on bad content and return the readable entries
with every problem (a stale count line, a malformed line) so a scan can report them.

Writers produce what Kafka writes (entry order kept): parsing then writing a file the broker wrote
gives the same bytes. Hand-edited spacing or CRLF line ends are normalised.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from logdoctor.errors import FormatError, UnsupportedError

CHECKPOINT_VERSION = 0
_INT_RE = re.compile(r"[+-]?[0-9]+")
# Java's \s: [ \t\n\x0B\f\r] (Python's \s would also match Unicode spaces).
_JAVA_WS = re.compile(r"[ \t\n\x0b\f\r]+")
_LINE_END = re.compile(rb"\r\n|\r|\n")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True, slots=True)
class TextLine:
    """One line of a text file: 1-based number, byte offset of its start, text without the line end."""

    number: int
    position: int
    text: str


def split_lines(data: bytes | memoryview, *, source: str | None = None) -> list[TextLine]:
    """Split like Java's BufferedReader.readLine (``\\n``, ``\\r`` or ``\\r\\n``), decoding UTF-8.

    A final line without a line end is still a line; an empty file has no lines. Bytes that are not
    UTF-8 raise FormatError at the line's position.
    """
    raw = bytes(data)
    lines: list[TextLine] = []
    start = 0
    number = 1
    for m in _LINE_END.finditer(raw):
        lines.append(_decode_line(raw[start : m.start()], number, start, source))
        start = m.end()
        number += 1
    if start < len(raw):
        lines.append(_decode_line(raw[start:], number, start, source))
    return lines


def line_positions(data: bytes | memoryview) -> list[int]:
    """The byte position of each line's start: ``[ln.position for ln in split_lines(data)]`` without a
    :class:`TextLine` per line (a broker's checkpoints have one line per partition). Bytes that are not
    UTF-8 raise FormatError as :func:`split_lines` does."""
    raw = bytes(data)
    if b"\r" in raw:
        return [ln.position for ln in split_lines(raw)]
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        split_lines(raw)  # raises FormatError at the bad line's position
        raise
    pieces = raw.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()  # the line end of the last line, not a line
    out = [0] * len(pieces)
    pos = 0
    for i, piece in enumerate(pieces):
        out[i] = pos
        pos += len(piece) + 1
    return out


def _decode_line(chunk: bytes, number: int, position: int, source: str | None) -> TextLine:
    try:
        return TextLine(number, position, chunk.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"UTF-8 text on line {number}",
            source=source,
            position=position + exc.start,
            found=f"byte {chunk[exc.start]:#04x}",
        ) from None


def parse_java_int(text: str, lo: int = INT32_MIN, hi: int = INT32_MAX) -> int | None:
    """Integer.parseInt / Long.parseLong: optional sign, ASCII digits, in range; None otherwise."""
    if not _INT_RE.fullmatch(text):
        return None
    if len(text.lstrip("+-").lstrip("0")) > 19:  # out of any long's range (and past Python's 4,300-digit
        return None  # limit on int(str), which would raise ValueError on a fuzzed file)
    value = int(text)
    return value if lo <= value <= hi else None


def java_split(line: str) -> list[str]:
    """``Pattern.compile("\\\\s+").split(line)``: leading empty field kept, trailing ones dropped."""
    parts = _JAVA_WS.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts if parts else [""]


@dataclass(frozen=True, slots=True)
class CheckpointProblem:
    """Something the broker would reject: ``message`` is the broker's own wording, ``expected`` ours.

    ``line`` is 1-based, ``position`` the byte offset of that line.
    """

    message: str
    line: int | None
    position: int | None
    expected: str = "a valid checkpoint"


@dataclass(slots=True)
class OffsetCheckpoint:
    """An offset checkpoint file: ``entries`` are (topic, partition, offset) in file order.

    ``version`` is None for an empty file (no version line). ``count`` is None when the count
    line matches the entries (the writer writes ``len(entries)``), else the stale value as written.
    ``count_line`` is False for a torn file that has only the version line.
    """

    version: int | None
    entries: list[tuple[str, int, int]]
    count: int | None = None
    count_line: bool = True

    def offsets(self) -> dict[tuple[str, int], int]:
        """topic-partition -> offset (a later duplicate wins, as in the broker's HashMap)."""
        return {(t, p): o for t, p, o in self.entries}


class EpochEntry(NamedTuple):
    """A leader-epoch-checkpoint entry: where a leader epoch starts (K:storage/.../log/EpochEntry.java)."""

    epoch: int
    start_offset: int


def loaded_epochs(entries: Iterable[tuple[int, int]]) -> list[EpochEntry]:
    """The cache a broker loads from a leader-epoch-checkpoint's ``entries``: K:storage/.../epoch/
    LeaderEpochFileCache.java assigns each in file order; one of the latest epoch starting no earlier changes
    nothing (``isUpdateNeeded``), any other first drops the newest entries of its epoch or above or starting
    at or after it (``maybeTruncateNonMonotonicEntries``). A negative field (the broker refuses the file)
    is left out."""
    cache: list[EpochEntry] = []
    for epoch, start in entries:
        if epoch < 0 or start < 0 or (cache and cache[-1].epoch == epoch and start >= cache[-1].start_offset):
            continue
        while cache and (cache[-1].epoch >= epoch or cache[-1].start_offset >= start):
            cache.pop()
        cache.append(EpochEntry(epoch, start))
    return cache


def latest_epoch(entries: Sequence[tuple[int, int]]) -> int | None:
    """A replica's latest leader epoch, LeaderEpochFileCache.latestEpoch once the broker loads ``entries``
    (:func:`loaded_epochs` keeps the last and drops the entries of its epoch or above): the last entry's
    epoch, not the largest; None without entries. (spark.census_sql ``_latest_epoch`` in SQL)."""
    return entries[-1][0] if entries else None


@dataclass(slots=True)
class LeaderEpochCheckpoint:
    """A leader-epoch-checkpoint: ``entries`` are (epoch, start offset) in file order."""

    version: int | None
    entries: list[EpochEntry]
    count: int | None = None
    count_line: bool = True


@dataclass(slots=True)
class CheckpointScan:
    """What a lenient read found: the parsed file (readable entries only) and every problem."""

    checkpoint: OffsetCheckpoint | LeaderEpochCheckpoint
    problems: list[CheckpointProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _parse_offset_entry(line: str) -> tuple[str, int, int] | None:
    """topic partition offset"""
    parts = java_split(line)
    if len(parts) != 3:
        return None
    partition = parse_java_int(parts[1])
    offset = parse_java_int(parts[2], INT64_MIN, INT64_MAX)
    if partition is None or offset is None:
        return None
    return parts[0], partition, offset


def _parse_epoch_entry(line: str) -> EpochEntry | None:
    """epoch startOffset"""
    parts = java_split(line)
    if len(parts) != 2:
        return None
    epoch = parse_java_int(parts[0])
    start = parse_java_int(parts[1], INT64_MIN, INT64_MAX)
    if epoch is None or start is None:
        return None
    return EpochEntry(epoch, start)


def _scan(data: bytes | memoryview, entry_parser, source: str | None):
    name = source or "<buffer>"
    problems: list[CheckpointProblem] = []

    def malformed(line: TextLine, expected: str) -> None:
        message = f"Malformed line in checkpoint file [{name}]: {line.text}"
        problems.append(CheckpointProblem(message, line.number, line.position, expected))

    lines = split_lines(data, source=source)
    entries: list = []
    if not lines:
        return None, None, entries, problems, False
    version = parse_java_int(lines[0].text)
    if version is None:
        malformed(lines[0], "a version number")
        return None, None, entries, problems, False
    if version != CHECKPOINT_VERSION:
        problems.append(
            CheckpointProblem(
                f"Unrecognised version:{version}, expected version: {CHECKPOINT_VERSION} "
                f"in checkpoint file at: {name}",
                1,
                0,
                f"version {CHECKPOINT_VERSION}",
            )
        )
        return version, None, entries, problems, False
    if len(lines) < 2:
        return version, None, entries, problems, False
    count = parse_java_int(lines[1].text)
    if count is None:
        malformed(lines[1], "an entry count")
        return version, None, entries, problems, True
    for line in lines[2:]:
        entry = entry_parser(line.text)
        if entry is None:
            malformed(line, f"'{entry_parser.__doc__}' on line {line.number}")
        else:
            entries.append(entry)
    # Kafka stops at the first malformed line; a lenient scan also compares the count line with the
    # number of entry lines, so that a stale count is reported next to a malformed line.
    found = len(lines) - 2
    if found != count:
        problems.append(
            CheckpointProblem(
                f"Expected [{count}] entries in checkpoint file [{name}], but found only [{found}]",
                2,
                lines[1].position,
                f"a count line ({count}) matching the {found} entry lines",
            )
        )
    return version, (None if count == len(entries) else count), entries, problems, True


def _raise_first(problems: list[CheckpointProblem], source: str | None) -> None:
    if problems:
        p = problems[0]
        kind = UnsupportedError if p.message.startswith("Unrecognised version") else FormatError
        error = kind(p.expected, source=source, position=p.position, found=f"line {p.line}: {p.message}")
        error.kafka_message = p.message  # type: ignore[attr-defined]
        raise error


# An entry line as the broker writes it: topic (printable ASCII, no whitespace), partition and offset in
# plain decimal digits short enough for an int and a long (OffsetCheckpointFile.Formatter).
_WRITTEN_ENTRIES = re.compile(r"(?:[!-~]+ [0-9]{1,9} [0-9]{1,18}\n)*")
_WRITTEN_ENTRY = re.compile(r"([!-~]+) ([0-9]+) ([0-9]+)\n")


def _as_written(raw: bytes) -> list[tuple[str, int, int]] | None:
    """The entries of an offset checkpoint exactly as a broker writes one (version 0, a count line that
    matches, ``\n`` line ends, ASCII entries of three fields split by one space), else None: then the
    general line-by-line reading (:func:`_scan`) decides, with its problems. Both give the same entries
    for such a file; this one is ~5x faster on the 50,000 lines of a big broker's checkpoint."""
    if not raw.startswith(b"0\n") or not raw.isascii() or b"\r" in raw:
        return None
    text = raw.decode("ascii")
    end = text.find("\n", 2)
    count = text[2:end]
    if end < 0 or not count.isdigit() or len(count) > 9:
        return None
    body = text[end + 1 :]
    if _WRITTEN_ENTRIES.fullmatch(body) is None:
        return None
    entries = [(t, int(p), int(o)) for t, p, o in _WRITTEN_ENTRY.findall(body)]
    return entries if len(entries) == int(count) else None


def scan_offset_checkpoint(data: bytes | memoryview, *, source: str | None = None) -> CheckpointScan:
    """Lenient read: every readable entry plus every problem; never raises on bad content.

    Malformed lines are skipped (and reported); a count line that differs from the entries read
    is reported with Kafka's "Expected [n] entries" message. Not UTF-8 still raises FormatError.
    """
    written = _as_written(bytes(data))
    if written is not None:
        return CheckpointScan(OffsetCheckpoint(CHECKPOINT_VERSION, written, None, True), [])
    version, count, entries, problems, count_line = _scan(data, _parse_offset_entry, source)
    return CheckpointScan(OffsetCheckpoint(version, entries, count, count_line), problems)


def parse_offset_checkpoint(data: bytes | memoryview, *, source: str | None = None) -> OffsetCheckpoint:
    """Strict read, as the broker: the first problem raises FormatError (UnsupportedError for a version)."""
    scan = scan_offset_checkpoint(data, source=source)
    _raise_first(scan.problems, source)
    assert isinstance(scan.checkpoint, OffsetCheckpoint)
    return scan.checkpoint


def scan_leader_epoch_checkpoint(data: bytes | memoryview, *, source: str | None = None) -> CheckpointScan:
    """Lenient read of a leader-epoch-checkpoint (see :func:`scan_offset_checkpoint`)."""
    version, count, entries, problems, count_line = _scan(data, _parse_epoch_entry, source)
    return CheckpointScan(LeaderEpochCheckpoint(version, entries, count, count_line), problems)


def parse_leader_epoch_checkpoint(
    data: bytes | memoryview, *, source: str | None = None
) -> LeaderEpochCheckpoint:
    """Strict read of a leader-epoch-checkpoint."""
    scan = scan_leader_epoch_checkpoint(data, source=source)
    _raise_first(scan.problems, source)
    assert isinstance(scan.checkpoint, LeaderEpochCheckpoint)
    return scan.checkpoint


def _write(version: int | None, count: int | None, count_line: bool, lines: list[str]) -> bytes:
    if version is None or not count_line:
        if lines:
            raise ValueError("a checkpoint with entries needs a version and a count line")
        return b"" if version is None else f"{version}\n".encode()
    out = [str(version), str(len(lines) if count is None else count), *lines]
    return "".join(f"{line}\n" for line in out).encode("utf-8")


def write_offset_checkpoint(checkpoint: OffsetCheckpoint) -> bytes:
    """Kafka's bytes for ``checkpoint`` (``version``/``count`` None: an empty file / ``len(entries)``)."""
    for topic, _, _ in checkpoint.entries:
        if not topic or _JAVA_WS.search(topic):
            raise ValueError(f"topic {topic!r} cannot be written to a checkpoint")
    lines = [f"{t} {p} {o}" for t, p, o in checkpoint.entries]
    return _write(checkpoint.version, checkpoint.count, checkpoint.count_line, lines)


def write_leader_epoch_checkpoint(checkpoint: LeaderEpochCheckpoint) -> bytes:
    """Kafka's bytes for a leader-epoch-checkpoint."""
    lines = [f"{e} {s}" for e, s in checkpoint.entries]
    return _write(checkpoint.version, checkpoint.count, checkpoint.count_line, lines)


def new_offset_checkpoint(entries: list[tuple[str, int, int]]) -> OffsetCheckpoint:
    """A version-0 checkpoint whose count line matches its entries."""
    return OffsetCheckpoint(CHECKPOINT_VERSION, list(entries), None)


def new_leader_epoch_checkpoint(entries: list[tuple[int, int]]) -> LeaderEpochCheckpoint:
    return LeaderEpochCheckpoint(CHECKPOINT_VERSION, list(entries), None)


__all__ = [
    "CHECKPOINT_VERSION",
    "CheckpointProblem",
    "CheckpointScan",
    "EpochEntry",
    "LeaderEpochCheckpoint",
    "OffsetCheckpoint",
    "TextLine",
    "latest_epoch",
    "line_positions",
    "loaded_epochs",
    "new_leader_epoch_checkpoint",
    "new_offset_checkpoint",
    "parse_leader_epoch_checkpoint",
    "parse_offset_checkpoint",
    "scan_leader_epoch_checkpoint",
    "scan_offset_checkpoint",
    "split_lines",
    "write_leader_epoch_checkpoint",
    "write_offset_checkpoint",
]
