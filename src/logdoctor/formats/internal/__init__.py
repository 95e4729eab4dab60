"""Decoders (and encoders) of Kafka's internal topics' keys and values.

- ``__consumer_offsets``: :func:`decode_consumer_offsets` / :func:`encode_consumer_offsets`
- ``__transaction_state``: :func:`decode_transaction_log` / :func:`encode_transaction_log`
- ``__cluster_metadata`` (and KRaft ``.checkpoint`` snapshots): :func:`decode_metadata_record` /
  :func:`encode_metadata_record`
- ``__share_group_state``: :func:`decode_share_group_state` / :func:`encode_share_group_state`
- ``__remote_log_metadata``: :func:`decode_remote_log_metadata` / :func:`encode_remote_log_metadata`
- ``_schemas`` (Confluent Schema Registry's store): the key's and value's JSON
  (:func:`decode_schemas_record`)

:func:`decode_lenient` never raises for a record type or version newer than these tables: it
returns ``{"type": "unknown type N, version V", ...}`` with the raw key and value (base64).

:func:`decoder_for_topic` picks one by topic (or partition folder) name for ``--decoder auto``;
:func:`decoder_by_name` by the CLI names. Each decoder takes ``(key, value)`` and returns a dict
with ``"type"`` and ``"version"``; an unknown record type or version raises ``UnsupportedError``,
bad bytes ``TruncatedError``/``CorruptRecordError`` with the position within the key or value.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from logdoctor.formats.internal.cluster_metadata import decode_metadata_record, encode_metadata_record
from logdoctor.formats.internal.consumer_offsets import decode_consumer_offsets, encode_consumer_offsets
from logdoctor.formats.internal.protocol import uuid_to_standard
from logdoctor.formats.internal.remote_log_metadata import (
    decode_remote_log_metadata,
    encode_remote_log_metadata,
)
from logdoctor.formats.internal.share_group_state import decode_share_group_state, encode_share_group_state
from logdoctor.formats.internal.transaction_log import decode_transaction_log, encode_transaction_log
from logdoctor.formats.internal.unknown import decode_lenient, unknown_record

Decoder = Callable[..., dict[str, Any]]

__all__ = [
    "DECODER_NAMES",
    "FEATURE_DECODERS",
    "Decoder",
    "decode_consumer_offsets",
    "decode_lenient",
    "decode_metadata_record",
    "decode_remote_log_metadata",
    "decode_schemas_record",
    "decode_share_group_state",
    "decode_transaction_log",
    "decoder_by_name",
    "decoder_for_topic",
    "encode_consumer_offsets",
    "encode_metadata_record",
    "encode_remote_log_metadata",
    "encode_share_group_state",
    "encode_transaction_log",
    "unknown_record",
    "uuid_to_standard",
]


def _metadata_key_value(key: Any, value: Any, *, source: str | None = None) -> dict[str, Any]:
    return decode_metadata_record(value, source=source)


def decode_schemas_record(key: Any, value: Any, *, source: str | None = None) -> dict[str, Any]:
    """A ``_schemas`` record: :func:`logdoctor.formats.registry.store.decode_store_record` (imported on the
    first such record: a scan of Kafka's own topics never loads the registry's modules)."""
    from logdoctor.formats.registry.store import decode_store_record

    return decode_store_record(key, value, source=source)


_BY_TOPIC: dict[str, tuple[str, Decoder]] = {
    "__consumer_offsets": ("consumer-offsets", decode_consumer_offsets),
    "__transaction_state": ("transactions", decode_transaction_log),
    "__cluster_metadata": ("cluster-metadata", _metadata_key_value),
    "__share_group_state": ("share-group-state", decode_share_group_state),
    "__remote_log_metadata": ("remote-log-metadata", decode_remote_log_metadata),
    "_schemas": ("schemas", decode_schemas_record),  # Schema Registry's default kafkastore.topic
}
DECODER_NAMES: dict[str, Decoder] = {name: fn for name, fn in _BY_TOPIC.values()}


def decoder_for_topic(topic: str) -> Decoder | None:
    """The (key, value) decoder for an internal topic, a ``topic-N`` folder name, or None."""
    entry = _BY_TOPIC.get(topic)
    if entry is None:
        match = re.fullmatch(r"(.+)-\d+", topic)
        if match:
            entry = _BY_TOPIC.get(match.group(1))
    return entry[1] if entry else None


#: the decoders whose layouts the cluster's feature levels choose (``features=``: Kafka changed the 4.1
#: share-group records under one version, :mod:`.layouts`)
FEATURE_DECODERS = ("consumer-offsets", "share-group-state")


def decoder_by_name(name: str, topic: str | None = None, features: Any = None) -> Decoder | None:
    """``auto`` (needs ``topic``), ``none`` (None), or one of :data:`DECODER_NAMES`; ``features`` (the
    cluster's ``layouts.ClusterFeatures``, None: not known) go to the decoders of :data:`FEATURE_DECODERS`."""
    if name == "none":
        return None
    if name == "auto":
        fn = decoder_for_topic(topic) if topic else None
    elif name not in DECODER_NAMES:
        raise ValueError(f"unknown decoder {name!r}: auto, none, {', '.join(DECODER_NAMES)}")
    else:
        fn = DECODER_NAMES[name]
    if fn is not None and features is not None and any(fn is DECODER_NAMES[n] for n in FEATURE_DECODERS):
        return functools.partial(fn, features=features)
    return fn
