"""Variable-length integers of the v2 record format (K:clients/.../common/utils/ByteUtils.java).

* varint: a zigzag-encoded int32 in at most 5 bytes; varlong: a zigzag int64 in at most 10 bytes;
* unsigned varint: an uint32 in at most 5 bytes (the compact lengths of flexible message versions).

Readers follow ByteUtils exactly: the 5th byte of a varint (10th of a varlong) must not have its
high bit set ("Varint is too long"), and bits beyond 32 (64) are dropped, as Java's shifts do.
Every reader takes a buffer and a position and returns ``(value, next_position)``; a buffer that
ends inside a varint raises TruncatedError, an overlong one CorruptRecordError, both at the
varint's start (plus ``base_position``, the file position of ``buf[0]``).
"""

from __future__ import annotations

from logdoctor.errors import CorruptRecordError, TruncatedError

Buffer = bytes | bytearray | memoryview

MAX_VARINT_SIZE = 5
MAX_VARLONG_SIZE = 10
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def zigzag_encode32(value: int) -> int:
    """int32 -> uint32 zigzag (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...)."""
    if not -(1 << 31) <= value < (1 << 31):
        raise OverflowError(f"{value} does not fit in an int32 varint")
    return ((value << 1) ^ (value >> 31)) & _MASK32


def zigzag_encode64(value: int) -> int:
    if not -(1 << 63) <= value < (1 << 63):
        raise OverflowError(f"{value} does not fit in an int64 varlong")
    return ((value << 1) ^ (value >> 63)) & _MASK64


def zigzag_decode(raw: int) -> int:
    """Unsigned zigzag value -> signed value (any width)."""
    return (raw >> 1) ^ -(raw & 1)


def _read_unsigned(
    buf: Buffer, pos: int, max_size: int, mask: int, what: str, source: str | None, base_position: int
) -> tuple[int, int]:
    start = pos
    end = len(buf)
    value = 0
    shift = 0
    for i in range(max_size):
        if pos >= end:
            raise TruncatedError(
                f"a complete {what}", source=source, position=base_position + start, found="end of data"
            )
        b = buf[pos]
        pos += 1
        if b & 0x80:
            if i == max_size - 1:
                raise CorruptRecordError(
                    f"a {what} of at most {max_size} bytes",
                    source=source,
                    position=base_position + start,
                    found=f"high bit set in byte {max_size}",
                )
            value |= (b & 0x7F) << shift
            shift += 7
        else:
            return (value | (b << shift)) & mask, pos
    raise AssertionError("unreachable")  # pragma: no cover


def read_unsigned_varint(
    buf: Buffer, pos: int, *, source: str | None = None, base_position: int = 0
) -> tuple[int, int]:
    """Read an unsigned varint (uint32, at most 5 bytes)."""
    return _read_unsigned(buf, pos, MAX_VARINT_SIZE, _MASK32, "unsigned varint", source, base_position)


def read_varint(
    buf: Buffer, pos: int, *, source: str | None = None, base_position: int = 0
) -> tuple[int, int]:
    """Read a zigzag varint (int32, at most 5 bytes)."""
    raw, pos = _read_unsigned(buf, pos, MAX_VARINT_SIZE, _MASK32, "varint", source, base_position)
    return zigzag_decode(raw), pos


def read_varlong(
    buf: Buffer, pos: int, *, source: str | None = None, base_position: int = 0
) -> tuple[int, int]:
    """Read a zigzag varlong (int64, at most 10 bytes)."""
    raw, pos = _read_unsigned(buf, pos, MAX_VARLONG_SIZE, _MASK64, "varlong", source, base_position)
    return zigzag_decode(raw), pos


def encode_unsigned_varint(value: int) -> bytes:
    """Encode an uint32 (0 <= value < 2**32) as an unsigned varint."""
    if not 0 <= value <= _MASK32:
        raise OverflowError(f"{value} does not fit in an unsigned varint")
    return _encode_unsigned(value)


def _encode_unsigned(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Encode an int32 as a zigzag varint."""
    return _encode_unsigned(zigzag_encode32(value))


def encode_varlong(value: int) -> bytes:
    """Encode an int64 as a zigzag varlong."""
    return _encode_unsigned(zigzag_encode64(value))


def size_of_unsigned_varint(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def size_of_varint(value: int) -> int:
    return size_of_unsigned_varint(zigzag_encode32(value))


def size_of_varlong(value: int) -> int:
    return size_of_unsigned_varint(zigzag_encode64(value))
