"""Options of ``dump``: the decoder choice and the ``--offsets`` / ``--timestamps`` ranges."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from logdoctor.cli.timeparse import parse_epoch_ms


class DecoderChoice(enum.StrEnum):
    AUTO = "auto"
    NONE = "none"
    CONSUMER_OFFSETS = "consumer-offsets"
    TRANSACTIONS = "transactions"
    CLUSTER_METADATA = "cluster-metadata"
    SHARE_GROUP_STATE = "share-group-state"
    REMOTE_LOG_METADATA = "remote-log-metadata"
    SCHEMAS = "schemas"
    # a data topic's keys and values with the Schema Registry (cli.dump.typed)
    TYPED = "typed"


@dataclass(frozen=True, slots=True)
class Range:
    first: int | None
    last: int | None

    def contains(self, value: int) -> bool:
        return (self.first is None or value >= self.first) and (self.last is None or value <= self.last)


@dataclass(slots=True)
class DumpOptions:
    deep: bool = False
    print_data: bool = False
    max_bytes: int | None = None
    # --max-batches: at most this many batches per log from the seek position, read a window at a time
    max_batches: int | None = None
    offsets: Range | None = None
    timestamps: Range | None = None
    decoder: DecoderChoice = DecoderChoice.AUTO
    verify_index: bool = False
    verify_crc: bool = True
    # DumpLogSegments --verify-index-only: .index/.timeindex verified against their .log without
    # printing their entries (findings and the summary only); other files are dumped as usual
    verify_index_only: bool = False
    # --schemas: where the Schema Registry's _schemas partition is, for typed keys and values (cli.dump.typed)
    schemas: tuple[str, ...] = ()


def dump_options(
    *,
    deep: bool = False,
    print_data: bool = False,
    max_bytes: int | None = None,
    max_batches: int | None = None,
    offsets: str | None = None,
    timestamps: str | None = None,
    decoder: DecoderChoice = DecoderChoice.AUTO,
    verify_index: bool = False,
    verify_index_only: bool = False,
    no_crc: bool = False,
    schemas: tuple[str, ...] = (),
) -> DumpOptions:
    """The command line's options as :class:`DumpOptions`: ``--print-data`` and a named decoder imply
    ``--deep``, ``--verify-index-only`` implies ``--verify-index``. Raises :class:`UsageProblem`."""
    decoding = decoder not in (DecoderChoice.AUTO, DecoderChoice.NONE)
    return DumpOptions(
        deep=deep or print_data or decoding,
        print_data=print_data or decoding,
        max_bytes=max_bytes,
        max_batches=max_batches,
        offsets=parse_range(offsets, "offsets") if offsets is not None else None,
        timestamps=parse_range(timestamps, "timestamps", parse_time) if timestamps is not None else None,
        decoder=decoder,
        verify_index=verify_index or verify_index_only,
        verify_crc=not no_crc,
        verify_index_only=verify_index_only,
        schemas=tuple(schemas),
    )


class UsageProblem(Exception):
    """A bad option value: one line on stderr, exit 64."""


def parse_time(text: str) -> int:
    """A ``--timestamps`` bound: epoch ms or ISO-8601."""
    try:
        return parse_epoch_ms(text)
    except ValueError:
        raise UsageProblem(f"not a timestamp (epoch ms or ISO-8601): {text.strip()!r}") from None


def parse_range(text: str, what: str, parse: Callable[[str], int] = int) -> Range:
    """``A:B``, ``A:``, ``:B`` or ``A`` (just A) into an inclusive range."""
    try:
        if ":" not in text and what == "offsets":
            v = parse(text)
            return Range(v, v)
        sep = text.rfind(":") if what == "offsets" else _range_separator(text)
        if sep < 0:
            v = parse(text)
            return Range(v, None)
        a, b = text[:sep].strip(), text[sep + 1 :].strip()
        r = Range(parse(a) if a else None, parse(b) if b else None)
    except ValueError:
        raise UsageProblem(f"--{what}: expected A:B, A: or :B, got {text!r}") from None
    if r.first is not None and r.last is not None and r.first > r.last:
        raise UsageProblem(f"--{what}: the range {text!r} is empty (start above end)")
    if what == "offsets" and r.first is not None and r.first < 0:
        raise UsageProblem(f"--offsets: negative offset in {text!r}")
    return r


def _range_separator(text: str) -> int:
    """The ``:`` separating two timestamps (ISO-8601 times contain colons of their own)."""
    if text.startswith(":"):
        return 0
    if text.endswith(":"):
        return len(text) - 1
    for i, ch in enumerate(text):
        if ch == ":":
            left = text[:i]
            if left.lstrip("-").isdigit() or (("T" in left or " " in left) and left.count(":") >= 2):
                return i
            if "T" not in left and " " not in left and len(left) == 10:  # a bare date
                return i
    return -1
