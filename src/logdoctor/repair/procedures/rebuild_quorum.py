"""Rebuild a lost static KRaft controller quorum from the brokers' copies of the metadata log (issue 88).

Every broker holds a replica of ``__cluster_metadata-0`` in its metadata log dir, fetched from the leader;
the leader serves every fetcher, observers included, with ``Isolation.UNCOMMITTED``
(K:raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java ``tryCompleteFetchRequest``), so a copy
may end past what the lost quorum committed: the rebuilt leader commits it. What a controller needs to
start from such a copy, each file written by the plan:

- ``meta.properties`` version 1: ``node.id``, the brokers' ``cluster.id`` and a new ``directory.id``
  (K:metadata/.../properties/MetaProperties.java, as ``kafka-storage.sh format`` writes it).
- ``__cluster_metadata-0``: the chosen replica's segments, snapshots (``<end offset>-<epoch>.checkpoint``,
  K:raft/.../snapshot/Snapshots.java) and ``leader-epoch-checkpoint`` byte for byte; the controller loads
  them as a broker does (latest snapshot, then the log). The replica to copy is the one a Raft election
  would prefer: the highest last epoch, then the highest end offset
  (K:raft/.../raft/OffsetAndEpoch.java ``compareTo``, KafkaRaftClient.java ``handleVoteRequest``'s log check).
- ``quorum-state``: no leader, no vote, at the highest epoch of the log and of the given brokers'
  quorum-state files, so the node starts unattached there and elects a leader in the next epoch
  (K:raft/.../raft/QuorumState.java ``initialize``: a stored epoch below the log's is overridden by it), one
  every broker follows (a broker's fetch of an epoch later than the leader's is answered
  UNKNOWN_LEADER_EPOCH: KafkaRaftClient.java ``validateLeaderOnlyRequest``); data_version 0 with the new
  voters, as kraft.version 0 writes it (K:raft/.../raft/FileQuorumStateStore.java, ElectionState.java).
- ``bootstrap.checkpoint`` of the chosen broker's metadata log dir, when it has one (read at every start,
  used only on an empty log: K:metadata/.../bootstrap/BootstrapDirectory.java).
- Producer ids: the controller hands out the next block from the last ProducerIdsRecord's
  ``nextProducerId`` (K:metadata/.../controller/ProducerIdControlManager.java ``generateNextProducerId``,
  ``replay``: a record must move it forward). A broker hands out ids of a block as soon as the controller
  committed its record, which the chosen copy may not hold. So the plan reads every producer id the given
  log dirs show in use (each partition's latest producer snapshot and active segment, the
  ``__transaction_state`` records) and, when one is at or past that ``nextProducerId``, appends a
  ProducerIdsRecord past it in a new segment, in the epoch after the copy's last one: a broker whose copy
  holds more records of that epoch than the chosen one then truncates to it
  (K:raft/.../raft/KafkaRaftClient.java, the leader's ``validateOffsetAndEpoch`` answer) instead of keeping
  a different record at the same offset and epoch.

- A dynamic quorum (KIP-853, kraft.version 1: the copy holds a VotersRecord): the voter set is the log's
  latest VotersRecord, committed or not (K:raft/.../raft/QuorumState.java ``isVoter``:
  ``partitionState.lastVoterSet()``, read by K:raft/.../raft/internals/KRaftControlRecordStateMachine.java),
  and a node is a voter only when both its id and the ``directory.id`` of its meta.properties match one
  (K:raft/.../raft/internals/VoterSet.java ``isVoter``). So a control batch of one VotersRecord naming the
  new controllers (id, new directory id, CONTROLLER endpoint) is appended, in the same new segment and
  epoch as the ProducerIdsRecord; ``quorum-state`` is written with data_version 1 (KRaftVersion.java
  ``quorumStateVersion``); every node then finds the quorum by ``controller.quorum.bootstrap.servers``.

A run while a controller still answers at an endpoint the copies register (RegisterControllerRecord) or a
``--controller`` names is refused: a rebuilt quorum beside a live one splits the cluster
(:func:`controller_answers`); ``--resume`` tries the same endpoints again before it writes
(:func:`refuse_resume_beside_live_controllers`).
"""

from __future__ import annotations

import os
import re
import socket
import struct
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from logdoctor.errors import FormatError
from logdoctor.formats.checkpoint import (
    loaded_epochs,
    new_leader_epoch_checkpoint,
    parse_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from logdoctor.formats.partition_metadata import uuid_from_kafka, uuid_to_kafka
from logdoctor.formats.properties import MetaProperties, write_meta_properties
from logdoctor.formats.quorum_state import QuorumState, parse_quorum_state, write_quorum_state
from logdoctor.logdir.files import read_file
from logdoctor.logdir.identity import is_reserved_directory_id
from logdoctor.logdir.names import (
    BOOTSTRAP_CHECKPOINT_FILE,
    LEADER_EPOCH_CHECKPOINT_FILE,
    META_PROPERTIES_FILE,
    METADATA_TOPIC,
    QUORUM_STATE_FILE,
)
from logdoctor.repair import safety
from logdoctor.repair.plan import Action, Plan
from logdoctor.repair.procedures.common import (
    ProcedurePlan,
    ProcedureRefused,
    ProcedureUsageError,
    file_writes,
    new_plan,
    read_meta,
)
from logdoctor.repair.steps.mkdir import make_dir

__all__ = ["PROCEDURE", "Candidate", "ControllerTarget", "parse_controller", "plan_rebuild_quorum"]

PROCEDURE = "rebuild-quorum"
METADATA_DIR = f"{METADATA_TOPIC}-0"
PRODUCER_ID_BLOCK_SIZE = 1000  # K:server-common/.../common/ProducerIdsBlock.java
_COPIED = re.compile(r"\d{20}\.log|\d{20}-\d{10}\.checkpoint|leader-epoch-checkpoint|partition\.metadata")
CONTROLLER_LISTENER = "CONTROLLER"  # controller.listener.names of the printed config
_VOTER = re.compile(r"(\d+)@(\[[^\]]+\]|[^:@=\[\]]+):(\d+)")


@dataclass(frozen=True, slots=True)
class ControllerTarget:
    node_id: int
    host: str | None  # None: its CONTROLLER listener was not given (``ID=DIR``): the printed config says so
    port: int | None
    directory: str  # the new controller's metadata log dir (its log.dirs / metadata.log.dir)

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}" if self.host is not None else "HOST:PORT"

    @property
    def voter(self) -> str:
        return f"{self.node_id}@{self.endpoint}"


def parse_controller(text: str) -> ControllerTarget:
    """``ID@HOST:PORT=DIR`` (the voter as ``controller.quorum.voters`` names it, then its metadata dir), or
    ``ID=DIR`` when the endpoint is not known (it is written in no file, only in the printed config)."""
    voter, sep, directory = text.partition("=")
    m = _VOTER.fullmatch(voter)
    if sep and directory and m is None and voter.isdigit():
        return ControllerTarget(int(voter), None, None, os.path.abspath(directory))
    if not sep or not directory or m is None:
        raise ProcedureUsageError(
            f"--controller {text!r} is not ID@HOST:PORT=DIR (e.g. 3000@ctl1:9093=/data/kraft) nor ID=DIR"
        )
    return ControllerTarget(int(m.group(1)), m.group(2), int(m.group(3)), os.path.abspath(directory))


@dataclass(slots=True)
class Candidate:
    """One broker's replica of the metadata log."""

    log_dir: str
    node_id: int | None
    end_offset: int
    last_epoch: int
    last_timestamp: int | None
    snapshot: tuple[int, int] | None
    files: list[str]
    kraft_voters: tuple[int, ...] | None
    record_types: dict[str, int]
    problems: list[str]
    # leaderEpoch of its quorum-state, the epoch the broker last heard of (the error when unreadable)
    state_epoch: int | Exception | None = None
    next_producer_id: int = -1  # of the last ProducerIdsRecord it holds (MetadataImage.next_producer_id)
    # controller id -> its registered (listener, host, port)s (MetadataImage.controller_endpoints)
    controller_endpoints: dict[int, tuple[tuple[str, str, int], ...]] | None = None

    @property
    def key(self) -> tuple[int, int]:
        return (self.last_epoch, self.end_offset)

    def to_json(self) -> dict[str, Any]:
        return {
            "log_dir": self.log_dir,
            "broker": self.node_id,
            "end_offset": self.end_offset,
            "last_epoch": self.last_epoch,
            "last_record_time": _iso(self.last_timestamp),
            "snapshot": list(self.snapshot) if self.snapshot else None,
            "problems": self.problems,
        }


def _iso(ms: int | None) -> str | None:
    return (
        None
        if ms is None or ms < 0
        else datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
    )


def _candidate(log_dir: str, node_id: int | None) -> Candidate:
    from logdoctor.logdir.metadata_image import replay

    mdir = os.path.join(log_dir, METADATA_DIR)
    image = replay(mdir)  # its last batch's epoch and time: the end the replay reached
    epoch = max(image.snapshot[1] if image.snapshot else -1, image.last_epoch)
    problems = [f"{e.path}: {e.message}" for e in image.errors]
    files = sorted(n for n in os.listdir(mdir) if _COPIED.fullmatch(n))
    state_epoch = None
    try:
        state = parse_quorum_state(read_file(os.path.join(mdir, QUORUM_STATE_FILE)), source=mdir)
        state_epoch = state.leader_epoch
    except FileNotFoundError:
        pass
    except (FormatError, OSError) as e:  # the broker will not start on it (FileQuorumStateStore); its log is
        state_epoch = e  # read all the same, the epoch it heard of stays unknown
    return Candidate(
        log_dir,
        node_id,
        image.end_offset,
        epoch,
        image.last_timestamp,
        image.snapshot,
        files,
        image.voters,
        dict(image.record_types),
        problems,
        state_epoch,
        image.next_producer_id,
        image.controller_endpoints,
    )


def controller_answers(host: str, port: int, timeout: float = 3.0) -> bool:
    """Whether a Kafka controller answers at ``host:port``: an ApiVersions v0 request (header v1, a null
    client id: K:clients/src/main/resources/common/message/ApiVersionsRequest.json, RequestHeader.json)
    answered without error with a list that holds Vote (api key 52), an API only a controller's listener
    serves (VoteRequest.json ``"listeners": ["controller"]``). A broker's listener, a closed port, another
    protocol (TLS) or no answer in ``timeout`` seconds: False."""
    request = struct.pack(">hhih", 18, 0, 1, -1)

    def recv(s: socket.socket, n: int) -> bytes:
        out = b""
        while len(out) < n and (chunk := s.recv(n - len(out))):
            out += chunk
        return out

    try:
        with socket.create_connection((host, port), timeout) as s:
            s.sendall(struct.pack(">i", len(request)) + request)
            (size,) = struct.unpack(">i", recv(s, 4))
            body = recv(s, size) if 10 <= size <= 1 << 20 else b""
            correlation, error, count = struct.unpack_from(">ihi", body)
            keys = {struct.unpack_from(">h", body, 10 + 6 * i)[0] for i in range(max(count, 0))}
    except (OSError, struct.error):
        return False
    return correlation == 1 and error == 0 and 52 in keys


def _refuse_live_controllers(
    candidates: list[Candidate], controllers: list[ControllerTarget], not_voters: list[str], notes: list[str]
) -> list[str]:
    """ProcedureRefused when a controller answers at an endpoint the copies register or a --controller
    names, but those the operator says are not a voter of this cluster (``not_voters``: ``HOST:PORT``);
    else a note of the endpoints tried, returned (``HOST:PORT``: ``--resume`` tries them again)."""
    endpoints: dict[tuple[str, int], str] = {}
    for c in candidates:
        for node, ends in sorted((c.controller_endpoints or {}).items()):
            for _listener, host, port in ends:
                endpoints.setdefault((host, port), f"controller {node} (registered in {c.log_dir})")
    for t in controllers:
        if t.host is not None:
            endpoints.setdefault((t.host.strip("[]"), t.port or 0), f"--controller {t.voter}")
    for (host, port), who in endpoints.items():
        if f"{host}:{port}" in not_voters:
            notes.append(f"{host}:{port} ({who}) not tried: --not-a-voter says its controller is another's")
    tried = {(h, p): who for (h, p), who in endpoints.items() if f"{h}:{p}" not in not_voters}
    _refuse_if_one_answers(tried)
    if tried:
        said = ", ".join(f"{h}:{p}" for h, p in tried)
        notes.append(f"no Kafka controller answers at {said} (ApiVersions)")
    if not any(c.controller_endpoints for c in candidates):
        notes.append(
            "no old controller's endpoint is registered (RegisterControllerRecord: metadata.version "
            "3.7-IV0 on): make sure none still runs"
        )
    return [f"{h}:{p}" for h, p in tried]


def _refuse_if_one_answers(endpoints: dict[tuple[str, int], str], resume: bool = False) -> None:
    for (host, port), who in endpoints.items():
        if controller_answers(host, port):
            other = (
                "or --rollback the journal, then plan again with --not-a-voter"
                if resume
                else "or add --not-a-voter"
            )
            raise ProcedureRefused(
                f"a Kafka controller answers at {host}:{port} ({who}): a rebuilt quorum beside a live one "
                f"splits the cluster; stop every controller of the cluster, then run this again ({other} "
                f"{host}:{port} if that controller is not a voter of this cluster)"
            )


def refuse_resume_beside_live_controllers(plan: Plan) -> None:
    """Before ``--resume`` writes anything: ProcedureRefused when a controller answers at an endpoint the
    plan tried (its steps' ``probe`` param): one may have started since the run was cut short."""
    tried = {e.rpartition(":") for s in plan.steps for e in s.params.get("probe") or ()}
    _refuse_if_one_answers({(h, int(p)): "tried when the run was planned" for h, _, p in tried}, resume=True)


def producer_ids_in_use(log_dirs: list[str], notes: list[str]) -> tuple[int, str | None]:
    """The highest producer id the log dirs show in use (-1: none) and where: each partition's latest
    producer snapshot (written at every roll and at a clean stop: K:core/.../log/UnifiedLog.scala ``roll``,
    ``close``), the batches of its active segment past it, and every id of ``__transaction_state``. A
    producer expired before the snapshot (producer.id.expiration.ms, a day) had its block long before."""
    from logdoctor.formats.producer_snapshot import parse_producer_snapshot
    from logdoctor.logdir.coordinator import coordinator_state_of
    from logdoctor.logdir.model import LogDir

    found: list[tuple[int, str]] = []  # (producer id, where), each source read as far as it reads
    for d in log_dirs:
        for part in LogDir(d).partitions:
            if part.topic == METADATA_TOPIC:
                continue
            try:
                covered = -1  # the latest producer snapshot's offset: every live producer up to it
                if part.producer_snapshots:
                    covered, path = part.producer_snapshots[-1]
                    snap = parse_producer_snapshot(read_file(path), source=str(path))
                    found += [(e.producer_id, str(path)) for e in snap.entries]
                seg = part.active_segment
                if seg is not None and seg.next_offset() > covered:  # written since (an unclean stop)
                    for b in seg.batches():
                        if b.last_offset >= covered:
                            found.append((getattr(b, "producer_id", -1), str(seg.log_path)))
                if part.topic == "__transaction_state" and part.segments:
                    txns = coordinator_state_of([(str(part.path), part.segments[0].base_offset)])
                    found += [(p, str(part.path)) for t in txns.values() for p in t.producer_ids]
            except (FormatError, OSError) as e:
                notes.append(f"producer ids of {part.path} read up to {e}: an id in use past it is not known")
    return max(found, default=(-1, None))


def _new_directory_id() -> str:
    while True:  # K:clients/.../common/Uuid.java randomUuid: never a reserved id, never a leading '-'
        text = uuid_to_kafka(uuid.uuid4())
        if not is_reserved_directory_id(text) and not text.startswith("-"):
            return text


def _refuse_target(t: ControllerTarget) -> None:
    for name in (META_PROPERTIES_FILE, METADATA_DIR, BOOTSTRAP_CHECKPOINT_FILE):
        if os.path.lexists(os.path.join(t.directory, name)):
            raise ProcedureRefused(
                f"{t.directory} holds {name}: it is a formatted node's metadata dir, not replaced (give an "
                "empty or new folder for controller " + str(t.node_id) + ")"
            )
    if os.path.exists(t.directory) and not os.path.isdir(t.directory):
        raise ProcedureUsageError(f"{t.directory} is not a folder")


def _producer_ids_batch(next_id: int, base_offset: int, epoch: int, now_ms: int) -> bytes:
    from logdoctor.formats.internal.cluster_metadata import encode_metadata_record
    from logdoctor.formats.record_types import RecordSpec
    from logdoctor.formats.writer import build_record_batch

    value = encode_metadata_record(
        {
            "type": "ProducerIdsRecord",
            "version": 0,
            "data": {"broker_id": -1, "broker_epoch": -1, "next_producer_id": next_id},
        }
    )
    return build_record_batch(
        [RecordSpec(value, None, now_ms)], base_offset=base_offset, partition_leader_epoch=epoch
    )


def _voters_batch(
    controllers: list[ControllerTarget],
    directory_ids: dict[int, str],
    base_offset: int,
    epoch: int,
    now_ms: int,
) -> bytes:
    """A control batch of the VotersRecord of ``controllers`` (module doc), each with the kraft.version
    range 0..1 a 4.x controller supports (K:server-common/.../server/common/KRaftVersion.java)."""
    from logdoctor.formats.control import (
        Endpoint,
        KRaftVersionFeature,
        Voter,
        VotersRecord,
        control_record_spec,
    )
    from logdoctor.formats.writer import build_record_batch

    voters = tuple(
        Voter(
            c.node_id,
            uuid_from_kafka(directory_ids[c.node_id]) or uuid.UUID(int=0),
            (Endpoint(CONTROLLER_LISTENER, (c.host or "").strip("[]"), c.port or 0),),
            KRaftVersionFeature(0, 1),
        )
        for c in controllers
    )
    spec = control_record_spec(VotersRecord(0, voters), timestamp=now_ms)
    return build_record_batch([spec], base_offset=base_offset, partition_leader_epoch=epoch, is_control=True)


def _check_inputs(
    log_dirs: list[str], controllers: list[ControllerTarget]
) -> tuple[list[str], dict[str, MetaProperties], str]:
    """The brokers' log dirs (absolute), their meta.properties and their one cluster id, once the call and
    the targets are checked: a usage error or a refusal (module doc) otherwise."""
    if not controllers:
        raise ProcedureUsageError("give each new controller: --controller ID@HOST:PORT=DIR")
    sources = [os.path.abspath(d) for d in log_dirs]
    for d in sources:
        if not os.path.isdir(d):
            raise ProcedureUsageError(f"{d} is not a folder")
    ids = [c.node_id for c in controllers]
    if len(set(ids)) != len(ids) or len({c.directory for c in controllers}) != len(controllers):
        raise ProcedureUsageError("each --controller needs an id and a dir of its own")
    safety.refuse_if_locked(sources)  # a live broker: its copy is moving, and a quorum may still answer it
    metas = {d: read_meta(d) for d in sources}
    clusters = {m.cluster_id for m in metas.values()}
    if len(clusters) != 1:
        listed = ", ".join(f"{d}: {m.cluster_id}" for d, m in metas.items())
        raise ProcedureRefused(f"the log dirs belong to different clusters ({listed}): one cluster at a time")
    brokers = {m.node_id for m in metas.values()}
    for c in controllers:
        if c.node_id in brokers:
            raise ProcedureUsageError(
                f"node id {c.node_id} is a broker's (meta.properties): give the controller "
                "an id no broker has"
            )
        _refuse_target(c)
    return sources, metas, clusters.pop()


def _copy_note(c: Candidate, chosen: Candidate) -> str:
    """What the plan says of one broker's copy of the metadata log, beside the chosen one."""
    if c is chosen:
        what = (
            "chosen: whatever the lost controllers committed after it is lost, and a broker whose copy "
            "goes further truncates to it"
        )
    elif c.problems:
        what = "not readable to its end, not chosen: " + "; ".join(c.problems)
    elif c.key < chosen.key:
        what = "behind: it fetches the rest from the new controllers"
    else:
        what = "the same end as the chosen copy"
    return (
        f"copy of broker {c.node_id} ({c.log_dir}): ends at offset {c.end_offset}, epoch {c.last_epoch}, "
        f"last record {_iso(c.last_timestamp)}; {what}"
    )


def plan_rebuild_quorum(
    log_dirs: list[str],
    controllers: list[ControllerTarget],
    *,
    backup_dir: str | os.PathLike[str] | None = None,
    not_voters: list[str] | None = None,
) -> ProcedurePlan:
    """The plan writing each new controller's metadata dir from the best broker replica (module doc);
    ``not_voters``: ``HOST:PORT``s not tried for a live controller (:func:`_refuse_live_controllers`)."""
    from logdoctor.formats.recovery import rebuild_indexes

    sources, metas, cluster_id = _check_inputs(log_dirs, controllers)
    candidates = [
        _candidate(d, metas[d].node_id) for d in sources if os.path.isdir(os.path.join(d, METADATA_DIR))
    ]
    if not candidates:
        raise ProcedureRefused(f"none of the log dirs holds {METADATA_DIR} (each broker's metadata.log.dir)")
    usable = [c for c in candidates if not c.problems]
    if not usable:
        raise ProcedureRefused(
            "no readable metadata log: " + "; ".join(p for c in candidates for p in c.problems)
        )
    chosen = max(usable, key=lambda c: c.key)  # first of equals: the order given
    notes: list[str] = []
    probe = _refuse_live_controllers(usable, controllers, not_voters or [], notes)
    dynamic = chosen.kraft_voters is not None  # kraft.version 1: the voter set is in the log
    if dynamic and any(c.host is None for c in controllers):
        raise ProcedureUsageError(
            f"{chosen.log_dir}'s metadata log holds a voter set (kraft.version 1, a dynamic quorum): the "
            "new VotersRecord names each controller's endpoint: give --controller ID@HOST:PORT=DIR"
        )
    directory_ids = {c.node_id: _new_directory_id() for c in controllers}
    mdir = os.path.join(chosen.log_dir, METADATA_DIR)
    plan, names = new_plan([c.directory for c in controllers], backup_dir, controllers[0].directory)
    in_use, in_use_at = producer_ids_in_use(sources, notes)
    next_id = chosen.next_producer_id
    files = {n: read_file(os.path.join(mdir, n)) for n in chosen.files}
    for name in [n for n in files if n.endswith(".log")]:  # indexes as LogSegment.recover writes them
        built = rebuild_indexes(files[name], int(name[:20]), source=os.path.join(mdir, name))
        files[name[:20] + ".index"], files[name[:20] + ".timeindex"] = built.offset_index, built.time_index
    extra: dict[str, bytes] = {}
    new_block = None
    epoch = chosen.last_epoch + 1
    appended: list[bytes] = []
    if dynamic:
        appended.append(_voters_batch(controllers, directory_ids, chosen.end_offset, epoch, plan.created_ms))
        notes.append(
            f"the copy's voter set {list(chosen.kraft_voters or ())} (kraft.version 1) is replaced: a "
            f"VotersRecord of controller(s) {', '.join(str(c.node_id) for c in controllers)} is appended at "
            f"offset {chosen.end_offset}, epoch {epoch}"
            + (
                "; it names each one's directory id: copy each folder to its controller's machine (another "
                "run writes other directory ids)"
                if len(controllers) > 1
                else ""
            )
        )
    if in_use >= max(next_id, 0):
        new_block = (in_use // PRODUCER_ID_BLOCK_SIZE + 1) * PRODUCER_ID_BLOCK_SIZE
        at = chosen.end_offset + len(appended)
        appended.append(_producer_ids_batch(new_block, at, epoch, plan.created_ms))
        notes.append(
            f"producer id {in_use} is in use ({in_use_at}) but the chosen copy's next block starts at "
            f"{max(next_id, 0)}: a ProducerIdsRecord (next block {new_block}) is appended at offset "
            f"{at}, epoch {epoch}"
        )
    else:
        notes.append(
            f"producer ids: the next block starts at {next_id}, past every id the log dirs show in use "
            f"({in_use if in_use >= 0 else 'none'}): nothing to add (ProducerIdControlManager)"
        )
    if appended:
        log = b"".join(appended)
        built = rebuild_indexes(log, chosen.end_offset, source=mdir)
        stem = f"{chosen.end_offset:020d}"
        extra = {
            f"{stem}.log": log,
            f"{stem}.index": built.offset_index,
            f"{stem}.timeindex": built.time_index,
        }
        old = files.get(LEADER_EPOCH_CHECKPOINT_FILE)
        entries = list(loaded_epochs(parse_leader_epoch_checkpoint(old).entries)) if old else []
        extra[LEADER_EPOCH_CHECKPOINT_FILE] = write_leader_epoch_checkpoint(
            new_leader_epoch_checkpoint([*entries, (epoch, chosen.end_offset)])
        )
    # the controllers start unattached at an epoch no given broker has seen passed: a broker fetches only
    # from a leader of its own epoch or later (KafkaRaftClient.validateLeaderOnlyRequest answers a request
    # of a later epoch UNKNOWN_LEADER_EPOCH), and a quorum-state below the log's epoch is overridden
    # (QuorumState.initialize); kraft.version 0 writes data_version 0 (FileQuorumStateStore), 1 writes 1.
    log_epoch = chosen.last_epoch + (1 if appended else 0)
    start_epoch = max([log_epoch, *(c.state_epoch for c in candidates if isinstance(c.state_epoch, int))])
    for c in candidates:
        if isinstance(c.state_epoch, Exception):
            notes.append(
                f"broker {c.node_id}'s {QUORUM_STATE_FILE} is not readable ({c.state_epoch}): the "
                "epoch it heard of is not known; the broker does not start until it is removed"
            )
    ids = sorted(c.node_id for c in controllers)
    state = (
        QuorumState(1, -1, start_epoch, -1)
        if dynamic
        else QuorumState(0, -1, start_epoch, -1, cluster_id="", applied_offset=0, current_voters=ids)
    )
    files[QUORUM_STATE_FILE] = write_quorum_state(state)
    boot = os.path.join(chosen.log_dir, BOOTSTRAP_CHECKPOINT_FILE)
    boot_bytes = read_file(boot) if os.path.isfile(boot) else None
    voters = ",".join(c.voter for c in controllers)
    for c in controllers:
        meta = MetaProperties(1, c.node_id, cluster_id, directory_ids[c.node_id])
        content = {META_PROPERTIES_FILE: write_meta_properties(meta)}
        if boot_bytes is not None:
            content[BOOTSTRAP_CHECKPOINT_FILE] = boot_bytes
        target_md = os.path.join(c.directory, METADATA_DIR)
        top_steps, top_changes = file_writes(c.directory, content, names)
        md_steps, md_changes = file_writes(target_md, {**files, **extra}, names)
        # c.directory: made before the engine locks it (cli/rebuild_quorum.py)
        steps = [make_dir(target_md), *top_steps, *md_steps]
        steps[0].params["probe"] = probe  # refuse_resume_beside_live_controllers
        changes = top_changes + md_changes
        plan.actions.append(
            Action(
                "rebuild-controller-metadata",
                c.directory,
                f"controller {c.node_id} (directory.id {meta.directory_id}, cluster {cluster_id}): "
                f"{METADATA_DIR} of broker {chosen.node_id} ({chosen.log_dir}) to offset "
                f"{chosen.end_offset}, epoch {chosen.last_epoch}; {QUORUM_STATE_FILE}: unattached at epoch "
                f"{start_epoch}, the node elects a leader in the next",
                steps=steps,
                changes=changes,
            )
        )
    behind = [
        {"broker": c.node_id, "log_dir": c.log_dir, "end_offset": c.end_offset, "last_epoch": c.last_epoch}
        for c in usable
        if c.key < chosen.key
    ]
    notes += [_copy_note(c, chosen) for c in candidates]
    quorum = (
        f"controller.quorum.bootstrap.servers={','.join(c.endpoint for c in controllers)}"
        if dynamic
        else f"controller.quorum.voters={voters}"
    )
    config = ["process.roles=controller", quorum, f"controller.listener.names={CONTROLLER_LISTENER}"]
    for c in controllers:
        notes.append(
            f"controller {c.node_id}: node.id={c.node_id} listeners=CONTROLLER://{c.endpoint} "
            f"log.dirs={c.directory} " + " ".join(config)
        )
    # a controller's registration is replaced only by its own id's (K:metadata/.../controller/
    # ClusterControlManager.java replay of RegisterControllerRecord); every registered one is asked at a
    # feature upgrade (FeatureControlManager.java reasonNotSupported: every controllerSupported entry)
    gone = sorted(set(chosen.controller_endpoints or {}) - {c.node_id for c in controllers})
    if gone:
        notes.append(
            f"controller(s) {', '.join(map(str, gone))} registered in the copy are not among the new "
            "ones: their registrations stay in the metadata image (a 3.9 controller removes none), and a "
            "feature upgrade (kafka-features.sh) checks their supported versions too; a new controller "
            "given a lost one's id replaces its registration"
        )
    unknown = [str(c.node_id) for c in controllers if c.host is None]
    if unknown:
        notes.append(
            f"the CONTROLLER listener of controller {', '.join(unknown)} was not given (ID=DIR): put its "
            "HOST:PORT in listeners and controller.quorum.voters (nothing written depends on it)"
        )
    instead = " in place of controller.quorum.voters" if dynamic else ""
    notes.append(f"every broker: {quorum}{instead} (then start the controllers first)")
    summary = {
        "cluster_id": cluster_id,
        "candidates": [c.to_json() for c in candidates],
        "chosen": chosen.log_dir,
        "behind": behind,
        "record_types": chosen.record_types,
        "producer_id_in_use": in_use,
        "next_producer_id": next_id,
        "new_producer_id_block": new_block,
        "quorum_epoch": start_epoch,
        "controller_quorum_voters": voters,
        "kraft_version": int(dynamic),
        "quorum_config": quorum,
        "controllers": [
            {
                "node_id": c.node_id,
                "directory": c.directory,
                "directory_id": directory_ids[c.node_id],
                "listeners": f"CONTROLLER://{c.endpoint}" if c.host is not None else None,
            }
            for c in controllers
        ],
    }
    return ProcedurePlan(PROCEDURE, plan, summary, notes)
