"""Carrying out a replay plan: every record as it was (key, value, headers, partition, CreateTime timestamp,
order within its partition; a tombstone stays one), exactly once, resumable after ``kill -9``.

How (Kafka's exactly-once machinery, nothing of logdoctor's own on the target):

- each target partition is written by one transactional producer whose ``transactional.id`` is derived
  from the target cluster's id, topic and partition (:func:`logdoctor.replay.target.transactional_id`).
  Its ``init_transactions`` fences any earlier producer of that id (a killed run's) and completes or aborts
  the transaction it left (K:core/.../coordinator/transaction/TransactionCoordinator.scala
  handleInitProducerId: an ongoing transaction is aborted, a prepared commit completed, before the new
  epoch is handed out);
- records go in transactions of at most ``txn_records`` records or ``txn_bytes`` bytes: memory is bounded
  by one transaction's window, never by the input (the source is read in runs of whole batches decoded as
  columns, :meth:`~logdoctor.replay.source.PartitionSource.columns`, each sent as it is decoded);
- the replay's progress is committed in the same transaction as the records
  (``send_offsets_to_transaction``) to the target topic's replay group: for the target partition, the next
  target offset, with the next *source* offset, the first target offset and the count in the offset's
  metadata (:class:`logdoctor.replay.target.Progress`). The group coordinator checks neither the offset
  against the log nor the metadata but its size (K:group-coordinator/.../OffsetMetadataManager.java
  commitTransactionalOffset: ``OFFSET_METADATA_TOO_LARGE`` past ``offset.metadata.max.bytes``, 4096 by
  default). Records and progress are committed together or not at all, so a rerun reads the progress
  (``require_stable``: a transaction still completing is waited for) and goes on from the next source
  offset: nothing duplicated, nothing lost, and ``read_committed`` consumers never see a partial
  transaction;
- a replay holds a lease on each replay group while it runs: a consumer that is the group's member
  (subscribed to the target topic, its partitions paused: it fetches nothing). A second replay into the
  same target finds a member there and refuses (:class:`ReplayRefused`), after waiting up to ``lock_wait``
  seconds for a killed run's member to expire (its session timeout). Two started at the same moment both
  join: the member with the lower member id keeps the lease, the other leaves and refuses. The progress
  is committed with the lease consumer's group metadata (member id, generation), so the coordinator fences
  a commit of a stale member (K:group-coordinator/.../classic/ClassicGroup.java validateOffsetCommit:
  ``ILLEGAL_GENERATION``), and the transactional.id fences a stale producer whatever happens to the lease.

Re-hashed (``--partitioner default``: :mod:`logdoctor.replay.partitioner`), a source partition's records go
to many target partitions, each of which gets records of many source partitions, so the unit of exactly-once
is the source partition: its producer's ``transactional.id`` and its replay group (the lease, and the
progress: the next source offset and the count, committed on the target topic's partition 0, the only
partition every topic has) are derived from the source partition and the target topic
(:func:`logdoctor.replay.target.rehash_transactional_id`, :func:`~logdoctor.replay.target.rehash_group`).
A transaction holds records for several target partitions and commits them all with the progress, or none.
The lease is the target topic's replay group, as unhashed (one join per topic, not per source partition;
a replay of either kind into the same topic refuses while another runs); the progress groups have no
member, so the progress is committed with generation -1, which the coordinator takes while the group is
empty (K:group-coordinator/.../OffsetMetadataManager.java validateTransactionalOffsetCommit: a missing
group is created; ClassicGroup.java validateOffsetCommit); a stale producer is fenced by its
transactional.id.
Each record's target partition is computed (not left to the producer): the same on a rerun, and known to
the offset map. Before a topic's first source partition, a target partition with records while none of the
topic's source partitions has progress refuses (``TARGET_NOT_EMPTY``), and so does a target topic whose
partition count is not the one the plan (or the progress) hashed over.

After the records, the plan's consumer groups (:mod:`logdoctor.replay.groups`) are committed on the
partitions whose replay is complete.

One source partition's replay is a :class:`PartitionJob` (picklable) run by :func:`replay_partition`: the
one apply engine. :func:`apply_replay` hands the jobs to a :data:`PartitionRunner`: its own, threads of this
process, several partitions at once (``parallelism``), or ``logdoctor.spark.replay_job``'s (one Spark task
each), while it keeps the plan, the topics, the conflict checks, the leases (all taken before the first
record, polled meanwhile; the jobs commit with their group metadata) and the groups. A job's
transactional id and replay group are its partition plan's, wherever it runs.

The offset map (source offset -> target offset) comes from the delivery reports, one Arrow record batch
per committed transaction (:data:`OFFSET_MAP_SCHEMA`); :func:`offset_map` rebuilds the whole map of a
replay from the target (after a kill, the rows of the killed run's last transaction were never handed
out), checking every record against the source.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import itertools
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from logdoctor.replay.offset_map import offset_map_rows, offset_map_schema
from logdoctor.replay.partitioner import partition_for
from logdoctor.replay.plan import GroupPlan, PartitionPlan, ReplayPlan, live_refs, other_source
from logdoctor.replay.source import PartitionSource, RecordColumns
from logdoctor.replay.target import Progress, Target, TargetUnreachable

if TYPE_CHECKING:
    import pyarrow as pa

    from logdoctor.logdir.coordinator import CoordinatorDecisions
    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.logdir.refs import PartitionRef

__all__ = [
    "DEFAULT_PARALLELISM",
    "DEFAULT_TXN_BYTES",
    "DEFAULT_TXN_RECORDS",
    "HeldLease",
    "PartitionJob",
    "PartitionResult",
    "PartitionRunner",
    "RateLimit",
    "ReplayFailed",
    "ReplayRefused",
    "ReplayResult",
    "apply_replay",
    "check_clients",
    "replay_partition",
]

#: a transaction's records at most: each commit waits for every record's ack, then two round trips
#: (the offsets, the commit); fewer, larger transactions keep the producer busy (benchmarks/bench_replay.py:
#: 1,000,000 records of 100 B took 7.7 s in transactions of 10,000, 5.4 s of 100,000)
DEFAULT_TXN_RECORDS = 100_000
DEFAULT_TXN_BYTES = 64 * 1024 * 1024
DEFAULT_SESSION_TIMEOUT_MS = 10_000
#: source partitions replayed at once by default (threads of one process: the producers' librdkafka threads
#: do the sending, the GIL is released while they do; benchmarks/bench_replay.py)
DEFAULT_PARALLELISM = 4


class ReplayRefused(Exception):
    """Nothing was written: a conflict of the plan not ignored, or another replay runs into the target."""


class ReplayFailed(Exception):
    """A transaction failed (aborted: nothing of it is visible). A rerun resumes after the last commit."""


@dataclass
class PartitionResult:
    name: str
    target: str
    resumed_from: int | None
    records: int = 0
    transactions: int = 0
    progress: Progress | None = None
    #: what was not read once from the source partition (:attr:`PartitionSource.problems`)
    problems: list[str] = field(default_factory=list)
    #: the log dir of the copy replayed, when the inputs held several (:attr:`PartitionPlan.copies`)
    copy: str | None = None

    def to_json(self) -> dict[str, Any]:
        p = self.progress
        return {
            "source": self.name,
            "copy": self.copy,
            "target": self.target,
            "resumed_from": self.resumed_from,
            "records": self.records,
            "transactions": self.transactions,
            "next_source_offset": None if p is None else p.next_source_offset,
            "replayed_records": None if p is None else p.records,
        }


@dataclass
class ReplayResult:
    partitions: list[PartitionResult] = field(default_factory=list)
    created_topics: list[str] = field(default_factory=list)
    #: this run's offset map rows (None when ``on_offsets`` took them)
    offset_map: pa.Table | None = None
    problems: list[str] = field(default_factory=list)
    #: the consumer groups as committed after the records (None: the plan carries none over)
    groups: list[GroupPlan] | None = None

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    def to_json(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "created_topics": self.created_topics,
            "partitions": [p.to_json() for p in self.partitions],
            "problems": self.problems,
            "groups": None if self.groups is None else [g.to_json() for g in self.groups],
        }


# --- the lease ----------------------------------------------------------------------------------------


class _Lease:
    """Membership of a replay group while the replay runs (see the module doc)."""

    def __init__(
        self, target: Target, group: str, topic: str, session_timeout_ms: int, timeout: float
    ) -> None:
        self.target, self.group, self.topic = target, group, topic
        self.session_timeout_ms = session_timeout_ms
        self.timeout = timeout
        self.consumer: Any = None
        self._assigned = False
        self._joined_by = 0.0
        #: the consumer is polled by the jobs' threads and by :func:`_serving`: one at a time
        self.lock = threading.Lock()

    def join(self, wait: float) -> None:
        """Asks to join the group, once no other member holds it (a stopped run's member expires within
        ``wait``); :meth:`assigned` then tells when the coordinator took it in."""
        from confluent_kafka import Consumer

        deadline = time.monotonic() + wait
        while True:
            members = self.target.group_members(self.group)
            if not members:
                break
            if time.monotonic() > deadline:
                raise ReplayRefused(
                    f"another replay into {self.topic} runs: group {self.group} has members "
                    f"{', '.join(members)} (waited {wait:.0f} s for a stopped run's member to expire)"
                )
            time.sleep(0.5)
        client = f"logdoctor-replay@{socket.gethostname()}:{os.getpid()}"
        self.consumer = Consumer(
            self.target.client_config(
                {
                    "group.id": self.group,
                    "client.id": client,
                    "session.timeout.ms": self.session_timeout_ms,
                    "heartbeat.interval.ms": max(100, self.session_timeout_ms // 6),
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "isolation.level": "read_committed",
                }
            )
        )
        self.consumer.subscribe([self.topic], on_assign=self._on_assign)
        self._joined_by = time.monotonic() + self.timeout

    def assigned(self) -> bool:
        """Serves the join for 10 ms; True once the group has taken this member in (and it is the only
        one: of two replays started at once, the lowest member id goes on, the other is refused)."""
        if self._assigned:
            return True
        if time.monotonic() > self._joined_by:
            self.close()  # the coordinator did not answer: the target cannot be reached
            raise TargetUnreachable(
                f"the lease consumer: could not join group {self.group} within {self.timeout:g} s"
            )
        # no message comes (the partitions are paused once assigned), so a poll waits out its whole
        # timeout: short ones see the assignment within 10 ms of the join (0.2 s polls held every replay
        # 0.2 s before its first record; the join itself takes 0.09-0.15 s on a local broker)
        self.consumer.poll(0.01)
        if not self._assigned:
            return False
        members = self.target.group_members(self.group)
        mine = self.consumer.memberid()
        ids = sorted(m.split(" ", 1)[0] for m in members)
        if len(ids) > 1 and ids[0] != mine:
            self.close()
            raise ReplayRefused(
                f"another replay into {self.topic} started at the same time: group {self.group} has members "
                f"{', '.join(members)}; the one with the lowest member id goes on"
            )
        return True

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        consumer.assign(partitions)
        if partitions:
            consumer.pause(partitions)  # a lease: it fetches nothing
        self._assigned = True

    def metadata(self) -> Any:
        with self.lock:
            self.consumer.poll(0)  # serves a rebalance: the metadata carries the current generation
            return self.consumer.consumer_group_metadata()

    def close(self) -> None:
        with self.lock:  # not under a poll of another thread
            if self.consumer is not None:
                with contextlib.suppress(Exception):  # closing what may be broken already
                    self.consumer.close()  # leaves the group at once: a rerun need not wait
                self.consumer = None


# --- the rate ------------------------------------------------------------------------------------------


class RateLimit:
    """A token bucket over a whole replay: at most ``records_per_s`` records handed to the producers per
    second on average, in bursts of at most a tenth of a second's records (at least one). :meth:`take`
    waits for a token (``clock``/``sleep``: the test seams); the jobs' threads share it, one at a time."""

    def __init__(
        self,
        records_per_s: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not records_per_s > 0:
            raise ValueError(f"records_per_s {records_per_s}: must be more than 0")
        self.rate = float(records_per_s)
        self.burst = max(1.0, self.rate / 10)
        self.clock, self.sleep = clock, sleep
        self.tokens = 1.0  # the first record at once, then the rate (no burst at the start)
        self.last = clock()
        self.lock = threading.Lock()

    def take(self) -> None:
        with self.lock:  # a thread waiting for its token holds the others: one budget
            now = self.clock()
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
            self.last = now
            if self.tokens < 1.0:
                wait = (1.0 - self.tokens) / self.rate
                self.sleep(wait)
                self.last = now + wait
                self.tokens = 1.0
            self.tokens -= 1.0

    #: the most seconds of records a transaction holds
    TXN_SECONDS = 10.0

    def transaction_records(self, txn_records: int, threads: int = 1) -> int:
        """At most :attr:`TXN_SECONDS` of records per transaction of one of ``threads`` sharing the rate
        (each gets its share of it): a slow replay still commits its progress (and polls its lease) often,
        far within ``max.poll.interval.ms`` and ``transaction.timeout.ms`` (librdkafka's 60 s, past which the
        coordinator aborts the transaction: ten seconds of the whole rate would take 70 s in each of 7
        threads)."""
        return max(1, min(txn_records, int(self.rate * self.TXN_SECONDS / threads)))


# --- one source partition: the unit of a replay ---------------------------------------------------------


@dataclass(frozen=True)
class PartitionJob:
    """Everything one source partition's replay needs, picklable: the local runner of :func:`apply_replay`
    runs it in this process, a :data:`PartitionRunner` (``logdoctor.spark.replay_job``: one Spark task per
    source partition) anywhere. The transactional id, the replay group and so the fencing are the
    partition plan's: the same wherever the job runs, so a rerun (or a retried task) fences a zombie and
    resumes from the committed progress."""

    partition: PartitionPlan
    ref: PartitionRef
    opts: ReadOptions
    bootstrap: str
    admin_config: Mapping[str, Any]
    producer_config: Mapping[str, Any]
    txn_records: int = DEFAULT_TXN_RECORDS
    txn_bytes: int = DEFAULT_TXN_BYTES
    timeout: float = 60.0
    #: the lease's group metadata (``consumer_group_metadata()``: bytes) when the lease is held by another
    #: process (a Spark driver): the progress is committed with it, so the coordinator fences a commit of a
    #: member that is no longer the group's
    group_metadata: bytes | None = None
    #: the read plan's decisions on transactions left without a marker (logdoctor.logdir.coordinator)
    decisions: CoordinatorDecisions | None = None


class HeldLease:
    """A lease held by another process (:attr:`PartitionJob.group_metadata`): its member's group metadata,
    as :meth:`_Lease.metadata` gives it. That process keeps the member alive (it polls the consumer)."""

    def __init__(self, metadata: Any) -> None:
        self._metadata = metadata

    def metadata(self) -> Any:
        return self._metadata


#: runs the jobs of a replay elsewhere (``logdoctor.spark.replay_job.spark_runner``: one Spark task each)
#: and returns each job's result, in the jobs' order; each job is run with :func:`replay_partition`. Raises
#: :class:`ReplayRefused` or :class:`ReplayFailed` as the local runner would.
PartitionRunner = Callable[[list[PartitionJob]], list["PartitionResult"]]


def replay_partition(
    job: PartitionJob,
    *,
    target: Target | None = None,
    lease: Any = None,
    sink: Callable[[pa.RecordBatch], None] | None = None,
    on_transaction: Callable[[PartitionPlan, Progress], None] | None = None,
    limit: RateLimit | None = None,
    stop: threading.Event | None = None,
) -> PartitionResult:
    """One source partition replayed, exactly once (the module doc): the one apply engine, run by the local
    runner of :func:`apply_replay` and by each Spark task alike. ``target``, ``lease``: the caller's (the
    local runner's); by default a target client of the job's own and the lease of its group metadata
    (:class:`HeldLease`). Its records go in transactions, each committed with the progress, in one loop
    whatever the placement (:class:`_Same` or :class:`_Rehashed`: where each record goes, which delivery
    reports it needs, the progress and the group metadata that commits it). ``stop``: once set, no further
    transaction is begun (another job failed)."""
    from confluent_kafka import KafkaException, TopicPartition

    pp, timeout, topic = job.partition, job.timeout, job.partition.target_topic
    if target is None:
        target = Target(job.bootstrap, job.admin_config, job.timeout)
    if lease is None:
        lease = HeldLease(job.group_metadata)
    source = PartitionSource.of(job.ref, job.opts, job.decisions)
    producer = _producer(
        target, pp.transactional_id, job.producer_config, pp.max_batch_bytes, pp.max_message_bytes,
        pp.compression,
    )  # fmt: skip
    # fences every earlier producer of this id and ends the transaction it left (the module doc)
    _call(f"{pp.transactional_id}: init_transactions", lambda: producer.init_transactions(timeout))
    errors: list[str] = []
    place = (_Rehashed if pp.rehashed else _Same)(pp, lease, errors, sink is not None)
    prog = target.progress(pp.group, topic, [place.partition]).get(place.partition)
    if prog is not None and prog.of_other_source(pp.source_topic, pp.source_partition, pp.source_id):
        raise ReplayRefused(other_source(pp, prog))
    place.resume(target, prog)
    out = PartitionResult(pp.name, place.target, None if prog is None else prog.next_source_offset)
    out.progress, out.copy = prog, pp.log_dir if pp.copies else None
    count = 0 if prog is None else prog.records
    # runs of whole batches decoded as columns (no record object made): the records() a consumer reads,
    # each run sent as it is decoded (the producer sends one run while the next is read), in transactions
    runs = source.columns(None if prog is None else prog.next_source_offset)
    produce, poll = producer.produce, producer.poll
    n = 0  # the records of the open transaction (0: none open)
    sent: tuple[list[int], list[int]] = ([], [])  # its source offsets and target partitions (for sink)
    # a run's records (lists of bytes, no reference cycle) would have the cyclic collector walk them again
    # and again while they are made: off while records are sent
    collecting = gc.isenabled()
    gc.disable()
    try:
        for piece, ends in _pieces(runs, job.txn_records, job.txn_bytes):
            if not n:  # a transaction begins
                if stop is not None and stop.is_set():
                    break
                errors.clear()
                place.begin()
                sent = ([], [])
                _call(f"{pp.transactional_id}: begin_transaction", producer.begin_transaction)
            try:
                k = len(piece.offsets)
                parts, reports = place.start(piece, not n, ends)
                headers = [None] * k if piece.headers is None else piece.headers
                for i in range(0, k, _POLL_EVERY):  # slices: no per-record count
                    j = i + _POLL_EVERY
                    for value, key, ts, hs, at, report in zip(
                        piece.values[i:j], piece.keys[i:j], piece.timestamps[i:j],
                        headers[i:j], parts[i:j], reports[i:j], strict=True,
                    ):  # fmt: skip
                        if limit is not None:
                            limit.take()
                        ts = ts if ts > 0 else 0  # 0: the producer's time
                        while True:
                            try:  # the arguments that are None left out: each one given costs its parsing
                                if key is None and report is None and hs is None:
                                    produce(topic, value, partition=at, timestamp=ts)
                                else:
                                    produce(
                                        topic, value, key, partition=at, on_delivery=report, timestamp=ts,
                                        headers=hs,
                                    )  # fmt: skip
                                break
                            except BufferError:
                                poll(0.05)
                    poll(0)
                n += k
                if sink is not None:
                    sent[0].extend(piece.offsets)
                    sent[1].extend(parts)
                if not ends:
                    continue
                left = producer.flush(timeout)
                got, want = place.reports(n)
                if left or errors or got != want:
                    raise ReplayFailed(
                        f"{place.where}: {left} records not delivered, {got} of {want} delivery reports, "
                        f"errors {errors[:3]}"
                    )
                count += n
                prog = place.committed(n, piece.offsets[-1] + 1, count)
                commit = [TopicPartition(topic, place.partition, prog.next_target_offset, prog.metadata())]
                _call(
                    f"{pp.transactional_id}: send_offsets_to_transaction",
                    lambda commit=commit: producer.send_offsets_to_transaction(
                        commit, place.metadata(), timeout
                    ),
                )
                _call(
                    f"{pp.transactional_id}: commit_transaction", lambda: producer.commit_transaction(timeout)
                )
            except (ReplayFailed, KafkaException, BufferError) as exc:
                n = 0
                with contextlib.suppress(KafkaException):  # fenced or fatal: the next run's init aborts it
                    producer.abort_transaction(timeout)
                if isinstance(exc, ReplayFailed):
                    raise
                raise ReplayFailed(f"{place.where}: {exc}") from exc
            out.records += n
            out.transactions += 1
            out.progress = prog
            n = 0
            if sink is not None:
                sink(offset_map_rows(pp, sent[0], sent[1], place.offsets(sent[1])))
            if on_transaction is not None:
                on_transaction(pp, prog)
    except BaseException:
        if n:  # the source failed within a transaction: nothing of it is committed
            with contextlib.suppress(KafkaException):
                producer.abort_transaction(timeout)
        raise
    finally:
        if collecting:
            gc.enable()
        producer.flush(1)
        place.close()
    out.problems = list(source.problems)
    return out


@contextlib.contextmanager
def _serving(leases: Iterable[_Lease], every: float = 0.5) -> Iterator[None]:
    """The leases' consumers polled in a thread while a runner's jobs run: their members stay in their
    groups (heartbeats, ``max.poll.interval.ms``) whatever the jobs do (the local runner's jobs poll them
    too, at each transaction, under the lease's lock)."""
    stop = threading.Event()
    held = [lease for lease in leases if lease.consumer is not None]

    def serve() -> None:
        while not stop.wait(every):
            for lease in held:
                with lease.lock, contextlib.suppress(Exception):  # a broken lease: commits are fenced
                    lease.consumer.poll(0)

    thread = threading.Thread(target=serve, name="logdoctor-replay-leases", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _local_runner(
    parallelism: int,
    target: Target,
    leases: Mapping[str, _Lease],
    sink: Callable[[pa.RecordBatch], None] | None,
    on_transaction: Callable[[PartitionPlan, Progress], None] | None,
    limit: RateLimit | None,
) -> PartitionRunner:
    """The jobs run in this process by ``parallelism`` threads, each job with its own producer; the target
    client (an AdminClient, whose requests librdkafka serves from any thread, and caches that a race only
    fills twice), the leases (:attr:`_Lease.lock`), the rate (:class:`RateLimit`) and, one call at a time,
    ``sink`` and ``on_transaction`` are shared. The jobs of one target topic commit their progress to one
    replay group at once, each its own partition: a pending transactional offset holds only its partition
    (K:group-coordinator/.../OffsetMetadataManager.java fetchOffsets: ``hasPendingTransactionalOffsets`` per
    partition), so a job's progress read never waits for another's transaction. The first failure stops
    the other jobs before their next transaction (what they committed stays: a rerun resumes) and is
    raised as it was raised."""
    lock = threading.Lock()

    def one_at_a_time(fn: Callable[..., None] | None) -> Callable[..., None] | None:
        def call(*args: Any) -> None:
            with lock:
                fn(*args)  # type: ignore[misc]

        return None if fn is None else call

    shared_sink, shared_progress = one_at_a_time(sink), one_at_a_time(on_transaction)

    def run(jobs: list[PartitionJob]) -> list[PartitionResult]:
        results: list[Any] = [None] * len(jobs)
        failures: list[BaseException] = []
        stop = threading.Event()
        todo = iter(enumerate(jobs))  # in the plan's order

        def work() -> None:
            while not stop.is_set():
                with lock:
                    i, job = next(todo, (-1, None))
                if job is None:
                    return
                pp = job.partition
                try:
                    results[i] = replay_partition(
                        job, target=target, lease=leases[pp.lease_group or pp.group], sink=shared_sink,
                        on_transaction=shared_progress, limit=limit, stop=stop,
                    )  # fmt: skip
                except BaseException as exc:  # raised by the caller's thread
                    with lock:
                        failures.append(exc)
                    stop.set()

        # the cyclic collector off for the whole pool (each job turns it off; the first to end would turn
        # it on under the others)
        collecting = gc.isenabled()
        gc.disable()
        threads = [
            threading.Thread(target=work, name=f"logdoctor-replay-{n}", daemon=True)
            for n in range(parallelism)  # apply_replay's count, at most one per job
        ]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        except BaseException:  # an interrupt: no further transaction is begun
            stop.set()
            raise
        finally:
            if collecting:
                gc.enable()
        if failures:
            raise failures[0]
        return results

    return run


# --- apply ----------------------------------------------------------------------------------------------


def _pieces(
    runs: Iterable[RecordColumns], max_records: int, max_bytes: int
) -> Iterator[tuple[RecordColumns, bool]]:
    """The records of ``runs`` in pieces (a run, or part of one), each with whether it ends its transaction:
    a transaction ends at the record that makes it ``max_records`` records or ``max_bytes`` bytes
    (:attr:`~logdoctor.replay.source.SourceRecord.size`), or at the last record."""
    count = size = 0
    held: RecordColumns | None = None  # the last piece, until it is known whether it ends a transaction
    for run in runs:
        i, m = 0, len(run.offsets)
        while i < m:
            sums = list(itertools.accumulate(run.sizes[i : i + max_records - count]))
            k = min(len(sums), bisect.bisect_left(sums, max_bytes - size) + 1)  # records up to the limit
            if held is not None:
                yield held, False
            held = run if i == 0 and k == m else run.cut(i, i + k)
            count, size, i = count + k, size + sums[k - 1], i + k
            if count >= max_records or size >= max_bytes:
                yield held, True
                held, count, size = None, 0, 0
    if held is not None:
        yield held, True


def _create_topics(plan: ReplayPlan, target: Target, timeout: float) -> list[str]:
    from confluent_kafka.admin import NewTopic

    wanted = [t for t in plan.topics if t.create and not t.exists]
    if not wanted:
        return []
    new = [NewTopic(t.target_topic, t.partitions or 1, -1, config=dict(t.configs or {})) for t in wanted]
    futures = target.admin.create_topics(new, operation_timeout=timeout, request_timeout=timeout)
    created = []
    for name, fut in futures.items():
        try:
            fut.result(timeout=timeout)
            created.append(name)
        except Exception as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise ReplayFailed(f"could not create topic {name}: {exc}") from exc
    deadline = time.monotonic() + timeout
    names = {t.target_topic for t in wanted}
    while True:  # until every partition of the created topics has a leader
        md = target.admin.list_topics(timeout=timeout)
        ready = all(
            n in md.topics
            and md.topics[n].error is None
            and md.topics[n].partitions
            and all(p.leader >= 0 for p in md.topics[n].partitions.values())
            for n in names
        )
        if ready:
            break
        if time.monotonic() > deadline:
            raise ReplayFailed(f"created topics {sorted(names)} have no leaders after {timeout:.0f} s")
        time.sleep(0.3)
    return sorted(created)


def check_clients(target: Target, producer_config: Mapping[str, Any] | None = None) -> None:
    """The clients a replay writes with, the transactional producer with ``producer_config``, made and
    heard from before anything is written (:meth:`Target.check_clients`): a setting the client library refuses
    raises :class:`~logdoctor.replay.target.ClientSettingsError`, a client the target does not answer
    :class:`~logdoctor.replay.target.TargetUnreachable`."""
    target.check_clients(lambda: _producer(target, "logdoctor-replay-check", producer_config or {}, 0))


def apply_replay(
    plan: ReplayPlan,
    *,
    producer_config: Mapping[str, Any] | None = None,
    txn_records: int = DEFAULT_TXN_RECORDS,
    txn_bytes: int = DEFAULT_TXN_BYTES,
    ignore: Iterable[str] = (),
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
    lock_wait: float | None = None,
    on_offsets: Callable[[pa.RecordBatch], None] | None = None,
    on_transaction: Callable[[PartitionPlan, Progress], None] | None = None,
    timeout: float = 60.0,
    max_rate: float | None = None,
    offset_rows: bool = True,
    runner: PartitionRunner | None = None,
    parallelism: int | None = None,
) -> ReplayResult:
    """Carry out ``plan`` (see the module doc). Refuses (:class:`ReplayRefused`, nothing written) while the
    plan has conflicts whose codes are not in ``ignore``, or another replay into the same target runs;
    the clients that write are made and heard from before anything is written (:func:`check_clients`).
    ``on_offsets``: each committed transaction's offset map rows (else collected in the result);
    the plan's consumer groups (:func:`logdoctor.replay.groups.plan_groups`), if any, are committed after
    the records, on the partitions whose replay is complete (``result.groups``);
    ``on_transaction``: called after each commit (progress reporting). ``lock_wait``: how long to wait for
    a killed run's lease to expire (default: the session timeout and a margin). ``max_rate``: at most this
    many records per second over the whole replay (:class:`RateLimit`; None: as fast as the target
    takes them). ``offset_rows=False``: no offset map row is made (neither handed to ``on_offsets`` nor
    kept; the map is read back with :func:`logdoctor.replay.offset_map.offset_map`): pyarrow is not even
    imported.

    ``parallelism``: how many source partitions are replayed at once in this process (threads, each
    partition with its own transactional producer; default :data:`DEFAULT_PARALLELISM` at most; 1: one
    after the other, in the plan's order). Every lease is taken before the first record is sent. The first
    failure stops the others before their next transaction and is raised.

    ``runner``: the source partitions' replays run by it (:data:`PartitionRunner`: one Spark task each)
    instead of here. The plan, the topics' creation, the conflict checks, the leases (held here, polled
    while the runner runs: the jobs commit with their group metadata) and the groups stay here;
    ``on_offsets``, ``on_transaction``, ``max_rate`` and ``parallelism`` are the local runner's (not with
    a runner), and no offset map row is made (``result.offset_map`` is None)."""
    from logdoctor.logdir.read_plan import plan_read

    local = (max_rate, on_offsets, on_transaction, parallelism)
    if runner is not None and any(x is not None for x in local):
        raise ValueError("max_rate, on_offsets, on_transaction and parallelism are the local runner's")
    if parallelism is not None and parallelism < 1:
        raise ValueError(f"parallelism {parallelism}: at least 1")
    ignored = set(ignore)
    limit = None if max_rate is None else RateLimit(max_rate)
    blocking = [c for c in plan.all_conflicts() if c.code not in ignored]
    if blocking:
        raise ReplayRefused("; ".join(c.message for c in blocking))
    target = Target(plan.bootstrap, plan.admin_config, timeout)
    if target.cluster_id != plan.cluster_id:
        raise ReplayRefused(
            f"{plan.bootstrap} is cluster {target.cluster_id}, the plan's is {plan.cluster_id}"
        )
    check_clients(target, producer_config)
    result = ReplayResult(created_topics=_create_topics(plan, target, timeout))
    read = plan_read(plan.paths, plan.opts)
    refs = live_refs(read.refs)
    wait = lock_wait if lock_wait is not None else session_timeout_ms / 1000 * 1.5 + 3
    leases: dict[str, _Lease] = {}
    rows: list[pa.RecordBatch] | None = [] if runner is None else None
    sink = None if not offset_rows or rows is None else on_offsets if on_offsets is not None else rows.append
    checked: set[str] = set()

    def job(pp: PartitionPlan, metadata: bytes | None = None) -> PartitionJob:
        return PartitionJob(
            pp, refs[(pp.log_dir, pp.source_topic, pp.source_partition)], plan.opts, plan.bootstrap,
            plan.admin_config, dict(producer_config or {}), txn_records, txn_bytes, timeout, metadata,
            read.decisions,
        )  # fmt: skip

    def lease_of(pp: PartitionPlan) -> _Lease:
        if pp.rehashed and pp.target_topic not in checked:  # the lease first: it fences the producers
            _check_rehashed_topic(plan, pp.target_topic, target, producer_config or {}, timeout)
            checked.add(pp.target_topic)
        return leases[pp.lease_group or pp.group]

    try:
        # every lease before the first record, their joins at once: a broker holds a new group's first
        # join group.initial.rebalance.delay.ms (3 s by default; GroupMetadataManager.prepareRebalance),
        # which one lease after another paid once per target topic
        for pp in plan.partitions:
            name = pp.lease_group or pp.group
            if name not in leases:
                leases[name] = _Lease(target, name, pp.target_topic, session_timeout_ms, timeout)
                leases[name].join(wait)
        while not all([lease.assigned() for lease in leases.values()]):
            pass
        held = [lease_of(pp) for pp in plan.partitions]
        if runner is None:
            n = max(1, min(parallelism or DEFAULT_PARALLELISM, len(plan.partitions)))  # the pool's threads
            if limit is not None:
                txn_records = limit.transaction_records(txn_records, n)
            jobs = [job(pp) for pp in plan.partitions]  # the leases themselves: their current metadata
            runner = _local_runner(n, target, leases, sink, on_transaction, limit)
        else:
            jobs = [job(pp, lease.metadata()) for pp, lease in zip(plan.partitions, held, strict=True)]
        with _serving(leases.values()):
            done = runner(jobs)
        for res in done:
            result.partitions.append(res)
            result.problems.extend(res.problems)
    finally:
        for lease in leases.values():
            lease.close()
    if plan.groups is not None:  # after the records: only partitions whose replay is complete
        from logdoctor.replay.groups import apply_groups

        result.groups = apply_groups(plan, target)
    if on_offsets is None and offset_rows and rows is not None:
        import pyarrow as pa

        result.offset_map = pa.Table.from_batches(rows, schema=offset_map_schema())
    return result


#: the producer's delivery reports are served after every this many records (and at each flush)
_POLL_EVERY = 1000


def _producer(
    target: Target,
    transactional_id: str,
    config: Mapping[str, Any],
    max_batch: int,
    topic_max: int | None = None,
    compression: str = "none",
) -> Any:
    """A transactional producer whose batches the target topic takes: ``batch.size`` at most its
    ``max.message.bytes`` (``topic_max``), which the broker compares with each batch whole
    (K:core/.../log/UnifiedLog.scala analyzeAndValidateRecords: RecordTooLargeException, ``sizeInBytes``);
    librdkafka, unlike the Java producer, does not split a batch the broker refuses as too large. A record
    larger alone still goes in a batch of its own (``RECORD_TOO_LARGE`` in the plan when even that does
    not fit). Its batches compressed with ``compression`` (the partition plan's: over ``config``'s), which
    the broker keeps as they are unless the topic's ``compression.type`` is another codec
    (K:storage/.../internals/log/LogValidator.java validateMessagesAndAssignOffsetsCompressed:
    ``inPlaceAssignment`` when the batch's codec is the target's, ``producer`` being the batch's own)."""
    from confluent_kafka import Producer

    conf = {
        "transactional.id": transactional_id,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 10,
        "message.max.bytes": max(1_000_000, max_batch + 1024),
        **({"batch.size": min(1_000_000, topic_max)} if topic_max else {}),
        **dict(config),
        "compression.type": compression,
    }
    return Producer(target.client_config(conf))


def _call(what: str, fn: Callable[[], Any], attempts: int = 5) -> Any:
    """``fn()``, again while librdkafka says its error is retriable."""
    from confluent_kafka import KafkaException

    for attempt in range(attempts):
        try:
            return fn()
        except KafkaException as exc:
            err = exc.args[0]
            if attempt + 1 < attempts and err.retriable():
                time.sleep(0.5)
                continue
            raise ReplayFailed(f"{what}: {err}") from exc
    return None


class _Same:
    """The placement of a replay into the source's partition number (the lease's group commits the progress,
    on the target partition). The partition is the replay's alone (its lease; ``TARGET_NOT_EMPTY`` before),
    so a transaction's records get consecutive offsets: without offset map rows to hand out (``every``),
    only its first and last record report (checked: first, last, count; a failed record fails the commit
    anyway). Delivery reports come in the order of the records for one partition: one list and one
    callback for the whole replay, no per-record closure (the hot path: benchmarks/bench_replay.py)."""

    def __init__(self, pp: PartitionPlan, lease: _Lease, errors: list[str], every: bool):
        self.pp, self.lease, self.every = pp, lease, every
        self.partition = pp.target_partition
        self.target = f"{pp.target_topic}-{self.partition}"
        self.where = f"{pp.name} -> {self.target}"
        self.delivered: list[int] = []

        def report(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                self.delivered.append(msg.offset())

        self.report = report

    def resume(self, target: Target, prog: Progress | None) -> None:
        """From the committed progress ``prog``; without one, the target partition must be empty."""
        if prog is None:
            _refuse_foreign(target, self.pp.target_topic, self.partition, "no replay")
        self.first = None if prog is None else prog.first_target_offset

    def begin(self) -> None:
        """A transaction begins."""
        self.delivered.clear()

    def start(self, piece: RecordColumns, first: bool, last: bool) -> tuple[list[int], list[Any]]:
        """Each record's target partition and delivery callback (``first``, ``last``: the piece begins, ends
        its transaction)."""
        n = len(piece.offsets)
        reports: list[Any] = [self.report if self.every else None] * n
        if first:
            reports[0] = self.report
        if last:
            reports[-1] = self.report
        return [self.partition] * n, reports

    def reports(self, n: int) -> tuple[int, int]:
        """(delivery reports received, wanted) of a transaction of ``n`` records."""
        return len(self.delivered), n if self.every else min(2, n)

    def committed(self, n: int, next_source: int, count: int) -> Progress:
        """The progress after a transaction of ``n`` records up to ``next_source`` (``count`` in all)."""
        d = self.delivered
        if d[-1] - d[0] + 1 != n:
            raise ReplayFailed(
                f"{self.where}: the transaction's {n} records were written at offsets "
                f"{d[0]}-{d[-1]}: another producer writes into the partition"
            )
        self.first = d[0] if self.first is None else self.first
        pp = self.pp
        return Progress(
            pp.source_topic, pp.source_partition, next_source, self.first, count, d[-1] + 1,
            source_id=pp.source_id,
        )  # fmt: skip

    def metadata(self) -> Any:
        return self.lease.metadata()

    def offsets(self, parts: list[int]) -> list[int]:
        return self.delivered

    def close(self) -> None:
        pass


class _Rehashed:
    """The placement of a re-hashed replay (the module doc): each record's key hashed over the target topic's
    partitions, every delivery report kept, per target partition (where they come in the order of its
    records); the progress is the source partition's, committed on the target topic's partition 0 by a
    memberless group (``lease``: held on the target topic, only served here)."""

    #: the most keys whose partition a re-hashed replay remembers (then it forgets them all)
    HASHED = 65536

    def __init__(self, pp: PartitionPlan, lease: _Lease, errors: list[str], every: bool):
        self.pp, self.lease, self.partition = pp, lease, 0
        self.partitions = pp.target_partitions
        self.target = f"{pp.target_topic} (keys over {self.partitions} partitions)"
        self.where = f"{pp.name} -> {pp.target_topic}"
        self.delivered: dict[int, list[int]] = {}
        self.hashed: dict[bytes | None, int] = {}
        self.member: Any = None

        def report(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                self.delivered.setdefault(msg.partition(), []).append(msg.offset())

        self.report = report

    def resume(self, target: Target, prog: Progress | None) -> None:
        from confluent_kafka import Consumer

        if prog is not None and prog.partitions != self.partitions:
            raise ReplayRefused(
                f"{self.pp.name} was re-hashed over {prog.partitions} partitions of {self.pp.target_topic}, "
                f"now {self.partitions}"
            )
        # a consumer of the progress group that never joins it: its metadata is the group's id, generation -1
        self.member = Consumer(target.client_config({"group.id": self.pp.group, "enable.auto.commit": False}))
        self.group = self.member.consumer_group_metadata()

    def begin(self) -> None:
        self.lease.metadata()  # serves the lease consumer's rebalances and heartbeats' callbacks
        self.delivered.clear()

    def start(self, piece: RecordColumns, first: bool, last: bool) -> tuple[list[int], list[Any]]:
        hashed, sp, parts = self.hashed, self.pp.source_partition, []
        for key in piece.keys:
            at = hashed.get(key)
            if at is None:  # keys repeat: each is hashed once per HASHED keys
                if len(hashed) >= self.HASHED:
                    hashed.clear()
                at = hashed[key] = partition_for(key, sp, self.partitions)
            parts.append(at)
        return parts, [self.report] * len(parts)

    def reports(self, n: int) -> tuple[int, int]:
        return sum(len(v) for v in self.delivered.values()), n

    def committed(self, n: int, next_source: int, count: int) -> Progress:
        pp, nxt = self.pp, next_source
        return Progress(
            pp.source_topic, pp.source_partition, nxt, -1, count, nxt, self.partitions, pp.source_id
        )

    def metadata(self) -> Any:
        return self.group

    def offsets(self, parts: list[int]) -> list[int]:
        taken = {p: iter(offsets) for p, offsets in self.delivered.items()}
        return [next(taken[p]) for p in parts]

    def close(self) -> None:
        if self.member is not None:
            with contextlib.suppress(Exception):
                self.member.close()


# --- re-hashed (the default partitioner) -----------------------------------------------------------------


def _check_rehashed_topic(
    plan: ReplayPlan, topic: str, target: Target, producer_config: Mapping[str, Any], timeout: float
) -> None:
    """Before a re-hashed topic's first source partition, its lease held: the target topic has the
    partition count the plan hashes over, and, while none of its source partitions has progress
    (committed, or pending in a killed run's transaction), every target partition is empty once the
    topic's replay producers are fenced (a killed first run's open transaction ended): no record a
    ``read_committed`` consumer reads, no open transaction (:func:`_refuse_foreign`)."""
    pps = [p for p in plan.partitions if p.target_topic == topic]
    counts = target.partition_counts()
    want = pps[0].target_partitions
    if counts.get(topic) != want:
        raise ReplayRefused(
            f"{topic} has {counts.get(topic)} partitions, the plan hashes the keys over {want}: plan again"
        )
    for pp in pps:
        committed, pending = target.committed_progress(pp.group, topic, [0])
        if committed or pending:
            return
    for pp in pps:
        producer = _producer(target, pp.transactional_id, producer_config, pp.max_batch_bytes)
        _call(f"{pp.transactional_id}: init_transactions", lambda p=producer: p.init_transactions(timeout))
    for partition in range(want or 0):
        _refuse_foreign(target, topic, partition, "no re-hashed replay")


def _refuse_foreign(target: Target, topic: str, partition: int, holds: str) -> None:
    """Refuse a target partition without a replay's progress that holds records (``TARGET_NOT_EMPTY``):
    committed ones, or an open transaction's, once the replay's producers of it are fenced (their
    ``init_transactions`` ended a killed run's transaction: K:core/.../coordinator/transaction/
    TransactionCoordinator.scala handleInitProducerId answers only once its markers are written), so
    another producer's."""
    low, high = target.watermarks(topic, partition)
    stable = target.last_stable(topic, partition)
    if target.has_records(topic, partition, low, stable):
        raise ReplayRefused(f"{topic}-{partition} is not empty (offsets {low}-{high - 1}) and holds {holds}")
    if stable < high:
        raise ReplayRefused(
            f"{topic}-{partition} is not empty: another producer's open transaction holds offsets "
            f"{stable}-{high - 1}, and it holds {holds}"
        )
