"""Bytes read by range as they are used: the buffer of a record batch larger than any window.

:class:`RangedBytes` stands for ``length`` bytes that ``read(position, length)`` gives from ``start`` on (a
remote segment's original bytes). Slicing it reads that slice; nothing is held. A batch over it
(:meth:`logdoctor.formats.batch_v2.RecordBatchV2.parse_ranged`) checks its CRC and decodes its records a
window at a time, so that a valid batch of 1 GiB is never in memory whole (issue 57 item 6)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from logdoctor.formats.crc import Buffer

#: bytes read at a time by :meth:`RangedBytes.windows`
WINDOW = 8 << 20


class RangedBytes:
    """``length`` bytes from ``start`` of what ``read(position, length)`` gives."""

    __slots__ = ("length", "read", "start")

    def __init__(self, read: Callable[[int, int], Buffer], start: int, length: int) -> None:
        self.read = read
        self.start = start
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, key: slice | int) -> bytes | int:
        if isinstance(key, int):
            at = key + self.length if key < 0 else key
            if not 0 <= at < self.length:
                raise IndexError(key)
            return bytes(self.read(self.start + at, 1))[0]
        lo, hi, step = key.indices(self.length)
        if step != 1:
            raise ValueError("RangedBytes: a slice with a step")
        return bytes(self.read(self.start + lo, hi - lo)) if hi > lo else b""

    def windows(self, lo: int, hi: int, size: int = WINDOW) -> Iterator[bytes]:
        """Bytes ``lo``-``hi`` as pieces of ``size`` bytes (the last shorter)."""
        for at in range(lo, hi, size):
            yield bytes(self.read(self.start + at, min(hi, at + size) - at))
