"""A schema-driven reader and writer of Kafka's message-generator types.

Kafka describes its internal records (consumer offsets, transaction state, KRaft metadata) as
JSON message specs compiled by its message generator (K: generator/.../MessageDataGenerator.java,
FieldSpec.java). This module interprets the same type system at run time from the Python tables in
``schemas.py``:

- fixed-size types: bool, int8, int16, uint16, int32, uint32, int64, float64, uuid (16 bytes),
  all big-endian;
- variable-length types: string, bytes, records, ``[]T`` arrays, structs (and nullable structs);
- per-field ``versions``, ``nullableVersions``, ``taggedVersions`` + ``tag``, and the message's
  ``flexibleVersions``. In a flexible version strings/bytes/arrays are "compact" (unsigned varint
  length + 1, 0 = null) and every struct ends with a tagged-field section (uvarint count, then
  uvarint tag, uvarint size, payload, in ascending tag order). In other versions strings carry an
  int16 length, bytes/arrays an int32 length, -1 meaning null.

Decoded values are plain Python: ints, floats, bools, str, lists, dicts keyed by snake_case field
names; ``bytes``/``records`` as standard base64 text; ``uuid`` as Kafka's own text form (URL-safe
base64 without padding, as ``Uuid.toString()`` prints it). Tagged fields unknown to the schema are
kept under ``"_unknown_tagged_fields"`` so that decode -> encode gives back the same bytes.

Every read error is a typed ``logdoctor.errors`` error whose position is the byte position in the
buffer given to :func:`read_message` (plus ``base_position``).
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from logdoctor.errors import CorruptRecordError, TruncatedError, UnsupportedError

UNBOUNDED = 0x7FFF  # "N+" in a version range means N..Short.MAX_VALUE

PRIMITIVES = frozenset(
    ("bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid", "string", "bytes",
     "records")
)
_FIXED = {
    "bool": struct.Struct(">?"),
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}
_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID in Kafka's text form
UNKNOWN_TAGGED = "_unknown_tagged_fields"


class SchemaValueError(ValueError):
    """A Python value handed to the writer does not fit its schema (a caller bug, not bad bytes)."""


# ---------------------------------------------------------------------------------------------
# Schema model
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; ``low > high`` is the empty range ("none")."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text.strip() in ("", "none"):
            return NONE
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), UNBOUNDED)
        if "-" in text:
            low, high = text.split("-", 1)
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        return self.low > self.high

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high == UNBOUNDED:
            return f"{self.low}+"
        if self.low == self.high:
            return str(self.low)
        return f"{self.low}-{self.high}"


NONE = Versions(0, -1)


@dataclass(frozen=True, slots=True)
class ArrayOf:
    """``[]T``: T is a primitive type name or a :class:`StructType`."""

    element: FieldType


@dataclass(frozen=True, slots=True)
class StructType:
    name: str
    fields: tuple[Field, ...]


FieldType = str | ArrayOf | StructType

_NO_DEFAULT = object()


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a struct, as FieldSpec describes it (name already in snake_case)."""

    name: str
    type: FieldType
    versions: Versions
    nullable: Versions = NONE
    tagged: Versions = NONE
    tag: int | None = None
    default: Any = _NO_DEFAULT  # the spec's "default", already typed (None for "null")

    def __post_init__(self) -> None:
        t = self.type
        if isinstance(t, str) and t not in PRIMITIVES:
            raise TypeError(f"field {self.name}: unknown type {t!r}")
        if (self.tag is None) != self.tagged.empty:
            raise TypeError(f"field {self.name}: tag and taggedVersions go together")
        if not self.tagged.empty and self.tagged.high != UNBOUNDED:
            raise TypeError(f"field {self.name}: taggedVersions must be open-ended")

    def default_value(self, version: int) -> Any:
        """The value Kafka's generated class holds when the field is absent (FieldSpec.fieldDefault)."""
        if self.default is not _NO_DEFAULT:
            return self.default
        t = self.type
        if isinstance(t, ArrayOf):
            return []
        if isinstance(t, StructType):
            return default_struct(t, version)
        if t == "bool":
            return False
        if t == "float64":
            return 0.0
        if t == "uuid":
            return ZERO_UUID
        if t == "string" or t in ("bytes", "records"):
            return ""
        return 0


@dataclass(frozen=True, slots=True)
class Message:
    """A top-level message spec: name, valid versions, flexible versions, fields."""

    name: str
    valid_versions: Versions
    flexible_versions: Versions
    fields: tuple[Field, ...]
    api_key: int | None = None
    struct: StructType = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "struct", StructType(self.name, self.fields))


def default_struct(struct_type: StructType, version: int) -> dict[str, Any]:
    return {f.name: f.default_value(version) for f in struct_type.fields if version in f.versions}


# ---------------------------------------------------------------------------------------------
# Text forms
# ---------------------------------------------------------------------------------------------


def uuid_to_text(raw: bytes) -> str:
    """16 bytes -> Kafka's ``Uuid.toString()`` (URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def uuid_from_text(value: object) -> bytes:
    """Kafka's text form, the standard 36-character form, ``uuid.UUID`` or 16 raw bytes -> 16 bytes."""
    # the uuid module (it imports platform, ~1.5 ms) only where a UUID is given or made: a UUID object
    # exists only once the module is loaded (decoding never needs it: uuid_to_text)
    uuid_module = sys.modules.get("uuid")
    if uuid_module is not None and isinstance(value, uuid_module.UUID):
        return value.bytes
    if isinstance(value, bytes | bytearray | memoryview) and len(value) == 16:
        return bytes(value)
    if isinstance(value, str):
        if len(value) == 22:
            try:
                raw = base64.urlsafe_b64decode(value + "==")
            except (binascii.Error, ValueError) as exc:
                raise SchemaValueError(f"not a Kafka uuid: {value!r}") from exc
            if len(raw) == 16:
                return raw
        elif len(value) == 36:
            import uuid

            try:
                return uuid.UUID(value).bytes
            except ValueError as exc:
                raise SchemaValueError(f"not a uuid: {value!r}") from exc
    raise SchemaValueError(f"not a uuid: {value!r}")


def uuid_to_standard(text: str) -> str:
    """Kafka's text form of a uuid -> the standard ``8-4-4-4-12`` hex form."""
    import uuid

    return str(uuid.UUID(bytes=uuid_from_text(text)))


def bytes_to_text(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def bytes_from_text(value: object) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise SchemaValueError(f"not base64: {value[:40]!r}") from exc
    raise SchemaValueError(f"expected bytes or base64 text, got {type(value).__name__}")


# ---------------------------------------------------------------------------------------------
# Reader
# ---------------------------------------------------------------------------------------------


class _Reader:
    __slots__ = ("base", "buf", "end", "pos", "source", "text_errors", "what")

    def __init__(self, buf: bytes, what: str, source: str | None, base: int, pos: int, end: int,
                 text_errors: str = "strict") -> None:
        self.buf = buf
        self.text_errors = text_errors
        self.pos = pos
        self.end = end
        self.what = what
        self.source = source
        self.base = base

    def truncated(self, expected: str, at: int) -> TruncatedError:
        return TruncatedError(
            f"{self.what}: {expected}",
            source=self.source,
            position=self.base + at,
            found=f"{self.end - at} byte(s) left",
        )

    def corrupt(self, expected: str, at: int, found: str | None = None) -> CorruptRecordError:
        return CorruptRecordError(f"{self.what}: {expected}", source=self.source, position=self.base + at,
                                  found=found)

    def take(self, n: int, label: str) -> bytes:
        start = self.pos
        if n > self.end - start:
            raise self.truncated(f"{label} of {n} byte(s)", start)
        self.pos = start + n
        return self.buf[start : start + n]

    def fixed(self, type_name: str, label: str) -> Any:
        codec = _FIXED[type_name]
        start = self.pos
        if codec.size > self.end - start:
            raise self.truncated(f"{label} ({type_name})", start)
        self.pos = start + codec.size
        return codec.unpack_from(self.buf, start)[0]

    def uvarint(self, label: str) -> int:
        # ByteUtils.readUnsignedVarint: at most 5 bytes for a 32-bit value.
        start = self.pos
        buf = self.buf
        result = 0
        shift = 0
        pos = start
        while True:
            if pos >= self.end:
                raise self.truncated(f"{label} (unsigned varint)", start)
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 28:
                raise self.corrupt(f"{label}: an unsigned varint of at most 5 bytes", start)
        if result > 0xFFFFFFFF:
            raise self.corrupt(f"{label}: an unsigned varint below 2^32", start)
        self.pos = pos
        return result


def read_message(
    message: Message,
    buf: bytes | bytearray | memoryview,
    version: int,
    *,
    start: int = 0,
    end: int | None = None,
    what: str | None = None,
    source: str | None = None,
    base_position: int = 0,
    allow_trailing: bool = False,
    text_errors: str = "strict",
) -> tuple[dict[str, Any], int]:
    """Read ``message`` at ``version`` from ``buf[start:end]``; return (fields, position after it).

    Raises UnsupportedError for a version outside the spec's valid versions, TruncatedError when
    the bytes end early and CorruptRecordError for impossible content (and for bytes left over
    unless ``allow_trailing``). ``text_errors="replace"`` reads a string that is not UTF-8 as Kafka's
    Readable.readString does (``new String(bytes, UTF_8)``) instead of raising CorruptRecordError.
    """
    data = bytes(buf) if not isinstance(buf, bytes) else buf
    stop = len(data) if end is None else end
    label = what or message.name
    if version not in message.valid_versions:
        raise UnsupportedError(
            f"{label}: a version of {message.name} in {message.valid_versions}",
            source=source,
            position=base_position + start,
            found=str(version),
        )
    reader = _Reader(data, label, source, base_position, start, stop, text_errors)
    flexible = version in message.flexible_versions
    value = _read_struct(reader, message.struct, version, flexible)
    if not allow_trailing and reader.pos != stop:
        raise reader.corrupt(f"end of {message.name}", reader.pos, f"{stop - reader.pos} byte(s) more")
    return value, reader.pos


def _read_struct(r: _Reader, st: StructType, version: int, flexible: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tagged_fields: dict[int, Field] = {}
    for f in st.fields:
        if version not in f.versions:
            continue
        if version in f.tagged:
            tagged_fields[f.tag] = f  # type: ignore[index]
            out[f.name] = f.default_value(version)
            continue
        out[f.name] = _read_field(r, f, version, flexible)
    if flexible:
        count = r.uvarint(f"{st.name} tagged field count")
        unknown: list[dict[str, Any]] = []
        for _ in range(count):
            tag_at = r.pos
            tag = r.uvarint(f"{st.name} tag")
            size = r.uvarint(f"{st.name} tag {tag} size")
            payload_start = r.pos
            if size > r.end - payload_start:
                raise r.truncated(f"{st.name} tag {tag} payload of {size} byte(s)", payload_start)
            f = tagged_fields.get(tag)
            if f is None:
                raw = r.buf[payload_start : payload_start + size]
                unknown.append({"tag": tag, "data": bytes_to_text(raw)})
                r.pos = payload_start + size
                continue
            saved_end = r.end
            r.end = payload_start + size
            try:
                out[f.name] = _read_tagged_payload(r, f, version)
            finally:
                r.end = saved_end
            if r.pos != payload_start + size:
                raise r.corrupt(f"{st.name}.{f.name} (tag {tag}) of {size} byte(s)", tag_at,
                                f"{r.pos - payload_start} byte(s) used")
        if unknown:
            out[UNKNOWN_TAGGED] = unknown
    return out


def _read_tagged_payload(r: _Reader, f: Field, version: int) -> Any:
    t = f.type
    if isinstance(t, StructType):
        # A nullable tagged struct has a uvarint presence marker (MessageDataGenerator.generateStructReader).
        if version in f.nullable and r.uvarint(f"{f.name} presence") == 0:
            return None
        return _read_struct(r, t, version, True)
    return _read_field(r, f, version, True)


def _read_length(r: _Reader, f: Field, version: int, flexible: bool, kind: str) -> int | None:
    """Length (or count) of a variable-length field; None means null."""
    at = r.pos
    if flexible:
        length = r.uvarint(f"{f.name} length") - 1
    elif kind == "string":
        length = r.fixed("int16", f"{f.name} length")
    else:
        length = r.fixed("int32", f"{f.name} length")
    if length < 0:
        if length == -1 and version in f.nullable:
            return None
        raise r.corrupt(f"{f.name}: a length >= 0" + (" (field is not nullable)" if length == -1 else ""),
                        at, str(length))
    return length


def _read_field(r: _Reader, f: Field, version: int, flexible: bool) -> Any:
    t = f.type
    if isinstance(t, str):
        if t in _FIXED:
            return r.fixed(t, f.name)
        if t == "uuid":
            return uuid_to_text(r.take(16, f"{f.name} (uuid)"))
        length = _read_length(r, f, version, flexible, t)
        if length is None:
            return None
        if t == "string":
            if length > 0x7FFF:
                raise r.corrupt(f"{f.name}: a string of at most 32767 bytes", r.pos, str(length))
            at = r.pos
            raw = r.take(length, f"{f.name} (string)")
            try:
                return raw.decode("utf-8", r.text_errors)
            except UnicodeDecodeError as exc:
                raise r.corrupt(f"{f.name}: UTF-8 text", at + exc.start) from None
        return bytes_to_text(r.take(length, f"{f.name} ({t})"))
    if isinstance(t, StructType):
        if version in f.nullable:
            at = r.pos
            marker = r.fixed("int8", f"{f.name} presence")
            if marker < 0:
                return None
            if marker != 1:
                raise r.corrupt(f"{f.name}: presence byte -1 or 1", at, str(marker))
        return _read_struct(r, t, version, flexible)
    # Array
    at = r.pos
    count = _read_length(r, f, version, flexible, "array")
    if count is None:
        return None
    if count > r.end - r.pos:
        raise r.truncated(f"{f.name}: an array of {count} element(s)", at)
    elem = t.element
    if isinstance(elem, StructType):
        return [_read_struct(r, elem, version, flexible) for _ in range(count)]
    if elem in _FIXED:
        codec = _FIXED[elem]
        need = codec.size * count
        start = r.pos
        if need > r.end - start:
            raise r.truncated(f"{f.name}: {count} x {elem}", start)
        r.pos = start + need
        return list(struct.unpack_from(f">{count}{codec.format[1:]}", r.buf, start))
    inner = Field(f.name, elem, f.versions)
    return [_read_field(r, inner, version, flexible) for _ in range(count)]


# ---------------------------------------------------------------------------------------------
# Writer
# ---------------------------------------------------------------------------------------------


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0 or value > 0xFFFFFFFF:
        raise SchemaValueError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_message(message: Message, data: Mapping[str, Any], version: int) -> bytes:
    """Encode ``data`` (as :func:`read_message` returns it) as ``message`` at ``version``.

    Fields missing from ``data`` take the spec's default; keys that are not fields of the
    version are ignored.
    """
    if version not in message.valid_versions:
        raise UnsupportedError(f"a version of {message.name} in {message.valid_versions}", found=str(version))
    out = bytearray()
    _write_struct(out, message.struct, data, version, version in message.flexible_versions)
    return bytes(out)


def _write_struct(
    out: bytearray, st: StructType, data: Mapping[str, Any], version: int, flexible: bool
) -> None:
    if not isinstance(data, Mapping):
        raise SchemaValueError(f"{st.name}: expected a dict, got {type(data).__name__}")
    tagged: list[tuple[int, bytes]] = []
    for f in st.fields:
        if version not in f.versions:
            continue
        value = data.get(f.name, _NO_DEFAULT)
        if value is _NO_DEFAULT:
            value = f.default_value(version)
        if version in f.tagged:
            payload = _tagged_payload(f, value, version)
            if payload is not None:
                tagged.append((f.tag, payload))  # type: ignore[arg-type]
            continue
        _write_field(out, f, value, version, flexible)
    unknown = data.get(UNKNOWN_TAGGED) or ()
    if not flexible:
        if unknown:
            raise SchemaValueError(f"{st.name}: tagged fields in a non-flexible version {version}")
        return
    for item in unknown:
        tagged.append((int(item["tag"]), bytes_from_text(item["data"])))
    tagged.sort(key=lambda item: item[0])
    write_uvarint(out, len(tagged))
    for tag, payload in tagged:
        write_uvarint(out, tag)
        write_uvarint(out, len(payload))
        out += payload


def _is_default(f: Field, value: Any, version: int) -> bool:
    default = f.default_value(version)
    t = f.type
    if value is None or default is None:
        return value is default
    if t == "uuid":
        return uuid_from_text(value) == uuid_from_text(default)
    if t in ("bytes", "records"):
        return bytes_from_text(value) == bytes_from_text(default)
    if t == "float64":
        return float(value) == float(default) or (math.isnan(value) and math.isnan(default))
    if isinstance(t, ArrayOf):
        return list(value) == list(default)
    return value == default


def _tagged_payload(f: Field, value: Any, version: int) -> bytes | None:
    """The payload of a tagged field, or None when Kafka's writer leaves it out (default value)."""
    if _is_default(f, value, version):
        return None
    out = bytearray()
    if value is None:
        if version not in f.nullable:
            raise SchemaValueError(f"{f.name}: null in version {version} where it is not nullable")
        write_uvarint(out, 0)  # null of a nullable tagged field whose default is not null
        return bytes(out)
    if isinstance(f.type, StructType):
        if version in f.nullable:
            write_uvarint(out, 1)
        _write_struct(out, f.type, value, version, True)
    else:
        _write_field(out, f, value, version, True)
    return bytes(out)


def _write_length(
    out: bytearray, f: Field, length: int | None, version: int, flexible: bool, kind: str
) -> None:
    if length is None:
        if version not in f.nullable:
            raise SchemaValueError(f"{f.name}: null in version {version} where it is not nullable")
        length = -1
    if flexible:
        write_uvarint(out, length + 1)
    elif kind == "string":
        out += _I16.pack(length)
    else:
        out += _I32.pack(length)


def _write_field(out: bytearray, f: Field, value: Any, version: int, flexible: bool) -> None:
    t = f.type
    if isinstance(t, str):
        if t in _FIXED:
            _write_fixed(out, f.name, t, value)
        elif t == "uuid":
            out += uuid_from_text(value)
        elif t == "string":
            if value is None:
                _write_length(out, f, None, version, flexible, t)
                return
            if not isinstance(value, str):
                raise SchemaValueError(f"{f.name}: expected str, got {type(value).__name__}")
            raw = value.encode("utf-8")
            if len(raw) > 0x7FFF:
                raise SchemaValueError(f"{f.name}: string of {len(raw)} bytes is longer than 32767")
            _write_length(out, f, len(raw), version, flexible, t)
            out += raw
        else:
            if value is None:
                _write_length(out, f, None, version, flexible, t)
                return
            raw = bytes_from_text(value)
            _write_length(out, f, len(raw), version, flexible, t)
            out += raw
        return
    if isinstance(t, StructType):
        if version in f.nullable:
            if value is None:
                out.append(0xFF)
                return
            out.append(1)
        elif value is None:
            raise SchemaValueError(f"{f.name}: null struct in version {version} where it is not nullable")
        _write_struct(out, t, value, version, flexible)
        return
    if value is None:
        _write_length(out, f, None, version, flexible, "array")
        return
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise SchemaValueError(f"{f.name}: expected a list, got {type(value).__name__}")
    _write_length(out, f, len(value), version, flexible, "array")
    elem = t.element
    if isinstance(elem, StructType):
        for item in value:
            _write_struct(out, elem, item, version, flexible)
        return
    inner = Field(f.name, elem, f.versions)
    for item in value:
        _write_field(out, inner, item, version, flexible)


def _write_fixed(out: bytearray, name: str, type_name: str, value: Any) -> None:
    if type_name == "bool":
        if not isinstance(value, bool):
            raise SchemaValueError(f"{name}: expected bool, got {type(value).__name__}")
    elif type_name == "float64":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SchemaValueError(f"{name}: expected float, got {type(value).__name__}")
        value = float(value)
    else:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SchemaValueError(f"{name}: expected int, got {type(value).__name__}")
        low, high = _INT_RANGES[type_name]
        if not low <= value <= high:
            raise SchemaValueError(f"{name}: {value} out of range for {type_name}")
    out += _FIXED[type_name].pack(value)
