"""Typed keys and values in ``dump --print-data``, as kcat's ``-s avro`` shows a live topic's.

A record of a data topic is decoded with the Schema Registry read from a ``_schemas`` partition: the one in
the log dir of the segment dumped, or those ``dump --schemas`` names (another broker's log dir, a partition
folder). Each key and value goes through the export's own code: :func:`~logdoctor.formats.registry.writers.
writer_of` names its writer schema (a registry frame or header, or a Kafka Connect JsonConverter envelope)
and :class:`~logdoctor.formats.registry.writers.Decoders` holds one decoder per writer schema. The decoded
Arrow value is shown as JSON (:func:`json_value`). A registry is read once per dump (:func:`registry_for`
keeps it until :func:`forget_registries`), and only when a ``_schemas`` partition is there or ``--schemas``
is given: a dump of other topics imports none of this.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from logdoctor.formats.record_types import Record
    from logdoctor.logdir.schemas_store import LoadedRegistry

__all__ = ["TYPED", "forget_registries", "json_value", "registry_for", "typed_decoder"]

#: the decoder's name in the dump's events
TYPED = "typed"
_STORE_TOPIC = "_schemas"
_KEY_HEADER = "__key_schema_id"
_VALUE_HEADER = "__value_schema_id"

# each registry read in this dump: by the --schemas given, or by the log dir whose _schemas was read
_REGISTRIES: dict[tuple[str, ...], LoadedRegistry | None] = {}


def forget_registries() -> None:
    """Drop the registries read (the end of a dump)."""
    _REGISTRIES.clear()


def _store_folders(log_dir: Path) -> list[str]:
    try:
        return sorted(str(p) for p in log_dir.glob(f"{_STORE_TOPIC}-*") if p.name[9:].isdigit())
    except OSError:
        return []


def registry_for(path: Path | None, schemas: Sequence[str]) -> LoadedRegistry | None:
    """The registry that types the records of the segment ``path``: the one of ``schemas`` when given
    (paths as ``export --schemas`` takes them), else the one of the ``_schemas`` partitions of the
    segment's log dir; None when there is neither. Read once per dump. Raises
    :class:`~logdoctor.logdir.discovery.DiscoveryError` for a ``schemas`` path that holds no log."""
    if schemas:
        key = ("--schemas", *schemas)
        folders: list[str] = list(schemas)
    elif path is not None:
        log_dir = path.resolve().parent.parent
        key = ("log-dir", str(log_dir))
        if key in _REGISTRIES:
            return _REGISTRIES[key]
        folders = _store_folders(log_dir)
        if not folders:
            _REGISTRIES[key] = None
            return None
    else:
        return None
    if key not in _REGISTRIES:
        from logdoctor.logdir.schemas_store import load_registry

        _REGISTRIES[key] = load_registry([], folders)
    return _REGISTRIES[key]


def _last_header(record: Record, name: str) -> bytes | None:
    h = next((h for h in reversed(record.headers) if h.key == name), None)
    return None if h is None or h.value is None else bytes(h.value)


def _text_or_b64(data: bytes) -> dict[str, Any] | str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


class _Typed:
    """Decodes one record's key and value with a registry (None: Connect envelopes only)."""

    def __init__(self, loaded: LoadedRegistry | None, topic: str | None = None) -> None:
        from logdoctor.formats.registry.writers import Decoders

        self.registry = None if loaded is None else loaded.registry
        self.decoders = Decoders(self.registry)
        # the Schema Registry context of the topic's keys and values (an association names it)
        r, t = self.registry, topic
        self.contexts = {
            k: None if r is None or t is None else r.context_of_topic(t, k) for k in (True, False)
        }

    def _side(
        self, data: bytes | None, header: bytes | None, is_key: bool = False
    ) -> tuple[dict[str, Any], Any]:
        """(what names the schema, the decoded value) of a key or value; a failure gives ``reason``."""
        from logdoctor.formats.registry.framing import read_frame
        from logdoctor.formats.registry.writers import REGISTRY, Resolved, unbuildable_reason, writer_of

        resolved = writer_of(data, header, self.registry, self.contexts[is_key])
        if resolved is None:
            return {}, None
        if isinstance(resolved, str):
            about: dict[str, Any] = {"reason": resolved}
            frame = read_frame(data, header)
            if not isinstance(frame, str):
                about["schema_id" if frame.schema_id is not None else "schema_guid"] = (
                    frame.schema_id if frame.schema_id is not None else frame.guid
                )
            return about, None
        assert isinstance(resolved, Resolved) and data is not None
        w = resolved.writer
        about = {"schema_id": w.schema_id} if w.kind == REGISTRY else {"schema": "connect"}
        if w.context:
            about["schema_context"] = w.context  # the id is of this Schema Registry context
        if w.message_indexes and w.message_indexes != (0,):
            about["message_indexes"] = list(w.message_indexes)
        if resolved.deleted:
            about["schema_deleted"] = True
        schema = None if self.registry is None else self.registry.in_context(w.context).get(w.schema_id or 0)
        if w.kind == REGISTRY and schema is not None and schema.encrypted_fields:
            about["encrypted_fields"] = list(
                schema.encrypted_fields
            )  # their ciphertext, as the data contract says
        decoder = self.decoders.get(w)
        if isinstance(decoder, Exception):
            about["reason"] = unbuildable_reason(decoder)
            about["schema_error"] = str(decoder)
            return about, None
        got = decoder.decode([memoryview(data)[resolved.payload :]])
        if got.reasons[0] is not None:
            about["reason"] = got.reasons[0]
            return about, None
        try:
            py = got.values[0].as_py()
        except (OverflowError, ValueError):  # a timestamp or date past year 9999: Python's datetime has none
            py = got.values.cast(_numbers_type(decoder.arrow_type))[0].as_py()
        return about, json_value(py, decoder.arrow_type)

    def __call__(self, record: Record) -> dict[str, Any]:
        from logdoctor.formats.registry.reasons import NO_MAGIC_BYTE

        key = None if record.key is None else bytes(record.key)
        value = None if record.value is None else bytes(record.value)
        out: dict[str, Any] = {}
        key_about, key_value = self._side(key, _last_header(record, _KEY_HEADER), True)
        if key_about.get("reason") == NO_MAGIC_BYTE and key is not None:
            out["key"] = _text_or_b64(key)  # a plain key: its text, as kcat prints it
        else:
            out["key"] = key_value
            out.update({f"key_{k}": v for k, v in key_about.items()})
        value_about, out["value"] = self._side(value, _last_header(record, _VALUE_HEADER))
        out.update(value_about)
        return out


def typed_decoder(path: Path | None, schemas: Sequence[str], force: bool) -> Callable[[Record], dict] | None:
    """The decoder of a data topic's records for ``dump`` (see the module), or None when there is no
    registry to read and ``force`` (``--decoder typed``) is not given."""
    loaded = registry_for(path, schemas)
    if loaded is None and not force:
        return None
    topic = None if path is None else path.parent.name.rsplit("-", 1)[0]
    return _Typed(loaded, topic)


def _iso(value: dt.datetime | dt.time) -> str:
    """ISO-8601 with milliseconds, or microseconds when they are not whole milliseconds."""
    frac = f".{value.microsecond:06d}" if value.microsecond % 1000 else f".{value.microsecond // 1000:03d}"
    return value.strftime("%Y-%m-%dT%H:%M:%S" if isinstance(value, dt.datetime) else "%H:%M:%S") + frac


def _numbers_type(t: pa.DataType) -> pa.DataType:
    """``t`` with its timestamps as int64 and its dates as int32 (what ``as_py`` gives for any year)."""
    import pyarrow as pa

    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_numbers_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_type, t.item_field.with_type(_numbers_type(t.item_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_numbers_type(t.value_type)))
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date32(t):
        return pa.int32()
    return t


def _wide_iso(count: int, unit: str) -> str:
    """A timestamp (``count`` of ``unit`` since the epoch) or a date (days: ``unit`` ``d``) that Python's
    datetime cannot hold (past year 9999, before year 1) as ISO-8601 text with a signed year of more than
    four digits (as ISO 8601's expanded years and Java's ``Instant.toString``)."""
    per_second = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000, "d": 1}[unit]
    seconds, frac = divmod(count, per_second) if unit != "d" else (count * 86400, 0)
    days, secs = divmod(seconds, 86400)
    z = days + 719468  # civil_from_days (H. Hinnant): proleptic Gregorian
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    text = f"{'+' if year > 9999 else '-' if year < 0 else ''}{abs(year):04d}-{month:02d}-{day:02d}"
    if unit == "d":
        return text
    micros = frac * 1_000_000 // per_second
    clock = f"{secs // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}"
    return f"{text}T{clock}" + (f".{micros:06d}" if micros % 1000 else f".{micros // 1000:03d}")


def json_value(value: Any, t: pa.DataType) -> Any:
    """A decoded Arrow value (``as_py``'s Python value of type ``t``, docs/typed-tables.md's mapping) as
    JSON: structs as objects (every field), maps as objects with string keys, decimals as strings with
    the type's scale (uint64's decimal(20, 0) as an integer), bytes as base64 (as everywhere in ``dump``),
    timestamps ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (``Z`` for UTC ones; microseconds when not whole
    milliseconds), dates ``YYYY-MM-DD``, times ``HH:MM:SS.mmm``, durations in seconds as Protobuf's JSON
    writes them (``1.5s``), a float that JSON cannot hold (NaN, infinities) as its name."""
    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: json_value(value.get(f.name), f.type) for f in t}
    if pa.types.is_map(t):
        return {str(json_value(k, t.key_type)): json_value(v, t.item_type) for k, v in value}
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [json_value(v, t.value_type) for v in value]
    if pa.types.is_timestamp(t):
        text = _wide_iso(value, t.unit) if isinstance(value, int) else _iso(value)
        return text + ("Z" if t.tz is not None else "")
    if pa.types.is_date(t):
        return _wide_iso(value, "d") if isinstance(value, int) else value.isoformat()
    if pa.types.is_time(t):
        return _iso(value)
    if pa.types.is_duration(t):
        return f"{decimal.Decimal(value // dt.timedelta(microseconds=1)).scaleb(-6).normalize():f}s"
    if pa.types.is_decimal(t):
        if t.precision == 20 and t.scale == 0:
            return int(value)
        return f"{value:.{t.scale}f}"
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value
