"""The transaction coordinator's state (``__transaction_state``) and its decision on a transaction that a
partition's log leaves without a marker: what a consumer of the cluster, restarted, reads of it.

The coordinator's state is the last record per transactional id of each ``__transaction_state`` partition
(a tombstone deletes it: K:core/.../coordinator/transaction/TransactionStateManager.scala
``loadTransactionMetadata``). A restarted coordinator ends what it finds open
(K:core/.../coordinator/transaction/TransactionStateManager.scala, TransactionCoordinator.scala):

- ``PrepareCommit``: it sends the COMMIT markers again to every partition the transaction lists (the load's
  ``transactionsPendingForCompletion``): **committed**;
- ``PrepareAbort``: likewise with ABORT markers: **aborted**;
- ``Ongoing``: aborted once its timeout has passed since the transaction started
  (``timedOutTransactions``: ``txnStartTimestamp + txnTimeoutMs < now``, then
  ``abortTimedOutTransactions``): **aborted** when that is so at the read's moment (the clock when the read
  is planned: a dead broker's log is past it, a log read while its producer's transaction may still end is
  not), except a two-phase-commit transaction (KIP-939: timeout Integer.MAX_VALUE), never timed out;
- every other state (``Empty``, ``CompleteCommit``, ``CompleteAbort``, ``Dead``; ``PrepareEpochFence`` is
  never written), a transaction that does not list the partition, or a producer id no transactional id
  holds: the coordinator sends no marker, and the partition's last stable offset stays at the
  transaction's first offset. The read's ``open_transactions`` policy (:data:`OPEN_TRANSACTION_POLICIES`)
  decides those: ``hold`` reads as that restarted cluster does (up to the last stable offset), ``abort``
  as it does after ``kafka-transactions.sh abort``.

Only coordinator state of the same cluster decides (the cluster id of the log dirs' ``meta.properties``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from logdoctor.errors import FormatError
from logdoctor.logdir.names import TRANSACTION_STATE_TOPIC, DirKind
from logdoctor.logdir.refs import PartitionRef

__all__ = [
    "HOLD",
    "OPEN_TRANSACTION_POLICIES",
    "TWO_PHASE_COMMIT_TIMEOUT_MS",
    "CoordinatorDecisions",
    "CoordinatorTxn",
    "coordinator_decisions",
    "coordinator_state_of",
]

#: Integer.MAX_VALUE: the timeout of a two-phase-commit transaction (TransactionCoordinator.scala
#: ``handleInitProducerId``: ``if (enableTwoPCFlag) Int.MaxValue``)
TWO_PHASE_COMMIT_TIMEOUT_MS = 2**31 - 1
#: what becomes of a transaction the coordinator does not end (the module doc)
HOLD, ABORT = "hold", "abort"
OPEN_TRANSACTION_POLICIES = (HOLD, ABORT)

_OPEN = {"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"}


@dataclass(frozen=True, slots=True)
class CoordinatorTxn:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    partitions: tuple[tuple[str, int], ...]
    start_timestamp: int
    producer_ids: frozenset[int]  # the id and its previous/next ids (KIP-890 epoch overflow)
    source: str
    client_transaction_version: int = 0  # TransactionLogValue tag 2 (>= 2: the epoch bump of KIP-890)
    timeout_ms: int = 0
    #: when the coordinator wrote this state (its clock); of a PrepareCommit: when it decided the commit
    last_update_timestamp: int = -1

    @property
    def two_phase_commit(self) -> bool:
        return self.timeout_ms == TWO_PHASE_COMMIT_TIMEOUT_MS

    @property
    def open(self) -> bool:
        return self.state in _OPEN

    def decision(self, topic: str, partition: int, now_ms: int) -> str | None:
        """What the coordinator, restarted at ``now_ms``, writes to ``topic``-``partition`` for this
        transaction: ``"committed"``, ``"aborted"``, or None (no marker: the module doc)."""
        if (topic, partition) not in self.partitions:
            return None
        if self.state == "PrepareCommit":
            return "committed"
        timed_out = not self.two_phase_commit and self.start_timestamp + self.timeout_ms < now_ms
        if self.state == "PrepareAbort" or (self.state == "Ongoing" and timed_out):
            return "aborted"
        return None


def coordinator_state_of(partitions: Iterable[tuple[str, int]]) -> dict[str, CoordinatorTxn]:
    """transactional id -> its last state in the given ``__transaction_state`` replicas, each a (partition
    folder, log start offset), one per partition."""
    from logdoctor.formats.internal import decode_transaction_log
    from logdoctor.logdir.internal_records import records_of

    out: dict[str, CoordinatorTxn] = {}
    for path, start in partitions:
        for _off, _pid, control, key, value, _ct in records_of(path, start):
            if control or key is None:
                continue
            try:
                rec = decode_transaction_log(key, value, source=path)
            except FormatError:
                continue
            tid = rec["key"]["transactional_id"]
            v = rec["value"]
            if v is None:
                out.pop(tid, None)
                continue
            listed = tuple(
                (t["topic"], n) for t in v.get("transaction_partitions") or () for n in t["partition_ids"]
            )
            ids = {v["producer_id"], v.get("previous_producer_id", -1), v.get("next_producer_id", -1)}
            ids.discard(-1)
            out[tid] = CoordinatorTxn(
                tid,
                v["producer_id"],
                v["producer_epoch"],
                v["transaction_status_name"],
                listed,
                v["transaction_start_timestamp_ms"],
                frozenset(ids),
                path,
                v.get("client_transaction_version", 0),
                v["transaction_timeout_ms"],
                v["transaction_last_update_timestamp_ms"],
            )
    return out


@dataclass(frozen=True, slots=True)
class CoordinatorDecisions:
    """The ``__transaction_state`` partitions among a read's inputs (read when first asked), each log
    dir's cluster, and the policy for what no coordinator ends; picklable, handed to every reader."""

    policy: str = HOLD
    #: the moment the coordinator is taken to restart at (epoch ms: the read plan's clock)
    now_ms: int = 0
    #: (the partition's log dir, its folder) of every ``__transaction_state`` partition found
    sources: tuple[tuple[str, str], ...] = ()
    #: log dir -> its cluster id (None: not known)
    clusters: Mapping[str, str | None] = field(default_factory=dict)
    #: a cut's moments: (producer id, marker epoch) -> when that transaction committed, across every
    #: partition read (logdoctor.logdir.cut.cut_moments; empty: no cut)
    cut_moments: Mapping[tuple[int, int], int] = field(default_factory=dict)
    _by_cluster: dict[str | None, dict[int, list[CoordinatorTxn]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def _state(self) -> dict[str | None, dict[int, list[CoordinatorTxn]]]:
        if self.sources and not self._by_cluster:
            for log_dir, path in self.sources:
                by_pid = self._by_cluster.setdefault(self.clusters.get(log_dir), {})
                for t in coordinator_state_of([(path, _log_start(log_dir, path))]).values():
                    for pid in t.producer_ids:
                        by_pid.setdefault(pid, []).append(t)
        return self._by_cluster

    def decide(self, log_dir: str, topic: str, partition: int, producer_id: int) -> tuple[str, str] | None:
        """(result, why) for a transaction of ``producer_id`` left without a marker in that partition of
        ``log_dir``; None: it stays open (``hold`` and no coordinator ends it)."""
        for t in self._state().get(self.clusters.get(log_dir), {}).get(producer_id, ()):
            result = t.decision(topic, partition, self.now_ms)
            if result is not None:
                return result, f"coordinator: transactional id {t.transactional_id} is {t.state} ({t.source})"
        if self.policy == ABORT:
            return "aborted", "--open-transactions abort"
        return None

    def prepared_commit(
        self, log_dir: str, topic: str, partition: int, producer_id: int
    ) -> CoordinatorTxn | None:
        """The coordinator's state of ``producer_id`` when it is PrepareCommit listing that partition of
        ``log_dir``: the commit decided, its markers not all written (the cut's moment of that transaction,
        :mod:`logdoctor.logdir.cut`)."""
        for t in self._state().get(self.clusters.get(log_dir), {}).get(producer_id, ()):
            if t.state == "PrepareCommit" and (topic, partition) in t.partitions:
                return t
        return None


def _cluster_id(log_dir: str) -> str | None:
    from logdoctor.logdir.model import LogDir

    meta = LogDir.shared(log_dir).meta_properties
    return None if meta is None else meta.cluster_id


def _log_start(log_dir: str, path: str) -> int:
    """The coordinator loads from the partition's log start (its checkpoint entry; 0 without one: the
    walk begins at the first segment)."""
    import os

    from logdoctor.logdir.model import LogDir
    from logdoctor.logdir.names import parse_partition_dir

    name = parse_partition_dir(os.path.basename(path))
    try:
        start = LogDir.shared(log_dir).partition(name.topic, name.partition).log_start_offset_checkpoint  # type: ignore[union-attr]
    except (OSError, KeyError, ValueError, AttributeError):
        start = None
    return 0 if start is None else start


def coordinator_decisions(refs: Sequence[PartitionRef], policy: str = HOLD) -> CoordinatorDecisions:
    """The decisions of the coordinator state held by the ``__transaction_state`` partitions of the local
    log dirs of ``refs`` (every partition found in a read's inputs; a partition folder given alone: its
    log dir's, as the remote log metadata is found), and ``policy``."""
    from logdoctor.logdir.model import LogDir

    dirs = sorted({r.log_dir for r in refs if r.storage.is_local and r.log_dir})
    sources: list[tuple[str, str]] = []
    for d in dirs:
        try:
            parts = LogDir.shared(d).partitions
        except OSError:
            continue  # the read plan names a log dir that cannot be listed
        sources += [
            (d, str(p.path)) for p in parts if p.topic == TRANSACTION_STATE_TOPIC and p.kind is DirKind.LOG
        ]
    clusters = {d: _cluster_id(d) for d in dirs} if sources else {}
    return CoordinatorDecisions(policy, int(time.time() * 1000), tuple(sources), clusters)
