"""Avro binary payloads of one writer schema decoded column by column into Arrow, with numpy.

The payloads are laid end to end in one buffer; each has a cursor (its position and its end). A record's
fields are decoded in schema order, each for every payload at once (one numpy pass per field, not one
Python call per value); an array's or a map's items one item index at a time for the payloads that still
have items. So each payload is still read strictly in order, as a sequential decoder reads it, and the
first error in a payload is the one kept: reading past its end is :data:`TRUNCATED`; anything else that
does not decode with the schema is :data:`MISMATCH` (an enum or union index out of range, a negative
length, a varint longer than Java's ``BinaryDecoder`` reads (5 bytes for an int, 10 for a long), a boolean
byte other than 0 or 1, a string that is not UTF-8, a decimal beyond its precision, a time of day out of
range, a timestamp-millis beyond int64 microseconds, a collection over Java's limit); a payload with bytes
left over after the value is :data:`MISMATCH` too (:func:`decode_column`).

Logical types are converted on whole columns: timestamp-millis x 1000 to microseconds, date's ints as
date32, decimal's big-endian two's-complement bytes sign-extended into decimal128/256 little-endian words.
Where a record recurses into itself, the value is read by :mod:`.avro_values`' sequential reader (the
same rules) and held as a JSON string.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from logdoctor.formats.registry.avro_schema import Node
from logdoctor.formats.registry.avro_values import (
    BATCH_ZERO_SIZE_ITEMS,
    I64_MAX_MS,
    MAX_ITEMS,
    MAX_ZERO_SIZE_ITEMS,
    MISMATCH,
    MS_OF_DAY,
    OK,
    TRUNCATED,
    US_OF_DAY,
    DecodeError,
    json_text,
    read_items_rest,
)
from logdoctor.formats.registry.results import Payloads

_PAD = 16  # zero bytes after the buffer: a read a few bytes past a payload's end stays in bounds
#: an array or map whose items are still being read for this few payloads (the others done) is read on a
#: payload at a time (:func:`.avro_values.read_items_rest`): one large array in a batch costs one Python
#: step per item, not a column pass per item (issue 75: 500,000 items in one record took 263 s and 2.3 GB)
FEW_ROWS = 4


class Cursor:
    """The payloads end to end (``data``, padded) with each payload's position, end and error code."""

    def __init__(self, payloads: Sequence[bytes | memoryview]) -> None:
        n = len(payloads)
        if isinstance(payloads, Payloads):  # spans of one buffer: the bytes they cover, copied once
            lo = int(payloads.starts.min()) if n else 0
            hi = int(payloads.ends.max()) if n else 0
            self.raw = bytes(memoryview(payloads.data)[lo:hi]) + bytes(_PAD)
            self.pos = payloads.starts - lo
            self.end = payloads.ends - lo
        else:
            lens = np.fromiter(map(len, payloads), np.int64, n)
            self.raw = b"".join([*payloads, bytes(_PAD)])  # slices of it stop at a payload's end
            self.end = np.cumsum(lens)
            self.pos = self.end - lens
        self.data = np.frombuffer(self.raw, np.uint8)
        self.err = np.zeros(n, np.int8)
        #: the items that take no bytes this batch may still hold (:data:`BATCH_ZERO_SIZE_ITEMS`)
        self.zero_budget = BATCH_ZERO_SIZE_ITEMS

    def fail(self, rows: np.ndarray, code: int) -> None:
        """Mark ``rows`` with ``code`` where they have no error yet (a payload keeps its first error)."""
        if rows.size:
            rows = rows[self.err[rows] == OK]
            self.err[rows] = code

    def live(self, rows: np.ndarray) -> np.ndarray:
        return self.err[rows] == OK


def decode_column(root: Node, payloads: Sequence[bytes | memoryview]) -> tuple[pa.Array, np.ndarray]:
    """(values of ``root.arrow``, one per payload, null where it did not decode; error codes)."""
    cur = Cursor(payloads)
    n = len(payloads)
    values = decode(root, cur, np.arange(n, dtype=np.int64))
    cur.fail(np.flatnonzero(cur.pos != cur.end), MISMATCH)  # bytes left over after the value
    bad = cur.err != OK
    if bad.any():
        values = values.take(_arrow(np.arange(n, dtype=np.int64), pa.int64(), valid=~bad))
    return values, cur.err


def decode(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    """The values of ``node`` at the cursors of ``rows`` (one per row), the cursors moved past them. A row
    with an error has some value of the right type there (the caller nulls it)."""
    return _DECODERS[node.kind](node, cur, rows)


# -- varints -------------------------------------------------------------------------------------------


def _varint(cur: Cursor, rows: np.ndarray, max_bytes: int) -> np.ndarray:
    """The raw (zig-zag) varints at ``rows`` as uint64: more than ``max_bytes`` bytes is a mismatch, one
    that runs past the payload's end truncated (whichever a sequential reader meets first). The bytes are
    read unchecked (at most ``max_bytes`` past a position, within the padding) and the end checked once."""
    pos = cur.pos[rows]
    b = cur.data[pos]
    out = (b & 0x7F).astype(np.uint64)
    q = pos + 1
    more = np.flatnonzero(b >= 0x80)
    shift = 7
    while more.size:
        if shift == 7 * max_bytes:
            overlong = np.zeros(rows.size, bool)
            overlong[more] = True
            break
        at = q[more]
        b = cur.data[at]
        out[more] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        q[more] = at + 1
        more = more[b >= 0x80]
        shift += 7
    else:
        overlong = None
    end = cur.end[rows]
    if overlong is None:
        short = q > end
    else:  # the byte after the last one Java reads is past the end: truncated first
        short = (q > end) | (overlong & (pos + max_bytes > end))
        cur.fail(rows[overlong & ~short], MISMATCH)
    if short.any():
        cur.fail(rows[short], TRUNCATED)
    cur.pos[rows] = np.where(cur.live(rows), q, pos)
    return out


def _long(cur: Cursor, rows: np.ndarray) -> np.ndarray:
    raw = _varint(cur, rows, 10)
    return ((raw >> np.uint64(1)) ^ (np.uint64(0) - (raw & np.uint64(1)))).view(np.int64)


def _int(cur: Cursor, rows: np.ndarray) -> np.ndarray:
    """An int as Java's ``BinaryDecoder.readInt`` reads it: at most 5 bytes, the low 32 bits kept."""
    raw = _varint(cur, rows, 5) & np.uint64(0xFFFFFFFF)
    return (
        (((raw >> np.uint64(1)) ^ (np.uint64(0) - (raw & np.uint64(1)))) & np.uint64(0xFFFFFFFF))
        .astype(np.uint32)
        .view(np.int32)
    )


# -- fixed-size and length-prefixed bytes ----------------------------------------------------------------


def _advance(cur: Cursor, rows: np.ndarray, sizes: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """Take ``sizes`` bytes at each row: (starts, taken lengths: 0 where the row failed or had failed)."""
    pos = cur.pos[rows]
    live = cur.live(rows)
    sizes = np.broadcast_to(np.asarray(sizes, np.int64), rows.shape)
    short = live & (sizes > cur.end[rows] - pos)
    cur.fail(rows[short], TRUNCATED)
    lens = np.where(live & ~short, sizes, 0)
    cur.pos[rows] = pos + lens
    return pos, lens


def _length_prefixed(cur: Cursor, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = _long(cur, rows)
    negative = cur.live(rows) & (n < 0)
    cur.fail(rows[negative], MISMATCH)  # Java: "Malformed data. Length is negative"
    return _advance(cur, rows, np.maximum(n, 0))


def _binary_array(cur: Cursor, starts: np.ndarray, lens: np.ndarray, type_: pa.DataType) -> pa.Array:
    n = lens.size
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    total = int(offsets[-1])
    if total:
        values = cur.data[np.repeat(starts - offsets[:-1], lens) + np.arange(total, dtype=np.int64)]
    else:
        values = np.zeros(0, np.uint8)
    if total < 2**31:
        return pa.Array.from_buffers(
            type_, n, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(values)]
        )
    large = pa.large_string() if type_ == pa.string() else pa.large_binary()
    return pa.Array.from_buffers(large, n, [None, pa.py_buffer(offsets), pa.py_buffer(values)]).cast(type_)


def _utf8_array(cur: Cursor, rows: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> pa.Array:
    """Strings; one that is not UTF-8 is a mismatch (as Python's avro and fastavro decode it strictly)."""
    arr = _binary_array(cur, starts, lens, pa.string())
    if _valid(arr):
        return arr
    lens = lens.copy()
    for i in np.flatnonzero(lens):
        try:
            cur.raw[starts[i] : starts[i] + lens[i]].decode()
        except UnicodeDecodeError:
            cur.fail(rows[i : i + 1], MISMATCH)
            lens[i] = 0
    return _binary_array(cur, starts, lens, pa.string())


def _valid(arr: pa.Array) -> bool:
    """Whether Arrow's full validation passes (every string UTF-8, every decimal within its precision)."""
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


# -- one function per kind --------------------------------------------------------------------------------


def _null(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    return pa.nulls(rows.size)


def _boolean(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    starts, lens = _advance(cur, rows, 1)
    b = cur.data[starts]
    bad = (lens == 1) & (b > 1)
    cur.fail(rows[bad], MISMATCH)
    return _arrow(b == 1, pa.bool_())


def _arrow(values: np.ndarray, type_: pa.DataType, valid: np.ndarray | None = None) -> pa.Array:
    """A numpy array of fixed-width values (or bools) as an Arrow array of ``type_`` (null where ``valid``
    is False), from its buffers (``pa.array`` on a numpy array costs far more for small ones)."""
    n = values.size
    if type_ == pa.bool_():
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(values))
    if valid is None or valid.all():
        return pa.Array.from_buffers(type_, n, [None, data])
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(type_, n, [bitmap, data], null_count=int(n - np.count_nonzero(valid)))


def _int_kind(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    v = _int(cur, rows)
    if node.logical == "time-millis":
        out = cur.live(rows) & ((v < 0) | (v >= MS_OF_DAY))
        cur.fail(rows[out], MISMATCH)
        v = np.where(out, 0, v).astype(np.int32)
    return _arrow(v, node.arrow)


def _long_kind(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    v = _long(cur, rows)
    if node.logical in ("timestamp-millis", "local-timestamp-millis"):
        out = cur.live(rows) & (np.abs(v) > I64_MAX_MS)  # not a timestamp in microseconds
        cur.fail(rows[out], MISMATCH)
        v = np.where(out, 0, v) * 1000
    elif node.logical == "time-micros":
        out = cur.live(rows) & ((v < 0) | (v >= US_OF_DAY))
        cur.fail(rows[out], MISMATCH)
        v = np.where(out, 0, v)
    return _arrow(v, node.arrow)


def _ieee(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    """A float or a double: 4 or 8 bytes, little-endian."""
    size = 4 if node.kind == "float" else 8
    starts, _ = _advance(cur, rows, size)
    block = cur.data[starts[:, None] + np.arange(size)]
    return _arrow(block.view(f"<f{size}").reshape(rows.size), node.arrow)


def _bytes(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    starts, lens = _length_prefixed(cur, rows)
    if node.logical == "decimal":
        return _decimal(node, cur, rows, starts, lens)
    return _binary_array(cur, starts, lens, pa.binary())


def _string(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    starts, lens = _length_prefixed(cur, rows)
    return _utf8_array(cur, rows, starts, lens)


def _fixed(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    starts, lens = _advance(cur, rows, node.size)
    if node.logical == "decimal":
        return _decimal(node, cur, rows, starts, lens)
    if node.logical == "uuid":
        return pa.array(
            [
                str(uuid.UUID(bytes=cur.raw[s : s + 16])) if n else ""
                for s, n in zip(starts, lens, strict=True)
            ],
            pa.string(),
        )
    return _binary_array(cur, starts, lens, pa.binary())


def _decimal(node: Node, cur: Cursor, rows: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> pa.Array:
    """Big-endian two's-complement unscaled values (any length) into decimal128/256 words: each value
    sign-extended to the word's width, the bytes reversed; a value beyond the precision is a mismatch."""
    width = 16 if node.precision <= 38 else 32
    n = rows.size
    starts, lens = starts.copy(), lens.copy()
    for i in np.flatnonzero(lens > width):  # wider than the word: fits only if the top is sign extension
        value = int.from_bytes(cur.raw[starts[i] : starts[i] + lens[i]], "big", signed=True)
        if -(2 ** (8 * width - 1)) <= value < 2 ** (8 * width - 1):
            starts[i] += lens[i] - width
            lens[i] = width
        else:
            cur.fail(rows[i : i + 1], MISMATCH)
            lens[i] = 0
    words = np.zeros((n, width), np.uint8)
    words[(lens > 0) & (cur.data[starts] >= 0x80)] = 0xFF
    total = int(lens.sum())
    if total:
        at = np.repeat(np.arange(n), lens)
        j = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
        words[at, width - lens[at] + j] = cur.data[np.repeat(starts, lens) + j]
    arr = pa.Array.from_buffers(node.arrow, n, [None, pa.py_buffer(np.ascontiguousarray(words[:, ::-1]))])
    if _valid(arr):
        return arr
    limit = 10**node.precision
    for i in np.flatnonzero(lens):
        if abs(int.from_bytes(cur.raw[starts[i] : starts[i] + lens[i]], "big", signed=True)) >= limit:
            cur.fail(rows[i : i + 1], MISMATCH)
            words[i] = 0
    return pa.Array.from_buffers(node.arrow, n, [None, pa.py_buffer(np.ascontiguousarray(words[:, ::-1]))])


def _enum(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    index = _int(cur, rows)
    bad = cur.live(rows) & ((index < 0) | (index >= len(node.symbols)))
    cur.fail(rows[bad], MISMATCH)
    if not node.symbols:
        return pa.nulls(rows.size, pa.string())
    index = np.where(cur.live(rows), index, 0)
    return pa.array(node.symbols, pa.string()).take(_arrow(index, pa.int32()))


def _scatter(arr: pa.Array, sel: np.ndarray, n: int) -> pa.Array:
    """``arr`` (one value per row of ``sel``) spread over ``n`` rows, null elsewhere."""
    if sel.size == n:
        return arr
    at = np.full(n, -1, np.int64)
    at[sel] = np.arange(sel.size)
    return arr.take(_arrow(at, pa.int64(), valid=at >= 0))


def _union(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    n = rows.size
    index = _int(cur, rows)
    bad = cur.live(rows) & ((index < 0) | (index >= len(node.branches)))
    cur.fail(rows[bad], MISMATCH)
    live = cur.live(rows)
    columns: list[pa.Array] = []
    present = np.zeros(n, bool)
    for b, branch in enumerate(node.branches):
        sel = np.flatnonzero(live & (index == b))
        if branch.kind == "null":
            continue
        present[sel] = True
        columns.append(_scatter(decode(branch, cur, rows[sel]), sel, n))
    if node.nullable_branch >= 0:
        return columns[0]
    if not columns:
        return pa.nulls(n, node.arrow)
    return pa.StructArray.from_arrays(columns, fields=list(node.arrow), mask=_arrow(~present, pa.bool_()))


def _record(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    if not node.fields:
        return pa.array([{}] * rows.size, node.arrow)
    children = [decode(f, cur, rows) for _, f in node.fields]
    return pa.StructArray.from_arrays(children, fields=list(node.arrow))


def _items(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    """An array or a map: blocks of (count, items), a negative count followed by the block's byte size,
    until a count of 0. Items are read one index at a time for every row that still has one."""
    n = rows.size
    is_map = node.kind == "map"
    counts = np.zeros(n, np.int64)
    chunks: list[tuple[np.ndarray, np.ndarray, pa.Array, pa.Array | None]] = []
    zero_size = node.items is not None and node.items.min_size == 0 and not is_map
    pending = np.flatnonzero(cur.live(rows))
    while pending.size:
        count = _long(cur, rows[pending])
        negative = count < 0
        if negative.any():
            _long(cur, rows[pending[negative]])  # the block's size in bytes, not needed
            count = np.abs(count)  # -2**63 stays negative: over the limit below
        live = cur.live(rows[pending])
        limit = MAX_ZERO_SIZE_ITEMS if zero_size else MAX_ITEMS
        over = live & ((count < 0) | (count > limit - counts[pending]))
        cur.fail(rows[pending[over]], MISMATCH)
        if zero_size:  # items that take no bytes: the batch's budget of them, in row order
            spent = np.cumsum(np.where(live & ~over, count, 0))
            beyond = live & ~over & (spent > cur.zero_budget)
            cur.fail(rows[pending[beyond]], MISMATCH)
            over |= beyond
        count = np.where(live & ~over, count, 0)
        more = count > 0
        active, remaining = pending[more], count[more]
        pending = active
        if zero_size and active.size:  # all of a block at once: each such item is the one value of its type
            counts[active] += remaining
            cur.zero_budget -= int(remaining.sum())
            active = active[:0]
        finished: list[int] = []
        while active.size:
            if active.size <= FEW_ROWS and int(remaining.sum()) > FEW_ROWS:
                for j, row in enumerate(active.tolist()):
                    chunks.extend(_rest(node, cur, rows, row, int(remaining[j]), counts))
                    finished.append(row)
                break
            keys = _string(node, cur, rows[active]) if is_map else None
            values = decode(node.items, cur, rows[active])
            chunks.append((active, counts[active], values, keys))
            counts[active] += 1
            remaining = remaining - 1
            keep = (remaining > 0) & cur.live(rows[active])
            active, remaining = active[keep], remaining[keep]
        if finished:
            pending = np.setdiff1d(pending, np.asarray(finished, np.int64))
        pending = pending[cur.live(rows[pending])]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    offsets_arr = _arrow(offsets.astype(np.int32), pa.int32())
    value_type = node.arrow.item_type if is_map else node.arrow.value_type
    if zero_size:
        values = constant(node.items, int(offsets[-1]))  # type: ignore[arg-type]
    elif chunks:
        order = np.lexsort((np.concatenate([c[1] for c in chunks]), np.concatenate([c[0] for c in chunks])))
        take = _arrow(order, pa.int64())
        values = pa.concat_arrays([c[2] for c in chunks]).take(take)
    else:
        values = pa.array([], value_type)
    if not is_map:
        return pa.ListArray.from_arrays(offsets_arr, values, type=node.arrow)
    keys = pa.concat_arrays([c[3] for c in chunks]).take(take) if chunks else pa.array([], pa.string())
    return pa.MapArray.from_arrays(offsets_arr, keys, values, type=node.arrow)


def _rest(
    node: Node, cur: Cursor, rows: np.ndarray, row: int, left: int, counts: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray, pa.Array, pa.Array | None]]:
    """The rest of one payload's array or map (``left`` items of the block being read, then its further
    blocks) read on a payload at a time, as chunks of :func:`_items`; its count moved on."""
    r = int(rows[row])
    out = []
    try:
        for values, keys, p in read_items_rest(
            node, cur.raw, int(cur.pos[r]), int(cur.end[r]), left, int(counts[row])
        ):
            k = len(values)
            out.append((np.full(k, row, np.int64), counts[row] + np.arange(k, dtype=np.int64), values, keys))
            counts[row] += k
            cur.pos[r] = p
    except DecodeError as e:
        cur.fail(rows[row : row + 1], e.code)
    return out


def constant(node: Node, n: int) -> pa.Array:
    """``n`` values of a type that takes no bytes (null, a record of such fields, a fixed of size 0): the
    one value such a type has, without a step per value."""
    if node.kind == "record":
        if not node.fields:
            return pa.Array.from_buffers(node.arrow, n, [None])
        return pa.StructArray.from_arrays([constant(f, n) for _, f in node.fields], fields=list(node.arrow))
    if node.kind == "fixed":
        return pa.Array.from_buffers(
            node.arrow, n, [None, pa.py_buffer(np.zeros(n + 1, np.int32)), pa.py_buffer(b"")]
        )
    return pa.nulls(n, node.arrow)


def _json(node: Node, cur: Cursor, rows: np.ndarray) -> pa.Array:
    """A recursive record's value, read a payload at a time (:mod:`.avro_values`), as JSON text."""
    out: list[str | None] = []
    assert node.target is not None
    for r in rows:
        if cur.err[r] != OK:
            out.append(None)
            continue
        try:
            text, cur.pos[r] = json_text(node.target, cur.raw, int(cur.pos[r]), int(cur.end[r]))
        except DecodeError as e:
            cur.err[r] = e.code
            text = None
        out.append(text)
    return pa.array(out, pa.string())


_DECODERS = {
    "null": _null,
    "boolean": _boolean,
    "int": _int_kind,
    "long": _long_kind,
    "float": _ieee,
    "double": _ieee,
    "bytes": _bytes,
    "string": _string,
    "fixed": _fixed,
    "enum": _enum,
    "union": _union,
    "record": _record,
    "array": _items,
    "map": _items,
    "json": _json,
}
