"""Avro binary read one payload at a time, the way a sequential decoder reads it, under the rules of
:mod:`.avro_columns` (the same errors at the same places): for the values where a record recurses into
itself (held as JSON text), and for batches too small for the column decoder's numpy passes to pay.

The rules: reading past the payload's end is :data:`TRUNCATED`; an enum or union index out of range, a
negative length or block count beyond the limits, a varint longer than Java's ``BinaryDecoder`` reads
(5 bytes for an int, 10 for a long), a boolean byte other than 0 or 1, a string or map key that is not
UTF-8, a decimal beyond its precision, a time of day out of range and a timestamp-millis that does not fit
in microseconds are :data:`MISMATCH`.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import struct
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from logdoctor.formats.registry.avro_schema import Node

OK, TRUNCATED, MISMATCH = 0, 1, 2
#: the most items one array or map may hold, as Java's ``SystemLimitException`` bounds a collection
#: (org.apache.avro.limits.collectionItems.maxLength, default Integer.MAX_VALUE - 8): more is a mismatch
MAX_ITEMS = 2**31 - 9
#: the most items one array of zero-byte items (nulls, empty records) may claim here (they take no bytes,
#: so nothing else bounds them): more is a mismatch
MAX_ZERO_SIZE_ITEMS = 2**20
#: the most items that take no bytes all the payloads of one decode (a batch, or a window of one) may hold
#: together: past it a payload is a mismatch (issue 75: 100 records of 5 bytes, each with 2**20 such items,
#: took 5.1 GB in the export). The bound holds per batch, whatever the records' count.
BATCH_ZERO_SIZE_ITEMS = 2**22
#: the items of one array read on a payload at a time are made Arrow arrays this many at a time
ITEMS_CHUNK = 65_536
MS_OF_DAY = 86_400_000
US_OF_DAY = 86_400_000_000
I64_MAX_MS = (2**63 - 1) // 1000  # the largest timestamp-millis that fits in int64 microseconds

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class DecodeError(Exception):
    """A payload that does not decode: ``code`` is :data:`TRUNCATED` or :data:`MISMATCH`."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def decode_rows(root: Node, payloads: Sequence[bytes | memoryview]) -> tuple[pa.Array, np.ndarray]:
    """(values of ``root.arrow``, one per payload, null where it did not decode; error codes), a payload
    at a time; bytes left over after the value are a mismatch."""
    values: list[Any] = []
    codes = np.zeros(len(payloads), np.int8)
    _ZERO_BUDGET[0] = BATCH_ZERO_SIZE_ITEMS
    for i, payload in enumerate(payloads):
        buf = bytes(payload)
        try:
            value, p = read_value(root, buf, 0, len(buf), arrow=True)
            if p != len(buf):
                raise DecodeError(MISMATCH)
        except DecodeError as e:
            codes[i] = e.code
            value = None
        values.append(value)
    return pa.array(values, root.arrow), codes


_NESTED = ("record", "json", "union", "array", "map")


def _tree_size(node: Node) -> int:
    """How many nodes the type tree of ``node`` has (a recursion counted once)."""
    seen: set[int] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        todo.extend(f for _, f in n.fields)
        todo.extend(n.branches)
        todo.extend(x for x in (n.items, n.target) if x is not None)
    return len(seen)


def json_text(node: Node, buf: bytes, p: int, end: int) -> tuple[str, int]:
    """The value at ``buf[p:end]`` as compact JSON text (:func:`read_value`'s JSON data), and the position
    after it. Read without recursion (issue 75: a linked list 500 nodes deep was a RecursionError), so a
    recursive value is read at any depth its bytes hold; the steps that read no byte (nulls, empty records,
    a record that recurses with nothing to read) are bounded by the payload's length times the schema's
    size, past which the value is a mismatch."""
    out: list[str] = []
    dumps = json.dumps
    budget = (end - p + 1) * 4 * _tree_size(node) + 1024
    stack: list[Any] = [node]
    while stack:
        budget -= 1
        if budget < 0:
            raise DecodeError(MISMATCH)
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        if isinstance(item, list):  # an array or map being read: [node, items left in the block, seen]
            n, left, seen = item
            assert n.items is not None
            if left == 0:
                count, p = _block_count(buf, p, end)
                if count == 0:
                    out.append("}" if n.kind == "map" else "]")
                    continue
                limit = MAX_ZERO_SIZE_ITEMS if n.items.min_size == 0 and n.kind != "map" else MAX_ITEMS
                if seen + count > limit:
                    raise DecodeError(MISMATCH)
                left = count
            stack.append([n, left - 1, seen + 1])
            if seen:
                out.append(",")
            if n.kind == "map":
                key, p = _length(buf, p, end)
                out.append(dumps(_utf8(key), ensure_ascii=False) + ":")
            stack.append(n.items)
            continue
        kind = item.kind
        if kind not in _NESTED:
            value, p = read_value(item, buf, p, end)
            out.append(dumps(value, ensure_ascii=False))
        elif kind == "union":
            b, p = _read_int(buf, p, end)
            if not 0 <= b < len(item.branches):
                raise DecodeError(MISMATCH)
            stack.append(item.branches[b])
        elif kind in ("array", "map"):
            out.append("{" if kind == "map" else "[")
            stack.append([item, 0, 0])
        else:
            record = item.target if kind == "json" else item
            assert record is not None
            stack.append("}")
            for i in range(len(record.fields) - 1, -1, -1):
                name, f = record.fields[i]
                stack.append(f)
                stack.append(("," if i else "") + dumps(name, ensure_ascii=False) + ":")
            out.append("{")
    return "".join(out), p


def read_value(node: Node, buf: bytes, p: int, end: int, arrow: bool = False) -> tuple[Any, int]:
    """The value of ``node`` at ``buf[p:end]`` and the position after it; raises :class:`DecodeError`.

    ``arrow=False``: canonical JSON data (decimals as strings with their scale, bytes as hex, timestamps,
    dates and times in ISO 8601, enums by symbol, unions unwrapped). ``arrow=True``: what ``pa.array``
    takes for ``node.arrow`` (Decimal, bytes, ints for timestamps, dates and times, a union's branch struct
    as a dict, a map as (key, value) pairs, a recursion as JSON text)."""
    kind = node.kind
    if kind == "null":
        return None, p
    if kind == "boolean":
        b, p = _take(buf, p, end, 1)
        if b[0] > 1:
            raise DecodeError(MISMATCH)
        return b[0] == 1, p
    if kind == "int" or kind == "enum":
        v, p = _read_int(buf, p, end)
        if kind == "enum":
            if not 0 <= v < len(node.symbols):
                raise DecodeError(MISMATCH)
            return node.symbols[v], p
        return _logical_int(node, v, arrow), p
    if kind == "long":
        v, p = _read_long(buf, p, end)
        return _logical_long(node, v, arrow), p
    if kind == "float" or kind == "double":
        raw, p = _take(buf, p, end, 4 if kind == "float" else 8)
        return (_F32 if kind == "float" else _F64).unpack(raw)[0], p
    if kind in ("bytes", "string", "fixed"):
        raw, p = _take(buf, p, end, node.size) if kind == "fixed" else _length(buf, p, end)
        if kind == "string":
            return _utf8(raw), p
        if node.logical == "decimal":
            unscaled = int.from_bytes(raw, "big", signed=True)
            if abs(unscaled) >= 10**node.precision:
                raise DecodeError(MISMATCH)
            d = decimal.Decimal(f"{unscaled}E-{node.scale}")  # exact: no context's rounding
            return (d if arrow else f"{d:f}"), p
        if node.logical == "uuid":
            return str(uuid.UUID(bytes=raw)), p
        return (raw if arrow else raw.hex()), p
    if kind == "union":
        b, p = _read_int(buf, p, end)
        if not 0 <= b < len(node.branches):
            raise DecodeError(MISMATCH)
        value, p = read_value(node.branches[b], buf, p, end, arrow)
        if not arrow or node.nullable_branch >= 0 or node.branches[b].kind == "null":
            return value, p
        names = [f.name for f in node.arrow]
        at = sum(1 for x in node.branches[:b] if x.kind != "null")
        return {name: (value if i == at else None) for i, name in enumerate(names)}, p
    if kind == "json" and arrow:
        assert node.target is not None
        return json_text(node.target, buf, p, end)
    if kind == "record" or kind == "json":
        record = node.target if kind == "json" else node
        assert record is not None
        out = {}
        for name, f in record.fields:
            out[name], p = read_value(f, buf, p, end, arrow)
        return out, p
    return _read_items(node, buf, p, end, arrow)


#: what is left of :data:`BATCH_ZERO_SIZE_ITEMS` in the current :func:`decode_rows`
_ZERO_BUDGET = [BATCH_ZERO_SIZE_ITEMS]


def read_items_rest(node: Node, buf: bytes, p: int, end: int, left: int, total: int) -> Any:
    """The rest of an array or map at ``buf[p:end]``: ``left`` items of the block being read, then the
    blocks after it, ``total`` items read before; yields (values, keys or None, position after them) by
    :data:`ITEMS_CHUNK` items as Arrow arrays. Raises :class:`DecodeError`."""
    assert node.items is not None
    is_map = node.kind == "map"
    value_type = node.arrow.item_type if is_map else node.arrow.value_type
    values: list[Any] = []
    keys: list[str] = []
    while True:
        while left:
            if is_map:
                key, p = _length(buf, p, end)
                keys.append(_utf8(key))
            value, p = read_value(node.items, buf, p, end, True)
            values.append(value)
            left -= 1
            if len(values) == ITEMS_CHUNK:
                yield pa.array(values, value_type), (pa.array(keys, pa.string()) if is_map else None), p
                values, keys = [], []
        count, p = _block_count(buf, p, end)
        if count == 0:
            break
        total += count
        if total > MAX_ITEMS:
            raise DecodeError(MISMATCH)
        left = count
    yield pa.array(values, value_type), (pa.array(keys, pa.string()) if is_map else None), p


def _read_items(node: Node, buf: bytes, p: int, end: int, arrow: bool) -> tuple[Any, int]:
    assert node.items is not None
    is_map = node.kind == "map"
    items: list[Any] = []
    total = 0
    zero_size = node.items.min_size == 0 and not is_map
    limit = MAX_ZERO_SIZE_ITEMS if zero_size else MAX_ITEMS
    while True:
        count, p = _block_count(buf, p, end)
        if count == 0:
            return (items if arrow or not is_map else dict(items)), p
        total += count
        if total > limit:
            raise DecodeError(MISMATCH)
        if zero_size:
            if count > _ZERO_BUDGET[0]:
                raise DecodeError(MISMATCH)
            _ZERO_BUDGET[0] -= count
        for _ in range(count):
            if is_map:
                key, p = _length(buf, p, end)
            value, p = read_value(node.items, buf, p, end, arrow)
            items.append((_utf8(key), value) if is_map else value)


def _block_count(buf: bytes, p: int, end: int) -> tuple[int, int]:
    """The item count of an array's or map's block (a negative count is followed by the block's size in
    bytes, skipped) and the position after it; 0 ends the array or map."""
    count, p = _read_long(buf, p, end)
    if count < 0:
        count = -count
        _, p = _read_long(buf, p, end)
    return count, p


def _read_varint(buf: bytes, p: int, end: int, max_bytes: int) -> tuple[int, int]:
    raw = shift = 0
    for _ in range(max_bytes):
        if p >= end:
            raise DecodeError(TRUNCATED)
        b = buf[p]
        p += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return raw, p
        shift += 7
    raise DecodeError(MISMATCH)


def _read_long(buf: bytes, p: int, end: int) -> tuple[int, int]:
    raw, p = _read_varint(buf, p, end, 10)
    raw &= 2**64 - 1
    return (raw >> 1) ^ -(raw & 1), p


def _read_int(buf: bytes, p: int, end: int) -> tuple[int, int]:
    """An int as Java's ``BinaryDecoder.readInt`` reads it: at most 5 bytes, the low 32 bits kept."""
    raw, p = _read_varint(buf, p, end, 5)
    raw &= 0xFFFFFFFF
    v = (raw >> 1) ^ -(raw & 1)
    return (v + 2**31) % 2**32 - 2**31, p


def _take(buf: bytes, p: int, end: int, size: int) -> tuple[bytes, int]:
    if size > end - p:
        raise DecodeError(TRUNCATED)
    return buf[p : p + size], p + size


def _length(buf: bytes, p: int, end: int) -> tuple[bytes, int]:
    size, p = _read_long(buf, p, end)
    if size < 0:
        raise DecodeError(MISMATCH)  # Java: "Malformed data. Length is negative"
    return _take(buf, p, end, size)


def _utf8(raw: bytes) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise DecodeError(MISMATCH) from None


def _logical_int(node: Node, v: int, arrow: bool) -> Any:
    if node.logical == "time-millis" and not 0 <= v < MS_OF_DAY:
        raise DecodeError(MISMATCH)
    if arrow:
        return v
    if node.logical == "date":
        return (dt.date(1970, 1, 1) + dt.timedelta(days=v)).isoformat() if -719162 <= v <= 2932896 else v
    if node.logical == "time-millis":
        return (dt.datetime.min + dt.timedelta(milliseconds=v)).time().isoformat(timespec="milliseconds")
    return v


def _logical_long(node: Node, v: int, arrow: bool) -> Any:
    logical = node.logical
    if logical in ("timestamp-millis", "local-timestamp-millis"):
        if abs(v) > I64_MAX_MS:
            raise DecodeError(MISMATCH)
        return v * 1000 if arrow else _iso(v * 1000, logical.startswith("local"), "milliseconds")
    if logical == "time-micros" and not 0 <= v < US_OF_DAY:
        raise DecodeError(MISMATCH)
    if arrow:
        return v
    if logical in ("timestamp-micros", "local-timestamp-micros"):
        return _iso(v, logical.startswith("local"), "microseconds")
    if logical == "time-micros":
        return (dt.datetime.min + dt.timedelta(microseconds=v)).time().isoformat(timespec="microseconds")
    return v


def _iso(micros: int, local: bool, timespec: str) -> Any:
    try:
        t = _EPOCH + dt.timedelta(microseconds=micros)
    except OverflowError:
        return micros
    text = t.replace(tzinfo=None).isoformat(timespec=timespec)
    return text if local else text + "Z"
