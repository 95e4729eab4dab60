"""Consumer groups carried over (issue 72 item 4): each source group's last committed offset on a replayed
partition, translated through the replay's offset map and committed in the target cluster, so that the
group's consumers carry on there at the next record they had not consumed.

- The source's committed offsets are the group coordinator's, read from the inputs' ``__consumer_offsets``
  by the one decoder the project has (:func:`logdoctor.checks.consumer_groups.replay_records`: the last
  OffsetCommit record per group and partition wins, a tombstone deletes it, a transactional offset commit
  counts only once its transaction committed: an aborted one is dropped, an open one is not loaded).
  A partition of ``__consumer_offsets`` held in several log dirs is read from its longest replica.
- A committed offset N means "the next record to read is N". It maps to the target offset of the first
  replayed record whose source offset is N or more; with none (N beyond the last replayed record), to
  the target offset after the partition's replayed range (the next target offset the replay's progress
  names). A commit on a record that was not replayed (an aborted transaction's, filtered by the read
  options, compacted away) thus maps to the next replayed record, where a consumer of the source would
  have resumed. The target offsets come from the offset map read back from the target
  (:func:`logdoctor.replay.offset_map.offset_map`, each record checked against the source), up to the
  furthest commit of the partition.
- With ``--cut-at`` (:mod:`logdoctor.logdir.cut`) a committed offset past the partition's cut end offset
  is clamped to it, the group resuming where the cut ends (``cut_from``: the offset it had).
- A group is committed only where it has no active member on the target (state Empty or Dead, or no such
  group); any other state is the plan's conflict ``GROUP_ACTIVE``. The state is asked again just before
  the commit, and the broker refuses an admin client's commit to a group with members anyway
  (K:group-coordinator/.../classic/ClassicGroup.java validateOffsetCommit: ``UNKNOWN_MEMBER_ID``).
- Only partitions whose replay is complete are committed, after their records; a partition where the
  target group holds a committed offset already is left as it is: the same offset (nothing to do), or
  another one after the replay committed the group there (the group moved on since: never moved back).
  Each offset the replay commits for a group is written in the group's ledger on the target too
  (:func:`logdoctor.replay.target.carried_group`), so that a committed offset no replay committed is told
  apart: a consumer that ran on the target (``auto.offset.reset=latest`` commits the log end while the
  replay runs), or a commit by hand. Its consumers would resume there, skipping the replayed records before
  it (or reading some again; none between them: kept, the same record next): the plan's conflict
  ``GROUP_COMMITTED_ON_TARGET`` says how many; with ``overwrite`` (``--groups-overwrite``) the plan shows
  it moved and ``--apply`` commits the translated offset over it, only where the plan showed it. A rerun
  commits what an interrupted one left, and nothing else. The source commit's metadata string goes with
  it; its leader epoch does not (the target's epochs are others).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from logdoctor.replay.plan import (
    ACTIVE,
    AFTER_REPLAY,
    COMMIT,
    COMMITTED,
    KEPT,
    OTHER,
    Conflict,
    GroupPartition,
    GroupPlan,
    PartitionPlan,
    ReplayPlan,
)

if TYPE_CHECKING:
    from logdoctor.checks.consumer_groups import Commit
    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay.target import Progress, Target

__all__ = ["apply_groups", "plan_groups", "source_commits"]

#: states of a target group that has no active member (describe_consumer_groups; absent: no such group)
_IDLE_STATES = ("EMPTY", "DEAD", "ABSENT")
_OFFSETS_TOPIC = "__consumer_offsets"


# --- the source's commits -------------------------------------------------------------------------------


def source_commits(paths: str | Sequence[str], opts: ReadOptions, groups: str) -> list[Commit]:
    """The committed offsets of the groups whose id ``groups`` (a regex) matches whole, as the source's
    group coordinator loads them from the ``__consumer_offsets`` partitions among ``paths`` (local log
    dirs; of several replicas of a partition, the longest), by group, topic and partition."""
    from logdoctor.checks.consumer_groups import records_of, replay_records
    from logdoctor.logdir.model import LogDir
    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.logdir.read_plan import plan_read

    pattern = re.compile(groups)
    read = plan_read(paths, ReadOptions(topics=_OFFSETS_TOPIC, storage=opts.storage))
    best: dict[int, tuple[tuple[int, str], list[Commit]]] = {}
    for ref in read.refs:
        if ref.topic != _OFFSETS_TOPIC or ref.kind != "log" or not ref.storage.is_local:
            continue
        try:  # the broker's log start without remote storage (LogLoader.load)
            start = LogDir.shared(ref.log_dir).partition(ref.topic, ref.partition).log_start_offset or 0
        except (OSError, KeyError, ValueError, AttributeError):
            start = 0
        last = -1

        def rows(path: str = ref.path, start: int = start) -> Iterable[Any]:
            nonlocal last
            for row in records_of(path, start):
                last = row[0]
                yield row

        commits = list(replay_records(rows(), ref.path).values())
        rank = (last, ref.path)
        if ref.partition not in best or rank > best[ref.partition][0]:
            best[ref.partition] = (rank, commits)
    out = [
        c
        for _rank, commits in best.values()
        for c in commits
        if c.offset >= 0 and pattern.fullmatch(c.group) is not None
    ]
    return sorted(out, key=lambda c: (c.group, c.topic, c.partition))


#: why no group is carried over by a re-hashed replay
REHASHED_GROUPS = (
    "consumer groups cannot be carried over by a replay that re-hashes the keys (--partitioner default): "
    "a group's committed offset in a source partition has no counterpart in a target partition, which "
    "holds records of every source partition; replay with the same partitions, or reset the groups on the "
    "target (kafka-consumer-groups.sh --reset-offsets --to-datetime ...)"
)


# --- the plan ---------------------------------------------------------------------------------------------


def plan_groups(
    plan: ReplayPlan, groups: str, target: Target | None = None, overwrite: bool = False
) -> list[GroupPlan]:
    """Each source group ``groups`` (a regex matched whole; ``.*``: every group) matches with a commit on a
    replayed partition of ``plan``: its state on the target, and each partition's before and after
    (translated where the partition's replay is complete). Sets ``plan.groups`` (what
    :func:`logdoctor.replay.apply.apply_replay` commits after the records) and returns it. Writes
    nothing. Refuses (``ValueError``) a plan that re-hashes the keys (``partitioner`` default): a group's
    position in a source partition has no counterpart in any one target partition, whose records come from
    many source partitions in the order their transactions committed; a consumer resuming there would skip
    records of the other source partitions or read some again. ``overwrite``: a committed offset on the
    target that no replay committed is moved to the translated one (else ``GROUP_COMMITTED_ON_TARGET``)."""
    from logdoctor.replay.partitioner import DEFAULT
    from logdoctor.replay.target import Target

    if plan.partitioner == DEFAULT:
        raise ValueError(REHASHED_GROUPS)
    if target is None:
        target = Target(plan.bootstrap, plan.admin_config)
    by_source = {(pp.source_topic, pp.source_partition): pp for pp in plan.partitions}
    out: dict[str, GroupPlan] = {}
    for c in source_commits(plan.paths, plan.opts, groups):
        gp = out.get(c.group)
        if gp is None:
            state, members = target.group_state(c.group)
            gp = out[c.group] = GroupPlan(c.group, state, members, overwrite=overwrite)
        pp = by_source.get((c.topic, c.partition))
        if pp is None:
            gp.not_replayed.append(f"{c.topic}-{c.partition}")
            continue
        past_cut = pp.cut_end is not None and c.offset > pp.cut_end  # --cut-at: clamped into the cut
        gp.partitions.append(
            GroupPartition(
                c.topic,
                c.partition,
                pp.cut_end if past_cut else c.offset,  # type: ignore[arg-type]
                c.metadata,
                c.commit_timestamp,
                pp.target_topic,
                pp.target_partition,
                cut_from=c.offset if past_cut else None,
            )
        )
    result = [gp for gp in out.values() if gp.partitions]
    for gp in result:
        if gp.target_state not in _IDLE_STATES or gp.members:
            gp.conflicts.append(
                Conflict(
                    "GROUP_ACTIVE",
                    f"group {gp.group} is {gp.target_state} on the target with {len(gp.members)} member(s)"
                    f"{': ' + ', '.join(gp.members) if gp.members else ''}: its offsets are committed only "
                    "while it has no active member (stop its consumers)",
                )
            )
    complete = {  # a topic created by --apply: after the replay
        pp.name: (_complete(pp, pp.progress, pp.pending) and pp.target_offsets is not None, pp.progress)
        for pp in plan.partitions
    }
    _translate(plan, target, result, complete)
    for gp in result:
        foreign = [p for p in gp.partitions if p.foreign]
        if foreign and not overwrite:
            gp.conflicts.append(
                Conflict(
                    "GROUP_COMMITTED_ON_TARGET",
                    f"group {gp.group} has offsets on the target that no replay committed: "
                    + "; ".join(_resumes(p) for p in foreign)
                    + ": --groups-overwrite moves them to the translated offsets, --ignore-conflict "
                    "GROUP_COMMITTED_ON_TARGET leaves them",
                )
            )
    plan.groups = result
    return result


def _resumes(p: GroupPartition) -> str:
    """Where a group whose offset no replay committed resumes, and what its consumers miss or read again."""
    where = f"{p.target_topic}-{p.target_partition} at {p.target_committed}"
    if p.target_offset is None:
        return f"{where} (its consumers resume there, not at the translated offset, after the replay)"
    if p.skipped is not None:
        return f"{where}, not {p.target_offset}: its consumers skip {p.skipped} replayed record(s)"
    return f"{where}, not {p.target_offset}: its consumers read {p.read_again} replayed record(s) again"


def _complete(pp: PartitionPlan, prog: Progress | None, pending: bool) -> bool:
    """Whether ``pp``'s replay is complete by its committed progress ``prog`` (``pending``: a killed run's
    transaction still holds the next one). A partition with nothing to replay is."""
    if pp.records == 0:
        return True
    if prog is None or pending or pp.last_offset is None:
        return False
    return prog.next_source_offset > pp.last_offset


def _translate(
    plan: ReplayPlan,
    target: Target,
    groups: list[GroupPlan],
    complete: Mapping[str, tuple[bool, Progress | None]],
) -> None:
    """Fill each partition's ``target_offset`` and ``status`` where its replay is complete."""
    from logdoctor.replay.target import carried_group

    by_name = {pp.name: pp for pp in plan.partitions}
    wanted: dict[str, set[int]] = {}
    for gp in groups:
        for p in gp.partitions:
            name = f"{p.source_topic}-{p.source_partition}"
            if complete[name][0]:
                wanted.setdefault(name, set()).add(p.source_offset)
    mapped = {
        name: _map_offsets(plan, target, by_name[name], complete[name][1], ns) for name, ns in wanted.items()
    }
    for gp in groups:
        where = [(p.target_topic, p.target_partition) for p in gp.partitions]
        committed = target.group_offsets(gp.group, where)
        carried: dict[tuple[str, int], int] = {}
        for topic in sorted({t for t, _p in where}):
            ledger = carried_group(plan.cluster_id, gp.group, topic)
            carried.update(target.group_offsets(ledger, [w for w in where if w[0] == topic]))
        for p in gp.partitions:
            p.target_committed = committed.get((p.target_topic, p.target_partition))
            p.carried = carried.get((p.target_topic, p.target_partition))
            name = f"{p.source_topic}-{p.source_partition}"
            if name not in mapped:
                p.target_offset, p.status = None, AFTER_REPLAY
                continue
            p.target_offset = mapped[name][p.source_offset]
            if p.target_committed is None:
                p.status = COMMIT
            elif p.target_committed == p.target_offset:
                p.status = COMMITTED
            elif p.carried is not None:
                p.status = KEPT
            else:  # no replay committed it: kept where no replayed record lies between (a marker's offset)
                low, high = sorted((p.target_committed, p.target_offset))
                n = _records_between(plan, target, by_name[name], low, high)
                p.skipped, p.read_again = (n, None) if p.target_committed > p.target_offset else (None, n)
                p.status = OTHER if n else KEPT


def _records_between(plan: ReplayPlan, target: Target, pp: PartitionPlan, low: int, high: int) -> int:
    """The replayed records of ``pp`` at target offsets ``low`` to ``high - 1`` (its offset map read back)."""
    from logdoctor.replay.offset_map import offset_map

    n = 0
    batches = offset_map(plan, only=[pp.name], timeout=target.timeout)
    try:
        for batch in batches:
            offsets = batch.column("target_offset").to_pylist()
            n += sum(1 for t in offsets if t is not None and low <= t < high)  # None: cleaned away there
            if offsets and offsets[-1] is not None and offsets[-1] >= high:
                break
    finally:
        batches.close()
    return n


def _map_offsets(
    plan: ReplayPlan, target: Target, pp: PartitionPlan, prog: Progress | None, offsets: set[int]
) -> dict[int, int]:
    """Source committed offset -> target offset, for a partition whose replay is complete (the module doc):
    read from the offset map up to the furthest of ``offsets`` that lies inside the replayed range."""
    from logdoctor.replay.offset_map import offset_map

    if prog is None:  # nothing replayed: the target partition's end
        end = target.watermarks(pp.target_topic, pp.target_partition)[1]
        return dict.fromkeys(offsets, end)
    out: dict[int, int] = {}
    inside = []
    for n in sorted(offsets):
        if pp.first_offset is not None and n <= pp.first_offset:
            out[n] = prog.first_target_offset
        elif n >= prog.next_source_offset:
            out[n] = prog.next_target_offset
        else:
            inside.append(n)
    if inside:
        todo = iter(inside)
        n = next(todo, None)
        batches = offset_map(plan, only=[pp.name], timeout=target.timeout)
        try:
            for batch in batches:
                src = batch.column("source_offset").to_pylist()
                tgt = batch.column("target_offset").to_pylist()
                for s, t in zip(src, tgt, strict=True):
                    if t is None:  # cleaned away on the target: its consumers read the next record kept
                        continue
                    while n is not None and s >= n:
                        out[n] = t
                        n = next(todo, None)
                    if n is None:
                        break
                if n is None:
                    break
        finally:
            batches.close()
        while n is not None:  # past the last replayed record (not reached: the progress says otherwise)
            out[n] = prog.next_target_offset
            n = next(todo, None)
    return out


# --- apply ------------------------------------------------------------------------------------------------


def apply_groups(plan: ReplayPlan, target: Target) -> list[GroupPlan]:
    """Commit each group's translated offsets (the module doc) on the partitions whose replay is complete
    now, where the target group has none yet (or, with the plan's ``overwrite``, one no replay committed
    that the plan showed), and in the group's ledger; a group with active members is left (``ACTIVE``).
    Returns the groups as committed (each partition's ``status``: ``committed`` for those this call
    committed or found committed, ``kept``, ``committed on the target`` (left), ``after the replay``,
    ``active``)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    groups = [
        GroupPlan(g.group, g.target_state, list(g.members),
                  [GroupPartition(p.source_topic, p.source_partition, p.source_offset, p.metadata,
                                  p.commit_timestamp, p.target_topic, p.target_partition)
                   for p in g.partitions], list(g.not_replayed), overwrite=g.overwrite)
        for g in plan.groups
    ]  # fmt: skip
    shown = {  # the offsets no replay committed that the plan showed: only those are overwritten
        (g.group, p.target_topic, p.target_partition): p.target_committed
        for g in plan.groups
        for p in g.partitions
        if p.foreign
    }
    complete: dict[str, tuple[bool, Progress | None]] = {}
    for pp in plan.partitions:
        prog = target.progress(pp.group, pp.target_topic, [pp.target_partition]).get(pp.target_partition)
        complete[pp.name] = (_complete(pp, prog, False), prog)
    _translate(plan, target, groups, complete)
    for gp in groups:
        todo = [
            p
            for p in gp.partitions
            if p.status == COMMIT
            or (
                p.status == OTHER
                and gp.overwrite
                and shown.get((gp.group, p.target_topic, p.target_partition), -1) == p.target_committed
            )
        ]
        _ledger(target, plan, gp, [p for p in gp.partitions if p.status == COMMITTED and p.carried is None])
        if not todo:
            continue
        gp.target_state, gp.members = target.group_state(gp.group)  # again, just before
        if gp.target_state not in _IDLE_STATES or gp.members:
            for p in todo:
                p.status = ACTIVE
            continue
        request = ConsumerGroupTopicPartitions(
            gp.group,
            [TopicPartition(p.target_topic, p.target_partition, p.target_offset, *_sendable(p.metadata))
             for p in todo],
        )  # fmt: skip
        got = target.alter_group_offsets(request)
        for p in todo:
            err = got.get((p.target_topic, p.target_partition))
            if err is None:
                p.status = COMMITTED
            elif "UNKNOWN_MEMBER_ID" in err or "REBALANCE" in err:
                p.status = ACTIVE  # a member joined meanwhile: the coordinator refused
            else:
                raise RuntimeError(f"group {gp.group}: {p.target_topic}-{p.target_partition}: {err}")
        _ledger(target, plan, gp, [p for p in todo if p.status == COMMITTED])
    return groups


def _ledger(target: Target, plan: ReplayPlan, gp: GroupPlan, done: list[GroupPartition]) -> None:
    """``done``'s translated offsets, committed for ``gp``, written in its ledger on the target
    (:func:`logdoctor.replay.target.carried_group`: a group without members, one per target topic)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    from logdoctor.replay.target import carried_group

    for topic in sorted({p.target_topic for p in done}):
        ledger = carried_group(plan.cluster_id, gp.group, topic)
        request = ConsumerGroupTopicPartitions(
            ledger,
            [
                TopicPartition(topic, p.target_partition, p.target_offset)
                for p in done
                if p.target_topic == topic
            ],
        )
        for (t, part), err in target.alter_group_offsets(request).items():
            if err is not None:
                raise RuntimeError(f"group {ledger} (the ledger of {gp.group}): {t}-{part}: {err}")
        for p in done:
            if p.target_topic == topic:
                p.carried = p.target_offset


def _sendable(metadata: str | None) -> tuple[str, ...]:
    """The metadata as confluent-kafka sends it: a C string, to which it adds a NUL (the metadata a Python
    consumer commits ends with one: K's OffsetCommitValue holds it as committed). One trailing NUL is taken
    off (the client puts it back: the same bytes); one inside cannot be sent, and the metadata is left."""
    if not metadata:
        return ()
    text = metadata[:-1] if metadata.endswith("\x00") else metadata
    return () if "\x00" in text or not text else (text,)
