"""The generated layouts of Kafka's messages (``kafka_layouts.py``) as the decoders use them.

Kafka changed some record layouts without a new version: in 4.1 ``ShareSnapshotValue`` and
``ShareUpdateValue`` v0 (SnapshotEpoch uint16 -> int32, CreateTimestamp, WriteTimestamp),
``ShareGroupMetadataValue`` v0 (MetadataHash) and ``ShareGroupStatePartitionMetadataValue`` v0
(InitializingTopics first) (K: share-coordinator/src/main/resources/common/message/*.json,
group-coordinator/src/main/resources/common/message/*.json at tags 4.0.0 and 4.1.1). Without the
cluster's feature levels at hand, :func:`read_exact` tries every known layout of the version and
accepts one only when exactly one decodes the bytes to their last byte. Layouts that differ only by
tagged fields are one layout here (the newest is read: an older record simply lacks the tags).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from logdoctor.errors import FormatError, UnsupportedError
from logdoctor.formats.internal.kafka_layouts import LAYOUTS, SOURCES, Layout
from logdoctor.formats.internal.protocol import ArrayOf, Field, FieldType, Message, StructType, read_message

__all__ = [
    "LAYOUTS", "SOURCES", "Candidate", "Layout", "candidates", "known_releases", "newest", "read_exact"
]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A layout to read a version with: the newest of the layouts that share its untagged wire shape,
    and the Kafka releases of all of them (``label``: "4.0-SNAPSHOT/4.0.0", "4.1.1/4.2.0")."""

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
    if len(layouts) == 1:
        fields, _ = read_message(layouts[0].message, data, version, start=start, what=what, source=source)
        return fields, layouts[0]
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


def for_writing(name: str, version: int, label: str | None = None) -> Candidate:
    """The layout to write ``name`` at ``version`` with: the one of ``label`` (a decoded record's
    ``"layout"``), else the newest. UnsupportedError for a version or label no layout has."""
    found = candidates(name, version)
    for c in found:
        if label is None or c.label == label:
            return c
    raise UnsupportedError(
        f"a layout of {name} v{version} ({', '.join(c.label for c in found) or 'none'})",
        found=str(label if found else version),
    )
