"""TRANSACTION_STATE_MISMATCH: the transaction coordinator's state (``__transaction_state``) against the
transactions the partitions' logs hold open, when both are among the inputs.

The coordinator's state is the last record per transactional id of each ``__transaction_state`` partition
(a tombstone deletes it: K:core/.../coordinator/transaction/TransactionStateManager.scala
``loadTransactionMetadata``). A transaction is open for the coordinator in the states Ongoing,
PrepareCommit, PrepareAbort and PrepareEpochFence (K:transaction-coordinator/.../TransactionState.java);
it writes the markers to every partition it lists on the way to CompleteCommit or CompleteAbort
(K:core/.../coordinator/transaction/TransactionMarkerChannelManager.scala). Two disagreements:

- ``open-in-log``: a partition's log holds a transaction open (producer state as the broker loads it:
  :mod:`logdoctor.checks.transactions`) for a producer id that no transactional id of the coordinator has
  open: no marker will ever come, the last stable offset is stuck there whatever the timeout (what KIP-664's
  ``find-hanging`` looks for on a live cluster);
- ``closed-in-log``: the coordinator has a transaction open that lists the partition, but the partition's
  producer state shows that producer (same epoch) wrote there after the transaction started and has no
  transaction open: the marker is already written (a coordinator that did not get to record the
  completion, or a partition that went on without it). Under transactions V2 (KIP-890: the record's
  ``client_transaction_version`` >= 2) the coordinator bumps the epoch when it ends a transaction and the
  markers carry epoch + 1 (K:transaction-coordinator/.../TransactionMetadata.java ``prepareAbortOrCommit``,
  server-common/.../TransactionVersion.java ``supportsEpochBump``), so the producer at epoch + 1 counts too.

Only partitions among the inputs are judged, within one cluster (:func:`checks.consumer_groups.clusters_of`).

Two-phase commit (KIP-939, Kafka 4.1+): a transaction whose ``transaction_timeout_ms`` is Integer.MAX_VALUE
is a distributed two-phase-commit transaction; the coordinator never times it out (K:transaction-coordinator/
.../TransactionMetadata.java ``isDistributedTwoPhaseCommitTxn``, core/.../TransactionStateManager.scala
``timedOutTransactions``): it ends when the external transaction manager decides. A TRANSACTION_HANGING
of its producer, where ``__transaction_state`` is among the inputs, gets that advice instead of an abort
(:func:`two_phase_commit_advice`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from logdoctor.checks import catalog
from logdoctor.checks.catalog.transactions import ABORT_COMMAND
from logdoctor.checks.consumer_groups import replicas_by_partition
from logdoctor.checks.context import PartitionReport
from logdoctor.checks.findings import Finding, Severity
from logdoctor.checks.replica_ref import Judged
from logdoctor.logdir.coordinator import TWO_PHASE_COMMIT_TIMEOUT_MS, CoordinatorTxn, coordinator_state_of
from logdoctor.logdir.names import TRANSACTION_STATE_TOPIC

__all__ = [
    "TRANSACTION_STATE_TOPIC",
    "TWO_PHASE_COMMIT_TIMEOUT_MS",
    "CoordinatorTxn",
    "coordinator_state",
    "mismatches",
    "open_two_phase_commits",
    "transaction_state_mismatches",
    "two_phase_commit_advice",
    "two_phase_commit_fix",
    "txn_from_json",
    "txn_to_json",
]


def coordinator_state(parts: list[PartitionReport]) -> dict[str, CoordinatorTxn]:
    """transactional id -> its last state in the given ``__transaction_state`` replicas (one each)."""
    return coordinator_state_of(
        (p.path, p.log_start_offset if p.log_start_offset is not None else (p.first_base_offset or 0))
        for p in parts
    )


#: a producer's state in a partition as the broker loads it: (epoch, last timestamp, open txn's first offset)
ProducerEntry = tuple[int, int, int]


def transaction_state_mismatches(
    parts: list[PartitionReport], clusters: dict[str, str | None]
) -> list[Finding]:
    """One finding per disagreement (the module docstring's two cases), each cluster's coordinator state
    against the replica of each partition a consumer fetches from (checks.consumer_groups
    ``replicas_by_partition``)."""
    replicas = replicas_by_partition(parts, clusters)
    by_cluster: dict[str | None, list[PartitionReport]] = {}
    for (cluster, topic, _n), p in replicas.items():
        if topic == TRANSACTION_STATE_TOPIC:
            by_cluster.setdefault(cluster, []).append(p)
    out: list[Finding] = []
    for cluster, logs in sorted(by_cluster.items(), key=lambda kv: str(kv[0])):
        state = coordinator_state(sorted(logs, key=lambda p: p.partition))
        targets = [
            (p, p.producers)
            for (c, topic, _n), p in sorted(replicas.items(), key=lambda kv: (kv[0][1], kv[0][2]))
            if c == cluster and topic != TRANSACTION_STATE_TOPIC
        ]
        out += mismatches(state, targets)
    return out


def mismatches(
    state: Mapping[str, CoordinatorTxn], targets: Iterable[tuple[Judged, Mapping[int, ProducerEntry]]]
) -> list[Finding]:
    """The rule itself: one cluster's coordinator state (:func:`coordinator_state`) against each judged
    replica's producer state. The scan (:func:`transaction_state_mismatches`) and the census
    (census_sql.transaction_state_findings, each partition on the executors) both run it."""
    open_ids = {pid: t for t in state.values() if t.open for pid in t.producer_ids}
    out: list[Finding] = []
    for p, producers in targets:
        for pid, (epoch, _last, first) in sorted(producers.items()):
            if first >= 0 and pid not in open_ids:
                known = next((t for t in state.values() if pid in t.producer_ids), None)
                out.append(_open_in_log(p, pid, epoch, first, known))
        for t in state.values():
            if not t.open or (p.topic, p.partition) not in t.partitions:
                continue
            entry = next((producers[i] for i in t.producer_ids if i in producers), None)
            if entry is None:
                continue
            epoch, last, first = entry
            marker_epochs = {t.producer_epoch}
            if t.client_transaction_version >= 2:  # the marker's bumped epoch (module docstring)
                marker_epochs.add(t.producer_epoch + 1)
            if first < 0 and epoch in marker_epochs and last >= t.start_timestamp:
                out.append(_closed_in_log(p, t))
    return out


def txn_to_json(t: CoordinatorTxn) -> str:
    """A coordinator transaction as the inventory's ``coordinator_txn`` column holds it (JSON)."""
    import json

    d = {f: getattr(t, f) for f in t.__dataclass_fields__}
    d["partitions"] = [list(x) for x in t.partitions]
    d["producer_ids"] = sorted(t.producer_ids)
    return json.dumps(d, sort_keys=True)


def txn_from_json(text: str) -> CoordinatorTxn:
    import json

    d = json.loads(text)
    d["partitions"] = tuple((str(a), int(b)) for a, b in d["partitions"])
    d["producer_ids"] = frozenset(int(x) for x in d["producer_ids"])
    return CoordinatorTxn(**d)


def _open_in_log(p: Judged, pid: int, epoch: int, first: int, known: CoordinatorTxn | None) -> Finding:
    said = (
        f"transactional id {known.transactional_id} is in state {known.state} there ({known.source})"
        if known is not None
        else "no transactional id of __transaction_state has this producer id"
    )
    return catalog.make(
        "TRANSACTION_STATE_MISMATCH",
        p.path,
        case="open-in-log",
        logdir=p.log_dir,
        offset=first,
        severity=Severity.ERROR,
        topic=p.topic,
        partition=p.partition,
        producer_id=pid,
        producer_epoch=epoch,
        first_offset=first,
        said=said,
        details={
            "case": "open-in-log",
            "topic": p.topic,
            "partition": p.partition,
            "producer_id": pid,
            "producer_epoch": epoch,
            "first_offset": first,
            "transactional_id": known.transactional_id if known is not None else None,
            "coordinator_state": known.state if known is not None else None,
            "command_for_running_cluster": ABORT_COMMAND.format(
                topic=p.topic, partition=p.partition, first_offset=first
            ),
        },
    )


def _closed_in_log(p: Judged, t: CoordinatorTxn) -> Finding:
    return catalog.make(
        "TRANSACTION_STATE_MISMATCH",
        p.path,
        case="closed-in-log",
        logdir=p.log_dir,
        topic=p.topic,
        partition=p.partition,
        transactional_id=t.transactional_id,
        producer_id=t.producer_id,
        producer_epoch=t.producer_epoch,
        state=t.state,
        source=t.source,
        details={
            "case": "closed-in-log",
            "topic": p.topic,
            "partition": p.partition,
            "transactional_id": t.transactional_id,
            "producer_id": t.producer_id,
            "producer_epoch": t.producer_epoch,
            "coordinator_state": t.state,
            "transaction_state_partition": t.source,
        },
    )


def two_phase_commit_advice(
    findings: list[Finding], parts: list[PartitionReport], clusters: dict[str, str | None]
) -> list[Finding]:
    """``findings`` with each TRANSACTION_HANGING of a producer whose transactional id holds a
    two-phase-commit transaction open (same cluster's ``__transaction_state``) given the two-phase-commit
    advice: the coordinator never aborts it and an abort by hand may break what the external transaction
    manager decided (the module docstring)."""
    import dataclasses
    import os

    replicas = replicas_by_partition(parts, clusters)
    cluster_of = {p.path: c for (c, _t, _n), p in replicas.items()}
    states: dict[str | None, dict[str, CoordinatorTxn]] = {}
    for (cluster, topic, _n), p in sorted(replicas.items(), key=lambda kv: (str(kv[0][0]), kv[0][2])):
        if topic == TRANSACTION_STATE_TOPIC:
            states.setdefault(cluster, {}).update(coordinator_state([p]))
    two_pc = open_two_phase_commits(states)
    if not two_pc:
        return findings
    out = []
    for f in findings:
        d = f.details or {}
        t = None
        if f.code == "TRANSACTION_HANGING":
            t = two_pc.get((cluster_of.get(os.path.dirname(f.path)), d.get("producer_id")))
        if t is None:
            out.append(f)
            continue
        fix = two_phase_commit_fix(t)
        details = {
            **d,
            "two_phase_commit": True,
            "transactional_id": t.transactional_id,
            "coordinator_state": t.state,
            "transaction_state_partition": t.source,
        }
        details.pop("command_for_running_cluster", None)
        out.append(dataclasses.replace(f, fix=fix, details=details))
    return out


def two_phase_commit_fix(t: CoordinatorTxn) -> str:
    """TRANSACTION_HANGING's fix for a producer whose transactional id holds a two-phase-commit transaction
    open (the module docstring): the scan's and the census's."""
    return (
        f"Transactional id {t.transactional_id} holds a two-phase-commit transaction (KIP-939: its "
        f"timeout is Integer.MAX_VALUE in {t.source}, state {t.state}): the coordinator never aborts it, "
        "it waits for the external transaction manager's decision. Do not abort it with "
        "kafka-transactions.sh: if that manager committed the other participants, an abort here breaks "
        "the transaction's atomicity. Resolve it through the application that owns the transactional id "
        "(its transaction manager commits or aborts it); only once that manager has decided to abort is "
        "the abort command safe."
    )


def open_two_phase_commits(
    states: Mapping[str | None, Mapping[str, CoordinatorTxn]],
) -> dict[tuple[str | None, int], CoordinatorTxn]:
    """(cluster, producer id) -> the open two-phase-commit transaction of that producer, of each cluster's
    coordinator state: the producers whose TRANSACTION_HANGING gets :func:`two_phase_commit_fix`."""
    return {
        (cluster, pid): t
        for cluster, state in states.items()
        for t in state.values()
        if t.open and t.two_phase_commit
        for pid in t.producer_ids
    }
