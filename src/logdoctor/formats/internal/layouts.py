"""The generated layouts of Kafka's messages (``kafka_layouts.py``) as the decoders use them.

Kafka changed some record layouts without a new version: in 4.1 ``ShareSnapshotValue`` and
``ShareUpdateValue`` v0 (SnapshotEpoch uint16 -> int32, CreateTimestamp, WriteTimestamp),
``ShareGroupMetadataValue`` v0 (MetadataHash) and ``ShareGroupStatePartitionMetadataValue`` v0
(InitializingTopics first) (K: share-coordinator/src/main/resources/common/message/*.json,
group-coordinator/src/main/resources/common/message/*.json at tags 4.0.0 and 4.1.1). Without the
cluster's feature levels at hand, :func:`read_exact` tries every known layout of the version and
accepts one only when exactly one decodes the bytes to their last byte. Layouts that differ only by
tagged fields are one layout here (the newest is read: an older record simply lacks the tags).

With the cluster's feature levels at hand (:class:`ClusterFeatures`, from the metadata log or
``bootstrap.checkpoint``, given by the log-dir layer), :func:`read_chosen` reads with the layout of the
releases the features allow first: that decides a record both layouts read exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from logdoctor.errors import FormatError, UnsupportedError
from logdoctor.formats.internal.kafka_layouts import LAYOUTS, SOURCES, Layout
from logdoctor.formats.internal.protocol import ArrayOf, Field, FieldType, Message, StructType, read_message

__all__ = [
    "LAYOUTS", "SOURCES", "Candidate", "ClusterFeatures", "Layout", "candidates", "known_releases", "newest",
    "read_chosen", "read_exact",
]

#: metadata.version 4.1-IV1: the first level no Kafka 4.0 broker supports, not even with
#: unstable.feature.versions.enable (4.0's MetadataVersion ends at 4.1-IV0, level 26; 4.1's production
#: level is 4.1-IV1, 27) (K:server-common/src/main/java/org/apache/kafka/server/common/MetadataVersion.java,
#: branches 4.0 and 4.1)
FIRST_LEVEL_WITHOUT_4_0 = 27
#: the highest metadata.version a Kafka 4.0 broker registers as supported (4.1-IV0, unstable in 4.0)
LAST_LEVEL_OF_4_0 = 26


@dataclass(frozen=True, slots=True)
class ClusterFeatures:
    """The finalized feature levels of a cluster, as its metadata log (or bootstrap.checkpoint) has them.

    ``share_version`` is 0 when the metadata names no ``share.version`` (a FeatureLevelRecord of level 0
    removes a feature); None when nothing is known. ``broker_max_metadata_versions``: the highest
    metadata.version each registered broker supports (RegisterBrokerRecord ``features``), whose software
    release it bounds. ``source``: the file or folder they were read from.
    """

    metadata_version: int | None = None
    share_version: int | None = None
    broker_max_metadata_versions: tuple[int, ...] = ()
    source: str | None = None

    def share_group_writer(self) -> tuple[str, str] | None:
        """("4.1+" or "4.0", why) : the Kafka releases whose brokers wrote the share-group records of this
        cluster (KIP-932), or None when the levels allow both.

        - ``share.version`` >= 1: the feature exists from Kafka 4.1 on (ShareVersion.java, new in 4.1) and
          is finalized only when every registered broker supports it: 4.1+.
        - ``metadata.version`` >= 4.1-IV1 (27): no 4.0 broker runs it: 4.1+.
        - every registered broker supports at most 4.1-IV0 (26) and the cluster has no share.version:
          only 4.0 brokers (share groups as 4.0's preview, ``group.share.enable``): 4.0.
        - otherwise both: 4.0 brokers, and 4.1/4.2 ones with the internal ``group.share.enable``, write
          share-group state without share.version (K:core/.../server/KafkaApis.scala
          ``isShareGroupProtocolEnabled``, 4.1 and 4.2).
        """
        if self.share_version is not None and self.share_version >= 1:
            return "4.1+", f"share.version {self.share_version}"
        mv = self.metadata_version
        if mv is not None and mv >= FIRST_LEVEL_WITHOUT_4_0:
            return "4.1+", f"metadata.version level {mv}"
        maxes = self.broker_max_metadata_versions
        if maxes and not self.share_version and max(maxes) <= LAST_LEVEL_OF_4_0:
            return "4.0", f"brokers supporting metadata.version up to level {max(maxes)}, no share.version"
        return None

    def allows(self, candidate: Candidate, writer: str) -> bool:
        """Whether ``candidate`` is a layout of the releases ``writer`` names ("4.1+" or "4.0")."""
        of_4_0 = [r.startswith("4.0") for r in candidate.releases]
        return any(of_4_0) if writer == "4.0" else not all(of_4_0)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A layout to read a version with: the newest of the layouts that share its untagged wire shape,
    and the Kafka releases of all of them (``label``: "4.0-SNAPSHOT/4.0.0", "4.1.1/4.2.0/4.3.1/4.4.0")."""

    message: Message
    releases: tuple[str, ...]

    @property
    def label(self) -> str:
        return "/".join(self.releases)


def newest(name: str) -> Message:
    """The newest layout of a message (KeyError for a name no JSON file defines)."""
    return LAYOUTS[name][-1].message


def known_releases(name: str) -> str:
    """"4.0-SNAPSHOT, 4.0.0, ..." : the Kafka releases whose definitions of ``name`` are known."""
    seen: list[str] = []
    for layout in LAYOUTS.get(name, ()):
        seen.extend(r for r in layout.releases if r not in seen)
    return ", ".join(seen) or "none"


def _shape(t: FieldType, version: int) -> Any:
    if isinstance(t, ArrayOf):
        return ("[]", _shape(t.element, version))
    if isinstance(t, StructType):
        return tuple(_field_shape(f, version) for f in t.fields if _untagged(f, version))
    return t


def _untagged(f: Field, version: int) -> bool:
    return version in f.versions and version not in f.tagged


def _field_shape(f: Field, version: int) -> Any:
    return (_shape(f.type, version), version in f.nullable)


@cache
def candidates(name: str, version: int) -> tuple[Candidate, ...]:
    """The layouts of ``name`` that hold ``version``, one per distinct untagged wire shape (the newest
    of each), newest first."""
    newest_of: dict[Any, Message] = {}
    releases: dict[Any, list[str]] = {}
    for layout in reversed(LAYOUTS.get(name, ())):
        m = layout.message
        if version not in m.valid_versions:
            continue
        shape = (version in m.flexible_versions, _shape(m.struct, version))
        newest_of.setdefault(shape, m)
        seen = releases.setdefault(shape, [])
        seen[:0] = [r for r in layout.releases if r not in seen]
    return tuple(Candidate(m, tuple(releases[shape])) for shape, m in newest_of.items())


def read_exact(
    name: str,
    data: bytes,
    version: int,
    *,
    start: int = 0,
    what: str,
    source: str | None = None,
) -> tuple[dict[str, Any], Candidate]:
    """Read ``data[start:]`` as ``name`` at ``version`` with the one layout that decodes it exactly.

    UnsupportedError for a version no layout has, or when more than one layout decodes the bytes
    (ambiguous: the caller shows the raw bytes); the newest layout's error when none does.
    """
    layouts = candidates(name, version)
    if not layouts:
        raise UnsupportedError(
            f"{what}: a version of {name} known to Kafka {known_releases(name)}",
            source=source,
            position=start,
            found=str(version),
        )
    decoded: list[tuple[dict[str, Any], Candidate]] = []
    first_error: FormatError | None = None
    for layout in layouts:
        try:
            fields, _ = read_message(layout.message, data, version, start=start, what=what, source=source)
        except FormatError as exc:
            first_error = first_error or exc
            continue
        decoded.append((fields, layout))
    if len(decoded) == 1:
        return decoded[0]
    if decoded:
        raise UnsupportedError(
            f"{what}: one layout of {name} v{version} that reads the bytes exactly",
            source=source,
            position=start,
            found="several: " + "; ".join(c.label for _, c in decoded),
        )
    assert first_error is not None
    raise first_error


def read_chosen(
    name: str,
    data: bytes,
    version: int,
    *,
    start: int = 0,
    what: str,
    source: str | None = None,
    features: ClusterFeatures | None = None,
) -> tuple[dict[str, Any], Candidate, str]:
    """:func:`read_exact`, the cluster's feature levels deciding between layouts: (fields, layout, how).

    ``how`` says what chose the layout: ``"exact read"`` (the only layout that reads the bytes exactly),
    ``"feature levels: share.version 1"`` (the layout of the releases the features allow read them
    exactly, whatever the others do), or ``"exact read, against the feature levels (...)"`` (the features'
    layout fails; another one reads the record exactly: a record older than the features, kept from
    before an upgrade).
    """
    layouts = candidates(name, version)
    writer = features.share_group_writer() if features is not None and len(layouts) > 1 else None
    if writer is None:
        fields, layout = read_exact(name, data, version, start=start, what=what, source=source)
        return fields, layout, "exact read"
    assert features is not None
    chosen = [c for c in layouts if features.allows(c, writer[0])]
    if len(chosen) == 1:
        try:
            fields, _ = read_message(chosen[0].message, data, version, start=start, what=what, source=source)
        except FormatError:
            pass
        else:
            return fields, chosen[0], f"feature levels: {writer[1]}"
    fields, layout = read_exact(name, data, version, start=start, what=what, source=source)
    return fields, layout, f"exact read, against the feature levels ({writer[1]}: Kafka {writer[0]})"


def for_writing(name: str, version: int, label: str | None = None) -> Candidate:
    """The layout to write ``name`` at ``version`` with: the one of ``label`` (a decoded record's
    ``"layout"``; a label written before newer releases joined it, "4.1.1/4.2.0" for
    "4.1.1/4.2.0/4.3.1/4.4.0", names the layout holding those releases), else the newest.
    UnsupportedError for a version or label no layout has."""
    found = candidates(name, version)
    for c in found:
        if label is None or c.label == label:
            return c
    wanted = set(label.split("/")) if label else set()
    for c in found:
        if wanted <= set(c.releases):
            return c
    raise UnsupportedError(
        f"a layout of {name} v{version} ({', '.join(c.label for c in found) or 'none'})",
        found=str(label if found else version),
    )
