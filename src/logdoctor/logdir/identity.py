"""Who a log dir belongs to: the identity fields of its ``meta.properties`` (KIP-858 directory ids).

Every log dir of a KRaft broker carries ``cluster.id``, ``node.id`` and, from Kafka 3.7, a
``directory.id`` (a Kafka Uuid in its text form). The cluster metadata assigns each replica to a
directory id (PartitionRecord / PartitionChangeRecord ``directories``), so a dir's id is how the
controller knows where a replica lives.

Rules (K: = path in apache/kafka):

- K:metadata/.../properties/MetaPropertiesEnsemble.java ``verify``: every dir of a broker has the
  same cluster.id and node.id, and a directory.id that is neither reserved nor used by a sibling
  ("Duplicate directory ID ... found"); otherwise the broker does not start.
- K:core/.../server/KafkaRaftServer.scala ``initializeLogDirs``: a KRaft broker gives a dir without
  directory.id a new random one at startup and rewrites its meta.properties.
- K:server-common/.../common/DirectoryId.java: the first 100 ids are reserved; three have meanings
  in assignments: MIGRATING (all zero: a replica placed before directory assignment existed),
  UNASSIGNED (0, 1: not placed yet) and LOST (0, 2: an unknown offline dir).

Reading never raises: a missing or unreadable meta.properties is reported in the result.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from logdoctor.errors import FormatError
from logdoctor.logdir.files import read_file
from logdoctor.logdir.names import META_PROPERTIES_FILE, METADATA_TOPIC, PARTITION_METADATA_FILE

if TYPE_CHECKING:
    from logdoctor.logdir.refs import PartitionRef

__all__ = [
    "LOST",
    "MIGRATING",
    "UNASSIGNED",
    "DirIdentity",
    "describe_directory_id",
    "find_metadata_dir",
    "is_reserved_directory_id",
    "read_identities",
    "read_identity",
    "source_of",
    "topic_id_of",
]


METADATA_DIR_NAME = f"{METADATA_TOPIC}-0"


def _uuid_text(msb: int, lsb: int) -> str:
    raw = msb.to_bytes(8, "big") + lsb.to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


#: DirectoryId.MIGRATING: a replica placed before directory assignment existed (metadata < 3.7-IV2)
MIGRATING = _uuid_text(0, 0)
#: DirectoryId.UNASSIGNED: a replica not yet placed in any dir
UNASSIGNED = _uuid_text(0, 1)
#: DirectoryId.LOST: a replica in an offline dir the controller does not know
LOST = _uuid_text(0, 2)
_NAMES = {MIGRATING: "MIGRATING", UNASSIGNED: "UNASSIGNED", LOST: "LOST"}


def _uuid_bytes(text: str) -> bytes | None:
    if len(text) != 22:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError):
        return None
    return raw if len(raw) == 16 else None


def is_reserved_directory_id(directory_id: str) -> bool:
    """DirectoryId.reserved: the most significant 64 bits are 0 and the least below 100."""
    raw = _uuid_bytes(directory_id)
    if raw is None:
        return False
    return int.from_bytes(raw[:8], "big") == 0 and int.from_bytes(raw[8:], "big") < 100


def describe_directory_id(directory_id: str) -> str:
    """``UNASSIGNED``/``LOST``/``MIGRATING`` for the special ids, else the id itself."""
    return _NAMES.get(directory_id, directory_id)


@dataclass(frozen=True, slots=True)
class DirIdentity:
    """The identity fields of one log dir's meta.properties (None where absent or unreadable)."""

    path: str
    exists: bool  # meta.properties exists
    version: int | None = None  # 0 (ZooKeeper) or 1 (KRaft)
    node_id: int | None = None  # broker.id (v0) or node.id (v1)
    cluster_id: str | None = None
    directory_id: str | None = None
    error: str | None = None  # why it could not be read or parsed

    @property
    def readable(self) -> bool:
        return self.exists and self.error is None

    @property
    def is_kraft(self) -> bool:
        return self.version == 1

    @property
    def meta_path(self) -> str:
        return os.path.join(self.path, META_PROPERTIES_FILE)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_identity(log_dir: str | os.PathLike[str]) -> DirIdentity:
    """The identity of one log dir (never raises)."""
    from logdoctor.formats.properties import parse_meta_properties

    path = os.path.abspath(os.fspath(log_dir))
    meta_path = os.path.join(path, META_PROPERTIES_FILE)
    try:
        data = read_file(meta_path)
    except FileNotFoundError:
        return DirIdentity(path, exists=False)
    except OSError as e:
        return DirIdentity(path, exists=True, error=f"{meta_path}: {e.strerror or e}")
    try:
        meta = parse_meta_properties(data, source=meta_path)
    except FormatError as e:
        return DirIdentity(path, exists=True, error=str(e))
    return DirIdentity(path, True, meta.version, meta.node_id, meta.cluster_id, meta.directory_id)


def read_identities(log_dirs: Iterable[str | os.PathLike[str]]) -> list[DirIdentity]:
    """:func:`read_identity` of each log dir, in the order given."""
    return [read_identity(d) for d in log_dirs]


def find_metadata_dir(log_dirs: list[str] | tuple[str, ...]) -> str | None:
    """The ``__cluster_metadata-0`` folder in one of ``log_dirs`` (the broker's metadata.log.dir). Here,
    not in :mod:`logdoctor.logdir.metadata_image` (which re-exports it): every scan looks for it, only a
    broker with a metadata log needs the replay's module (issue 35)."""
    for d in log_dirs:
        p = os.path.join(os.fspath(d), METADATA_DIR_NAME)
        if os.path.isdir(p) and not os.path.islink(p):  # a symlink out of the log dir is never followed
            return p
    return None


def topic_id_of(ref: PartitionRef) -> str | None:
    """The topic id of a partition folder's ``partition.metadata``, read through its storage (local or at a
    URI); None when missing or unreadable."""
    from logdoctor.formats.partition_metadata import parse_partition_metadata

    location = ref.storage.join(ref.path, PARTITION_METADATA_FILE)
    try:
        return parse_partition_metadata(ref.storage.read(location), source=location).topic_id
    except (OSError, ValueError, FormatError):
        return None


def source_of(ref: PartitionRef) -> tuple[str | None, str | None]:
    """Whose partition ``ref`` is: the ``cluster.id`` of its log dir's meta.properties and its topic id
    (:func:`topic_id_of`), read through its storage; each None when missing or unreadable. Two clusters'
    topics of one name, or a topic deleted and created again, differ in one or the other."""
    from logdoctor.formats.properties import parse_meta_properties

    location = ref.storage.join(ref.log_dir, META_PROPERTIES_FILE)
    try:
        cluster = parse_meta_properties(ref.storage.read(location), source=location).cluster_id
    except (OSError, ValueError, FormatError):
        cluster = None
    return cluster, topic_id_of(ref)
