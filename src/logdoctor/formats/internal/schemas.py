"""Kafka's internal-record message specs as the decoders' tables.

Built from ``kafka_layouts.py``, which scripts/gen_kafka_layouts.py generates from Kafka's JSON specs
(../shared/kafka-schemas: 4.0.0-SNAPSHOT; ../shared/kafka-schemas-4.2: 4.0.0, 4.1.1, 4.2.0 and a
later trunk; the specs inside the jars of 4.3.1 and 4.4.0; field names in snake_case):

- ``group-coordinator/src/main/resources/common/message/*.json``: the ``__consumer_offsets``
  records (OffsetCommit, GroupMetadata, the KIP-848 consumer group, KIP-932 share group and KIP-1071
  streams group records). The record type of a key is its int16 version prefix; 4.0's files give it
  as the key's version, 4.1+'s as the key's ``apiKey`` with key version 0: the same bytes
  (K: group-coordinator/.../GroupCoordinatorRecordSerde.java, coordinator-common/.../
  CoordinatorRecordSerde.java).
- ``clients/src/main/resources/common/message/ConsumerProtocol{Subscription,Assignment}.json``:
  the "consumer" embedded protocol inside GroupMetadataValue members.
- ``transaction-coordinator/src/main/resources/common/message/TransactionLog{Key,Value}.json``.
- ``share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}{Key,Value}.json``.
- ``metadata/src/main/resources/common/metadata/*.json``: every KRaft metadata record, plus two
  hand-written preview-era (3.0-3.4) records trunk has dropped, AccessControlRecord (6) and
  RemoveFeatureLevelRecord (16), whose api keys nothing else reuses.

A coordinator record type maps to the *name* of its value message; ``layouts.read_exact`` picks the
layout (several where Kafka changed one under the same version). KIP-848's early-access 3.7 layouts
of ConsumerGroup*Value (same version 0, other fields) are not readable; 3.8+ layouts are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from logdoctor.formats.internal.layouts import LAYOUTS, newest
from logdoctor.formats.internal.protocol import (
    _NO_DEFAULT,
    NONE,
    ArrayOf,
    Field,
    FieldType,
    Message,
    StructType,
    Versions,
)


def V(text: str) -> Versions:
    return Versions.parse(text)


def F(
    name: str,
    type_: FieldType,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    tagged: str | None = None,
    tag: int | None = None,
    default: Any = _NO_DEFAULT,
) -> Field:
    return Field(
        name=name,
        type=type_,
        versions=V(versions),
        nullable=V(nullable) if nullable else NONE,
        tagged=V(tagged) if tagged else NONE,
        tag=tag,
        default=default,
    )


def A(element: FieldType) -> ArrayOf:
    return ArrayOf(element)


def S(name: str, *fields: Field) -> StructType:
    return StructType(name, tuple(fields))


def M(name: str, valid: str, flexible: str, *fields: Field, api_key: int | None = None) -> Message:
    return Message(name, V(valid), V(flexible), tuple(fields), api_key)


def in_module(file: str, module: str) -> bool:
    """Whether a generated layout's file is one of Kafka module ``module`` (``group-coordinator``,
    ``metadata``, ...): ../shared's paths follow Kafka's tree (``group-coordinator/src/main/...``), a file
    inside a release's jar is ``.tools/kafka/V/lib/kafka-group-coordinator-V.jar!/common/message/...``."""
    jar, inside, _ = file.partition("!/")
    if inside:
        name = jar.rsplit("/", 1)[-1]
        return re.fullmatch(rf"kafka-{re.escape(module)}-\d+\.\d+\.\d+\.jar", name) is not None
    return f"{module}/" in file


class RecordType(NamedTuple):
    """A coordinator record type: its name, key message (read at the record type where the key's
    versions hold it, else at 0: 4.1+'s specs) and the name of its value message."""

    name: str
    key: Message
    value: str


def _coordinator_records(folder: str, names: dict[str, str] | None = None,
                         values: dict[str, str] | None = None) -> dict[int, RecordType]:
    """record type -> RecordType for every ``*Key`` spec of the generated files under ``folder``."""
    out: dict[int, RecordType] = {}
    for name, layouts in LAYOUTS.items():
        if not name.endswith("Key") or not any(in_module(f, folder) for lay in layouts for f in lay.files):
            continue
        base = name[: -len("Key")]
        for layout in layouts:
            if layout.api_key is not None:
                types: range | tuple[int, ...] = (layout.api_key,)
            else:
                types = range(layout.message.valid_versions.low, layout.message.valid_versions.high + 1)
            for record_type in types:
                out[record_type] = RecordType((names or {}).get(base, base), newest(name),
                                              (values or {}).get(base, base + "Value"))
    return dict(sorted(out.items()))


def known_types(records: Mapping[int, object]) -> str:
    """"0-17, 19-23": the record types of a table, as ranges."""
    spans: list[list[int]] = []
    for t in sorted(records):
        if spans and spans[-1][1] == t - 1:
            spans[-1][1] = t
        else:
            spans.append([t, t])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def known_text(records: dict[int, RecordType]) -> str:
    """The record types of a table and the Kafka releases whose definitions they follow."""
    from logdoctor.formats.internal.layouts import SOURCES

    return f"{known_types(records)}; definitions of Kafka {', '.join(SOURCES)}"


# =============================================================================================
# __consumer_offsets
# =============================================================================================

# Type 0 (LegacyOffsetCommitKey in 4.1+, value version 0 only) is read with OffsetCommitValue,
# whose version 0 is the same layout: older brokers paired key version 0 with more value versions.
CONSUMER_OFFSETS_RECORDS: dict[int, RecordType] = _coordinator_records(
    "group-coordinator",
    names={"LegacyOffsetCommit": "OffsetCommit"},
    values={"LegacyOffsetCommit": "OffsetCommitValue"},
)

# The "consumer" protocol embedded in GroupMetadataValue members (and in classic members'
# supported protocols): int16 version + struct; a newer version is read as the highest known
# one (K: clients/.../consumer/internals/ConsumerProtocol.java).
CONSUMER_PROTOCOL_SUBSCRIPTION = newest("ConsumerProtocolSubscription")
CONSUMER_PROTOCOL_ASSIGNMENT = newest("ConsumerProtocolAssignment")

# =============================================================================================
# __transaction_state, __share_group_state
# =============================================================================================

TRANSACTION_LOG_RECORDS: dict[int, RecordType] = _coordinator_records("transaction-coordinator")
SHARE_GROUP_STATE_RECORDS: dict[int, RecordType] = _coordinator_records("share-coordinator")
# TransactionState ids (K: core/.../transaction/TransactionMetadata.scala, TransactionState.java).
TRANSACTION_STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}

# =============================================================================================
# __cluster_metadata (KRaft metadata records: every one has flexibleVersions "0+")
# =============================================================================================


def _meta(api_key: int, name: str, valid: str, *fields: Field) -> Message:
    return M(name, valid, "0+", *fields, api_key=api_key)


# Preview-era KRaft only (3.0-3.4 and 3.0-3.2 source trees; no JSON file of ../shared has them).
_PREVIEW_METADATA = (
    _meta(6, "AccessControlRecord", "0",
          F("resource_type", "int8"),
          F("resource_name", "string", nullable="0+"),
          F("pattern_type", "int8"),
          F("principal", "string"),
          F("host", "string"),
          F("operation", "int8"),
          F("permission_type", "int8")),
    _meta(16, "RemoveFeatureLevelRecord", "0",
          F("name", "string")),
)


def _metadata_names(kind: str, folder: str) -> dict[int, str]:
    out = {}
    for name, layouts in LAYOUTS.items():
        lay = layouts[-1]
        if lay.api_key is not None and lay.kind == kind and any(in_module(f, folder) for f in lay.files):
            out[lay.api_key] = name
    return dict(sorted(out.items()))


#: api key -> record name (its layouts: ``layouts.LAYOUTS[name]``)
METADATA_RECORD_NAMES: dict[int, str] = _metadata_names("metadata", "metadata")
#: api key -> the newest layout of each metadata record
METADATA_RECORDS: dict[int, Message] = dict(sorted(
    {**{k: newest(n) for k, n in METADATA_RECORD_NAMES.items()},
     **{m.api_key: m for m in _PREVIEW_METADATA}}.items()  # type: ignore[misc]
))
METADATA_RECORDS_BY_NAME: dict[str, Message] = {m.name: m for m in METADATA_RECORDS.values()}
PREVIEW_METADATA_RECORDS: dict[str, Message] = {m.name: m for m in _PREVIEW_METADATA}
#: api key -> remote log metadata record name (storage/.../RemoteLogSegmentMetadata*Record.json ...)
REMOTE_LOG_METADATA_RECORD_NAMES: dict[int, str] = _metadata_names("metadata", "storage")

_DECODED_MODULES = ("group-coordinator", "transaction-coordinator", "share-coordinator", "metadata")
_DECODED_NAMES = ("ConsumerProtocol", "RemoteLogSegment", "RemotePartition")


def _decoded_here(file: str) -> bool:
    return any(in_module(file, m) for m in _DECODED_MODULES) or any(n in file for n in _DECODED_NAMES)



# Every layout of the records these decoders read (generated and hand-written), by name (older layouts
# as "Name@releases"); tests walk them all.
ALL_MESSAGES: dict[str, Message] = {
    **{(name if i == len(lays) - 1 else f"{name}@{'/'.join(lay.releases)}"): lay.message
       for name, lays in LAYOUTS.items() for i, lay in enumerate(lays)
       if any(_decoded_here(f) for f in lay.files)},
    **PREVIEW_METADATA_RECORDS,
}
