"""Checks of a KRaft node's metadata log (``__cluster_metadata-0``) and its ``bootstrap.checkpoint``.

What the node does with each at startup (K: = path in apache/kafka):

- K:core/.../raft/KafkaMetadataLog.scala ``recoverSnapshots``: partial (``.checkpoint.part``) and
  ``.checkpoint.deleted`` snapshots and those below the log start offset are deleted; when the log
  start offset is above 0 there must be a snapshot at or above it, else "Inconsistent snapshot
  state" stops the node. The latest snapshot is what the node loads first
  (K:raft/.../snapshot/RecordsSnapshotReader.java: header first, footer last, CRCs valid).
- K:raft/.../raft/QuorumState.java ``initialize``: a quorum-state whose epoch is below the last
  epoch written in the log is overridden ("Epoch from quorum store file ... is smaller than last
  written epoch") and the node starts unattached at the log's epoch; an unreadable quorum-state
  stops it (K:raft/.../FileQuorumStateStore.java).
- K:metadata/.../bootstrap/BootstrapDirectory.java ``read``: ``bootstrap.checkpoint`` of the
  metadata log dir is read at every start (KafkaRaftServer.initializeLogDirs); unreadable, the node
  does not start.
- A snapshot id is (end offset, epoch): the epoch of its last record (offset end - 1), so where the
  log still holds that offset its leader epoch must be the snapshot's
  (K:raft/.../snapshot/Snapshots.java, ReplicatedLog.validateOffsetAndEpoch).
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from logdoctor.checks import catalog
from logdoctor.checks.findings import Finding, Severity
from logdoctor.errors import FormatError
from logdoctor.logdir.metadata_image import MetadataImage
from logdoctor.logdir.names import BOOTSTRAP_CHECKPOINT_FILE, QUORUM_STATE_FILE

__all__ = ["check_metadata_log"]


def _epoch_at(epochs: list[tuple[int, int]], offset: int) -> int | None:
    """The leader epoch of ``offset`` from leader-epoch-checkpoint entries (epoch, start offset)."""
    found = None
    for epoch, start in epochs:
        if start <= offset:
            found = epoch
    return found


def check_metadata_log(metadata_dir: str, image: MetadataImage | None) -> list[Finding]:
    """Findings about ``metadata_dir`` (a ``__cluster_metadata-0`` folder) and its log dir's bootstrap."""
    from logdoctor.formats.kraft_snapshot import parse_kraft_snapshot
    from logdoctor.formats.quorum_state import parse_quorum_state
    from logdoctor.logdir.files import read_file
    from logdoctor.logdir.model import LogDir

    log_dir = os.path.dirname(metadata_dir)
    make = partial(catalog.make, logdir=log_dir)
    out: list[Finding] = []
    ld = LogDir(log_dir)
    try:
        part = ld.partition("__cluster_metadata", 0)
    except KeyError:
        return out
    snapshots = part.kraft_snapshots  # (end offset, epoch, path), sorted
    segments = part.segments
    log_start = segments[0].base_offset if segments else None
    epochs = part.leader_epochs
    latest_good: tuple[int, int] | None = None
    for i, (end, epoch, path) in enumerate(snapshots):
        latest = i == len(snapshots) - 1
        try:
            parse_kraft_snapshot(read_file(path), name=path.name, source=str(path))
        except (FormatError, OSError) as e:
            out.append(
                make(
                    "METADATA_SNAPSHOT_CORRUPT",
                    str(path),
                    position=getattr(e, "position", None),
                    severity=None if latest else Severity.WARNING,
                    case=None if latest else "older",
                    error=e,
                )
            )
            continue
        latest_good = (end, epoch)
        log_epoch = (
            _epoch_at(epochs, end - 1) if epochs and log_start is not None and end - 1 >= log_start else None
        )
        if log_epoch is not None and log_epoch != epoch and end <= (part.log_end_offset or 0):
            out.append(
                make(
                    "METADATA_SNAPSHOT_MISMATCH",
                    str(path),
                    snapshot=path.name,
                    offset=end - 1,
                    epoch=epoch,
                    log_epoch=log_epoch,
                    details={"end_offset": end, "epoch": epoch, "log_epoch": log_epoch},
                )
            )
    if log_start is not None and log_start > 0 and not any(end >= log_start for end, _e, _p in snapshots):
        out.append(
            make(
                "METADATA_SNAPSHOT_MISSING",
                str(part.path),
                log_start_offset=log_start,
                snapshots=", ".join(p.name for _e, _p2, p in snapshots) or "none",
                details={"log_start_offset": log_start},
            )
        )
    # quorum-state against the log
    qpath = part.path / QUORUM_STATE_FILE
    if qpath.exists():
        try:
            qs = parse_quorum_state(read_file(qpath), source=str(qpath))
        except (FormatError, OSError) as e:
            out.append(
                make(
                    "QUORUM_STATE_CORRUPT",
                    str(qpath),
                    position=getattr(e, "position", None),
                    error=e,
                )
            )
            qs = None
        if qs is not None:
            written = max(
                [e for e, _s in epochs]
                + ([image.last_epoch] if image is not None else [])
                + ([latest_good[1]] if latest_good else [])
                + [-1]
            )
            if qs.leader_epoch < written:
                out.append(
                    make(
                        "QUORUM_STATE_MISMATCH",
                        str(qpath),
                        epoch=qs.leader_epoch,
                        log_epoch=written,
                        details={"quorum_state_epoch": qs.leader_epoch, "log_epoch": written},
                    )
                )
            voters = qs.current_voters
            if voters:
                for role, node in (("leader", qs.leader_id), ("voted-for node", qs.voted_id)):
                    if node >= 0 and node not in voters:
                        out.append(
                            make(
                                "QUORUM_STATE_MISMATCH",
                                str(qpath),
                                severity=Severity.WARNING,
                                case="role-not-a-voter",
                                node=node,
                                role=role,
                                voters=voters,
                                details={"node": node, "voters": voters},
                            )
                        )
        if qs is not None and image is not None:
            out.extend(_voters_against_the_log(qs, str(qpath), image, make))
    # bootstrap.checkpoint of the metadata log dir
    bpath = os.path.join(log_dir, BOOTSTRAP_CHECKPOINT_FILE)
    if os.path.exists(bpath):
        try:
            parse_kraft_snapshot(read_file(bpath), name=None, source=bpath)
        except (FormatError, OSError) as e:
            out.append(
                make(
                    "BOOTSTRAP_CHECKPOINT_CORRUPT",
                    bpath,
                    position=getattr(e, "position", None),
                    error=e,
                )
            )
    return out


def _voters_against_the_log(qs: Any, qpath: str, image: MetadataImage, make: Any) -> list[Finding]:
    """quorum-state's voters against the voters the metadata log records.

    A static quorum (quorum-state v0, Kafka up to 3.8 or kraft.version 0) keeps ``currentVoters``; every
    election writes a LeaderChangeMessage naming the voters (K:raft/.../LeaderState.java
    appendLeaderChangeMessage), and at startup the node refuses a state file whose voter set differs
    from its configured one ('Configured voter set ... is different from the voter set read from the
    state file', K:raft/.../QuorumState.java initialize, 3.x). A dynamic quorum (v1, KIP-853) keeps
    no voters in the file: the log's latest VotersRecord is the set, and the file's leader and
    voted-for node must be among them.
    """
    out: list[Finding] = []
    if qs.current_voters and image.leader_change is not None:
        leader, logged = image.leader_change
        if logged and set(logged) != set(qs.current_voters):
            out.append(
                make(
                    "QUORUM_STATE_MISMATCH",
                    qpath,
                    severity=Severity.WARNING,
                    case="voters-not-the-logs",
                    voters=sorted(qs.current_voters),
                    leader=leader,
                    log_voters=list(logged),
                    details={"quorum_state_voters": sorted(qs.current_voters), "log_voters": list(logged)},
                )
            )
    if qs.data_version >= 1 and image.voters:
        for role, node in (("leader", qs.leader_id), ("voted-for node", qs.voted_id)):
            if node >= 0 and node not in image.voters:
                out.append(
                    make(
                        "QUORUM_STATE_MISMATCH",
                        qpath,
                        severity=Severity.WARNING,
                        case="role-not-in-voters-record",
                        node=node,
                        role=role,
                        log_voters=list(image.voters),
                        details={"node": node, "log_voters": list(image.voters)},
                    )
                )
    return out
