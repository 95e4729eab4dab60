"""Decoders for record keys and values: internal topics by folder name, and control records."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from logdoctor.cli.dump.options import DecoderChoice
from logdoctor.cli.jsonvalues import to_jsonable
from logdoctor.formats.record_types import Record
from logdoctor.logdir import names

RecordDecoder = Callable[[Record], dict[str, Any]]


def _topic_of(path: Path) -> str | None:
    if path.name == names.BOOTSTRAP_CHECKPOINT_FILE:
        return names.METADATA_TOPIC
    folder = path.parent.name or path.resolve().parent.name
    parent = names.parse_partition_dir(folder)
    return parent.topic if parent is not None else None


#: log dir -> its cluster's feature levels while a dump runs (:func:`features_read_once`; None: not kept):
#: a dump of a log dir's every file replays its metadata log once, not once per file of an internal topic
#: (a KRaft log dir's 50 ``__consumer_offsets`` folders: 50 replays of its metadata log)
_FEATURES: dict[str, Any] | None = None


def _features_of(path: Path) -> Any:
    """The feature levels of the cluster of the log dir holding ``path`` (a segment in a partition folder),
    as every reader finds them (:func:`logdoctor.logdir.metadata_image.log_dir_features`); None: not known.
    They choose between the layouts Kafka changed under one version (the 4.1 share-group records)."""
    from logdoctor.logdir.metadata_image import log_dir_features

    log_dir = str(path.resolve().parent.parent)
    if _FEATURES is None:
        return log_dir_features([log_dir]).get(log_dir)
    if log_dir not in _FEATURES:
        _FEATURES[log_dir] = log_dir_features([log_dir]).get(log_dir)
    return _FEATURES[log_dir]


@contextmanager
def features_read_once() -> Iterator[None]:
    """Within: each log dir's feature levels are read once (a dump's files), then forgotten."""
    global _FEATURES
    outer, _FEATURES = _FEATURES, {} if _FEATURES is None else _FEATURES
    try:
        yield
    finally:
        _FEATURES = outer


def _typed(path: Path, schemas: Sequence[str], force: bool) -> tuple[str | None, RecordDecoder | None]:
    """The Schema Registry's decoder of a data topic (:mod:`logdoctor.cli.dump.typed`), when there is a
    registry (a ``_schemas`` partition in the log dir, or ``schemas``) or ``force``."""
    if not force and not schemas and not any(path.resolve().parent.parent.glob("_schemas-*")):
        return None, None  # nothing to type with: the registry's code is not imported
    from logdoctor.cli.dump.typed import TYPED, typed_decoder

    decoder = typed_decoder(path, schemas, force)
    return (TYPED, decoder) if decoder is not None else (None, None)


def pick_decoder(
    choice: DecoderChoice, path: Path, schemas: Sequence[str] = (), *, typed: bool = True
) -> tuple[str | None, RecordDecoder | None]:
    """(name, decoder) for the records of ``path``: ``auto`` goes by the partition folder's topic, and
    (with ``typed``: ``--print-data``) types a data topic's keys and values when its log dir holds a
    ``_schemas`` partition or ``schemas`` (``--schemas``) names one."""
    from logdoctor.formats import internal

    if choice is DecoderChoice.NONE:
        return None, None
    if choice is DecoderChoice.TYPED:
        return _typed(path, schemas, True)
    if choice is DecoderChoice.AUTO:
        topic = _topic_of(path)
        name = {
            "__consumer_offsets": "consumer-offsets",
            "__transaction_state": "transactions",
            names.METADATA_TOPIC: "cluster-metadata",
            "__share_group_state": "share-group-state",
            "__remote_log_metadata": "remote-log-metadata",
            "_schemas": "schemas",
        }.get(topic or "")
        if name is None:
            return _typed(path, schemas, False) if typed and topic is not None else (None, None)
    else:
        name = choice.value
    levels = _features_of(path) if name in internal.FEATURE_DECODERS else None
    fn = internal.decoder_by_name(name, features=levels)
    if fn is None:
        return None, None
    source = str(path)

    def decode(record: Record) -> dict[str, Any]:
        # a record type or version newer than our tables: "unknown type N, version V" + raw bytes
        return internal.decode_lenient(fn, name, record.key, record.value, source=source)

    return name, decode


def decode_control(record: Record, source: str) -> dict[str, Any]:
    from logdoctor.formats.control import parse_control_record

    parsed = parse_control_record(record.key, record.value, source=source)
    out: dict[str, Any] = {
        "type": "control",
        "control_type": parsed.control_type.name,
        "type_id": parsed.type_id,
        "key_version": parsed.key_version,
    }
    if parsed.value is not None:
        out["value"] = to_jsonable(parsed.value)
    return out
