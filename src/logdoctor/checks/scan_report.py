"""What a scan returns: one report per log dir (its root state and findings) and the whole scan's."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from logdoctor.checks.access import BrokerUser
from logdoctor.checks.context import Depth, PartitionReport
from logdoctor.checks.findings import Finding, Severity, exit_code
from logdoctor.logdir.disk import DiskUsage

if TYPE_CHECKING:  # the replays' modules load only where a scan has a metadata log / remote log metadata
    from logdoctor.logdir.metadata_image import MetadataImage
    from logdoctor.logdir.remote_metadata import RemoteLogMetadata


class ScanUsageError(Exception):
    """Bad arguments (e.g. a path that is not a directory): exit code 64."""


@dataclass(slots=True)
class LogDirReport:
    path: str
    broker_user: BrokerUser
    mode: str | None = None  # "zookeeper" | "kraft" | None
    cluster_id: str | None = None
    node_id: int | None = None
    locked: bool = False
    clean_shutdown: bool = False
    partitions: int = 0
    findings: list[Finding] = field(default_factory=list)
    disk: DiskUsage | None = None  # its file system as df prints it (checks.disk_space)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "mode": self.mode,
            "cluster_id": self.cluster_id,
            "node_id": self.node_id,
            "locked": self.locked,
            "clean_shutdown": self.clean_shutdown,
            "partitions": self.partitions,
            "broker_user": self.broker_user.name,
            "disk": self.disk.to_json() if self.disk is not None else None,
        }


@dataclass(slots=True)
class ScanReport:
    depth: Depth
    now_ms: int
    log_dirs: list[LogDirReport]
    partitions: list[PartitionReport]
    findings: list[Finding]
    elapsed_s: float = 0.0
    bytes_read: int = 0
    metadata: MetadataImage | None = None  # the replay of the broker's __cluster_metadata-0, if scanned
    #: the replay of the __remote_log_metadata partitions in the log dirs (None: no sign of remote storage)
    remote: RemoteLogMetadata | None = None
    #: each log dir's cluster feature levels (the share-group layouts: checks.share_groups), where the
    #: broker's metadata log gives them
    features: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)

    def counts(self) -> dict[str, int]:
        """Problems by severity, one per root cause: a consequence (``caused_by``) is counted apart, as
        ``consequences``, never in the totals (it is listed, and repaired, with its cause)."""
        c = Counter(f.severity for f in self.findings if f.caused_by is None)
        return {
            "errors": c[Severity.ERROR],
            "warnings": c[Severity.WARNING],
            "info": c[Severity.INFO],
            "consequences": sum(1 for f in self.findings if f.caused_by is not None),
        }

    def to_json(self) -> dict[str, Any]:
        configs: dict[int, Any] = {}  # the partitions of a topic share one TopicConfig: its JSON made once
        return {
            "depth": self.depth.name.lower(),
            "now_ms": self.now_ms,
            "log_dirs": [d.to_json() for d in self.log_dirs],
            "partitions": [p.to_json(configs) for p in self.partitions],
            "findings": [f.to_json() for f in self.findings],
            "summary": {**self.counts(), "exit_code": self.exit_code, "bytes_read": self.bytes_read},
            "metadata": self.metadata.summary() if self.metadata is not None else None,
            "remote_log_metadata": self.remote.summary() if self.remote is not None else None,
        }
