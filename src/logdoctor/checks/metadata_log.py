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
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from logdoctor.checks import catalog
from logdoctor.checks.findings import Finding, Severity
from logdoctor.errors import FormatError
from logdoctor.logdir.metadata_image import MetadataImage
from logdoctor.logdir.names import BOOTSTRAP_CHECKPOINT_FILE, QUORUM_STATE_FILE

__all__ = [
    "MetadataLogLoss",
    "check_metadata_log",
    "controller_metadata_lost",
    "metadata_log_corrupt",
    "metadata_log_loss",
    "quorum_voters",
]


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
            if qs.current_voters:
                out.extend(
                    _roles_not_voters(qs, str(qpath), "role-not-a-voter", "voters", qs.current_voters, make)
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
        out.extend(
            _roles_not_voters(qs, qpath, "role-not-in-voters-record", "log_voters", list(image.voters), make)
        )
    return out


def _roles_not_voters(
    qs: Any, qpath: str, case: str, name: str, voters: list[int], make: Any
) -> list[Finding]:
    """QUORUM_STATE_MISMATCH of quorum-state's leader and voted-for node when not among ``voters`` (the
    finding's field ``name``: the file's own voters, or the log's)."""
    return [
        make(
            "QUORUM_STATE_MISMATCH",
            qpath,
            severity=Severity.WARNING,
            case=case,
            node=node,
            role=role,
            details={"node": node, name: voters},
            **{name: voters},
        )
        for role, node in (("leader", qs.leader_id), ("voted-for node", qs.voted_id))
        if node >= 0 and node not in voters
    ]


# --- a corrupt metadata log: what a truncation loses, and who else holds the log ----------------------


@dataclass(frozen=True, slots=True)
class MetadataLogLoss:
    """What truncating a node's ``__cluster_metadata-0`` at ``cut`` costs, and whether another node holds
    the log.

    ``voters``: quorum-state's ``currentVoters`` (static quorum), else the voters of the log's latest
    VotersRecord or LeaderChangeMessage (None: unknown). ``snapshot``: (end offset, epoch) of the latest
    readable snapshot. At startup K:core/.../raft/KafkaMetadataLog.scala truncates the log fully to the
    latest snapshot when that snapshot ends beyond the log end (``truncateToLatestSnapshot``,
    K:raft/.../ReplicatedLog.java), so the state up to the snapshot's end offset survives any cut; the
    records from max(cut, snapshot end) to the log end exist nowhere else on this node. A follower or
    observer fetches what it lacks from the quorum's leader (K:raft/.../KafkaRaftClient.java: Fetch, and
    FetchSnapshot when its log ends below the leader's log start); the last voter has no one to fetch from.
    """

    node_id: int | None
    voters: tuple[int, ...] | None
    cut: int
    log_end: int
    snapshot: tuple[int, int] | None

    @property
    def others(self) -> tuple[int, ...]:
        return tuple(v for v in self.voters or () if v != self.node_id)

    @property
    def last_voter(self) -> bool:
        """True unless another node is known to hold the log (unknown voters count as the last voter)."""
        return not self.others

    @property
    def lost_from(self) -> int:
        return max(self.cut, self.snapshot[0]) if self.snapshot is not None else self.cut

    @property
    def lost(self) -> int:
        return max(0, self.log_end - self.lost_from)

    def voters_text(self) -> str:
        if not self.voters:
            return "the voters are unknown (no quorum-state voters, no VotersRecord): it may be the only copy"
        role = (
            f"node {self.node_id} is one of them"
            if self.node_id in self.voters
            else f"node {self.node_id} is an observer (a broker), not a voter"
        )
        return f"voters {list(self.voters)}; {role}"

    def loss_text(self) -> str:
        """One sentence: what a truncation at ``cut`` loses, and what the latest snapshot keeps."""
        if self.log_end <= self.cut:
            head = f"truncating it at offset {self.cut} loses no record"
        else:
            head = (
                f"truncating it at offset {self.cut} removes offsets {self.cut}-{self.log_end - 1} "
                f"({self.log_end - self.cut} of the log's records)"
            )
        if self.snapshot is None:
            return head + "; there is no readable snapshot, so those records exist nowhere else on this node"
        end, epoch = self.snapshot
        snap = f"the latest snapshot ends at offset {end} (epoch {epoch})"
        if end >= self.log_end:
            return f"{head}; {snap}, so the metadata state they built is kept in it"
        if end > self.cut:
            return (
                f"{head}; {snap}: the node loads it and only offsets {end}-{self.log_end - 1} ({self.lost} "
                "records after the snapshot) are lost"
            )
        return (
            f"{head}; {snap}, before the cut, so all {self.lost} records after the cut exist nowhere else "
            "on this node"
        )


def metadata_log_loss(
    segment: str, valid_bytes: int, log_end: int | None, image: MetadataImage | None = None
) -> MetadataLogLoss:
    """:class:`MetadataLogLoss` of cutting ``segment`` (a ``.log`` of ``__cluster_metadata-0``) at
    ``valid_bytes``; ``log_end`` is the log's end offset before the cut (None: unknown)."""
    from logdoctor.formats.quorum_state import parse_quorum_state
    from logdoctor.formats.records import scan_batches
    from logdoctor.logdir.files import map_file, read_file
    from logdoctor.logdir.identity import read_identity
    from logdoctor.logdir.metadata_image import replay
    from logdoctor.logdir.names import parse_segment_file

    mdir = os.path.dirname(segment)
    node = read_identity(os.path.dirname(mdir)).node_id
    parsed = parse_segment_file(os.path.basename(segment))
    cut = parsed.base_offset if parsed is not None else 0
    try:
        res = scan_batches(map_file(segment), source=segment, end=valid_bytes, verify_crc=False)
        if res.batches:
            cut = res.batches[-1].last_offset + 1
    except (OSError, FormatError):
        pass
    voters: tuple[int, ...] | None = None
    try:
        qs = parse_quorum_state(read_file(os.path.join(mdir, QUORUM_STATE_FILE)))
        if qs.current_voters:
            voters = tuple(sorted(qs.current_voters))
    except (OSError, FormatError):
        pass
    if image is None:
        image = replay(mdir)
    if voters is None and image.voters:
        voters = tuple(image.voters)
    if voters is None and image.leader_change is not None and image.leader_change[1]:
        voters = tuple(image.leader_change[1])
    end = max(
        cut, log_end if log_end is not None else cut, image.end_offset, _log_end_past(segment, valid_bytes)
    )
    return MetadataLogLoss(node, voters, cut, end, image.snapshot)


def _log_end_past(segment: str, valid_bytes: int) -> int:
    """The offset after the last batch header readable past the damage: in ``segment`` from ``valid_bytes``
    on (a batch whose CRC fails still says its offsets) and in the later segments of its folder."""
    from logdoctor.formats.records import iter_batches
    from logdoctor.logdir.files import map_file
    from logdoctor.logdir.names import parse_segment_file

    mdir = os.path.dirname(segment)
    here = parse_segment_file(os.path.basename(segment))
    paths = [(segment, valid_bytes)]
    try:
        for name in sorted(os.listdir(mdir)):
            seg = parse_segment_file(name)
            if (
                seg is not None
                and seg.suffix == ".log"
                and here is not None
                and seg.base_offset > here.base_offset
            ):
                paths.append((os.path.join(mdir, name), 0))
    except OSError:
        pass
    end = 0
    for path, start in paths:
        try:
            for batch in iter_batches(map_file(path), source=path, start=start, verify_crc=False):
                end = max(end, batch.last_offset + 1)
        except (OSError, FormatError):
            continue  # what is past the next bad header cannot be told
    return end


def metadata_log_corrupt(
    f: Finding, logdir: str, log_end: int | None, image: MetadataImage | None
) -> Finding:
    """A LOG_CORRUPT finding of ``__cluster_metadata-0``, said as what it is: the node's metadata log, with
    who else holds it, the latest snapshot, what a truncation loses, and the repair the last voter needs
    explicit consent for (never "delete the folder" nor a sync-replica)."""
    valid = f.details.get("valid_bytes")
    loss = metadata_log_loss(f.path, int(valid) if isinstance(valid, int) else 0, log_end, image)
    last = loss.last_voter
    folder = os.path.dirname(f.path)
    fields = {
        "damage": f.message,  # the LOG_CORRUPT finding's own (catalog) message: what is damaged where
        "loss": loss.loss_text(),
        "voters": loss.voters_text(),
        "folder": folder,
        "cut": loss.cut,
        "others": ", ".join(str(v) for v in loss.others),
        "consent": metadata_loss_command(logdir),
    }
    details = dict(f.details)
    details.update(
        metadata_log=True,
        node_id=loss.node_id,
        voters=list(loss.voters) if loss.voters else None,
        last_voter=last,
        cut_offset=loss.cut,
        log_end_offset=loss.log_end,
        snapshot=list(loss.snapshot) if loss.snapshot else None,
        lost_records=loss.lost,
    )
    return catalog.make(
        "LOG_CORRUPT",
        f.path,
        case="metadata-log-last-voter" if last else "metadata-log",
        logdir=logdir,
        position=f.position,
        offset=f.offset,
        severity=f.severity,
        details=details,
        **fields,
    )


def metadata_loss_command(logdir: str, *, deep: bool = False) -> str:
    """The repair that truncates the last voter's metadata log, with the consent it needs."""
    from logdoctor.checks.catalog import command, repair_argv

    deep_flag = ("--deep",) if deep else ()
    return command(repair_argv("LOG_CORRUPT", logdir, *deep_flag, "--allow-metadata-loss"))


# --- a controller whose metadata log is gone while brokers hold copies (issue 88 item 4) ----------------


def _has_segments(metadata_dir: str | None) -> bool:
    from logdoctor.logdir.names import parse_segment_file

    if metadata_dir is None:
        return False
    try:
        names = os.listdir(metadata_dir)
    except OSError:
        return False
    return any((seg := parse_segment_file(n)) is not None and seg.suffix == ".log" for n in names)


def _controllers_known(image: MetadataImage) -> dict[int, str]:
    """controller id -> why it is one, from one broker's metadata log dir: its quorum-state's voters (a
    static quorum's configured set, K:raft/.../FileQuorumStateStore.java), the log's latest VotersRecord or
    LeaderChangeMessage, and the controllers registered (RegisterControllerRecord, from metadata.version
    3.7-IV0: K:server-common/.../common/MetadataVersion.java ``isControllerRegistrationSupported``)."""
    from logdoctor.formats.quorum_state import parse_quorum_state
    from logdoctor.logdir.files import read_file

    out: dict[int, str] = {}
    qpath = os.path.join(image.metadata_dir, QUORUM_STATE_FILE)
    try:
        for v in parse_quorum_state(read_file(qpath), source=qpath).current_voters or ():
            out.setdefault(v, f"a voter in {qpath}")
    except (OSError, FormatError):
        pass
    for v in image.voters or ():
        out.setdefault(v, "a voter of the metadata log's VotersRecord")
    if image.leader_change is not None:
        for v in image.leader_change[1]:
            out.setdefault(v, "a voter of the metadata log's latest election")
    for c in image.controllers:
        out.setdefault(c, "registered by a RegisterControllerRecord of the metadata log")
    return out


def quorum_voters(image: MetadataImage | None) -> dict[str, Any]:
    """The controller quorum as one node's metadata log dir says it (the inventory's ``quorum_*`` columns):
    ``quorum_voters``, from ``quorum_source``: the log's latest VotersRecord (kraft.version 1, a
    ``dynamic`` quorum), else the voters of its latest LeaderChangeMessage, else its quorum-state's
    currentVoters (data_version 0: a ``static`` quorum's configured set, K:raft/.../raft/FileQuorumStateStore
    .java); every value None when none says it, or the log is empty or damaged (ZooKeeper mode: no image)."""
    from logdoctor.formats.quorum_state import parse_quorum_state
    from logdoctor.logdir.files import read_file

    unknown = dict.fromkeys(("quorum_voters", "quorum_source", "quorum_kind"))
    if image is None or image.errors or image.end_offset <= 0:
        return unknown
    if image.voters is not None:
        return {
            "quorum_voters": list(image.voters),
            "quorum_source": "the metadata log's latest VotersRecord",
            "quorum_kind": "dynamic",
        }
    if image.leader_change is not None:
        voters: list[int] | None = list(image.leader_change[1])
        source = "the voters of the metadata log's latest LeaderChangeMessage"
    else:
        qpath = os.path.join(image.metadata_dir, QUORUM_STATE_FILE)
        try:
            voters = parse_quorum_state(read_file(qpath), source=qpath).current_voters
        except (OSError, FormatError):
            return unknown
        source = "quorum-state's currentVoters"
    if not voters:
        return unknown
    return {"quorum_voters": sorted(voters), "quorum_source": source, "quorum_kind": "static"}


def controller_metadata_lost(groups: list[Any], images: Any) -> list[Finding]:
    """CONTROLLER_METADATA_LOST: a scanned log dir whose meta.properties names a controller of the cluster
    (:func:`_controllers_known`, from the scanned brokers' metadata logs) that holds no
    ``__cluster_metadata-0`` segments and no partition, while another scanned node of its cluster holds a
    readable copy of the metadata log. Its fix is the ``logdoctor rebuild-quorum`` plan (no --apply) from
    the cluster's scanned dirs, one ``--controller`` for each such controller (its endpoint when the
    chosen copy's VotersRecord, a dynamic quorum's, or a RegisterControllerRecord says it). Nothing when
    no scanned dir says a controller's log is gone.

    ``groups``: the scan's :class:`~logdoctor.checks.cross_dir.BrokerGroup` list; ``images``: metadata dir ->
    its replay."""
    from logdoctor.checks.catalog import command_phrase
    from logdoctor.logdir.model import LogDir
    from logdoctor.logdir.names import METADATA_TOPIC

    out: list[Finding] = []
    by_cluster: dict[str, list[Any]] = {}
    for g in groups:
        if g.key is not None:
            by_cluster.setdefault(g.key[0], []).append(g)
    for cluster, gs in by_cluster.items():
        copies = [
            (g, im)
            for g in gs
            if _has_segments(g.metadata_dir)
            and not (im := images(g.metadata_dir)).errors
            and im.end_offset > 0
        ]
        if not copies:
            continue
        known: dict[int, str] = {}
        for _g, im in copies:
            for node, why in _controllers_known(im).items():
                known.setdefault(node, why)
        holding = {g.key[1] for g, _im in copies}

        def no_partitions(g: Any) -> bool:  # a controller's dir holds none; a broker's other dirs may
            try:
                return all(p.topic == METADATA_TOPIC for d in g.dirs for p in LogDir.shared(d).partitions)
            except OSError:
                return False

        lost = [
            g
            for g in gs
            if g.key[1] in known
            and g.mode == "kraft"
            and g.key[1] not in holding
            and not _has_segments(g.metadata_dir)
            and no_partitions(g)
        ]
        # a dir without meta.properties (a new disk, never formatted), when one cluster is scanned: the
        # controller no scanned dir is, if there is one and one such dir (else whose it is is not known)
        unowned = [g for g in groups if g.key is None and not _has_segments(g.metadata_dir)]
        missing = sorted(set(known) - {g.key[1] for g in gs})
        if len(by_cluster) == 1 and len(unowned) == 1 and len(missing) == 1 and no_partitions(unowned[0]):
            node = missing[0]
            known[node] += (
                "; nothing in this dir says whose it is (no meta.properties): the one controller no "
                "scanned dir is"
            )
            lost.append(replace(unowned[0], key=(cluster, node)))
        if not lost:
            continue

        copy, image = max(copies, key=lambda c: (c[1].last_epoch, c[1].end_offset))
        # a dynamic quorum's voters listen where the chosen copy's VotersRecord says (rebuild-quorum then
        # needs ID@HOST:PORT for each), else where a RegisterControllerRecord registered them
        registered: dict[int, tuple[tuple[str, str, int], ...]] = {
            node: ends for node, ends in image.voter_endpoints.items() if ends
        }
        for _g, im in copies:
            for node, ends in im.controller_endpoints.items():
                if ends:
                    registered.setdefault(node, ends)
        endpoints = registered.get
        sources = [d for g in gs if g not in lost for d in g.dirs]
        argv = ["logdoctor", "rebuild-quorum", *sources]
        targets = {}
        for g in lost:
            node = g.key[1]
            here = g.dirs[0]
            formatted = any(
                os.path.lexists(os.path.join(here, n))
                for n in ("meta.properties", BOOTSTRAP_CHECKPOINT_FILE, f"{METADATA_TOPIC}-0")
            )
            # rebuild-quorum writes no formatted dir (it replaces no meta.properties): a new folder beside it
            targets[node] = here.rstrip(os.sep) + "-rebuilt" if formatted else here
            ends = endpoints(node)
            spec = f"{node}@{ends[0][1]}:{ends[0][2]}" if ends else str(node)
            argv += ["--controller", f"{spec}={targets[node]}"]
        for g in lost:
            node = g.key[1]
            endpoint = endpoints(node)
            out.append(
                catalog.make(
                    "CONTROLLER_METADATA_LOST",
                    g.dirs[0],
                    logdir=g.dirs[0],
                    node=node,
                    cluster=cluster,
                    why=known[node],
                    copy=os.path.dirname(image.metadata_dir),
                    broker=copy.key[1],
                    end_offset=image.end_offset,
                    target=targets[node],
                    rebuild=command_phrase("{command}", argv),
                    endpoint=(
                        f"; the endpoint is {endpoint[0][0]}://{endpoint[0][1]}:{endpoint[0][2]}, as "
                        + (
                            "the quorum's VotersRecord names it"
                            if node in image.voter_endpoints
                            else f"node {node} registered it"
                        )
                        if endpoint
                        else f"; no RegisterControllerRecord names node {node}'s endpoint: the plan's config "
                        "says where to put its HOST:PORT"
                    ),
                    details={
                        "node_id": node,
                        "controller": known[node],
                        "copy": os.path.dirname(image.metadata_dir),
                        "copy_end_offset": image.end_offset,
                        "target": targets[node],
                    },
                )
            )
    return out
