"""The read plan every output consumes: which partitions, which segments (the remote tier attached), and
the offsets that will not be read once, named before anything is read.

Every way records leave logdoctor (Parquet with either writer, Iceberg, Delta, the ``kafka-log`` and
``kafka-log-segments`` data sources, ``dump`` of a partition's remote part) starts from
:func:`plan_read`, so that an input kind (a log dir at a URI, the remote tier) reaches them all or none:

1. discovery of the paths (:func:`logdoctor.logdir.discovery.discover`);
2. the remote tier attached (:func:`logdoctor.logdir.remote_attach.attach_remote`, options
   ``remoteStorage``/``remoteLayout``/``remotePrivateKey``), its listing checked against the remote log
   metadata where ``__remote_log_metadata`` partitions are in the inputs' log dirs
   (:mod:`logdoctor.logdir.remote_metadata`): a copied segment with no object is a named gap, a second
   copy is named and read once;
3. the topics (option ``topics``: a comma list or a regex). Internal topics (names starting with ``__``:
   Kafka's own ``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``
   (K:clients/.../common/internals/Topic.java isInternal), ``__remote_log_metadata``,
   ``__cluster_metadata``, and whatever else MirrorMaker 2's default topic filter leaves out with
   ``__.*``, K:connect/mirror/.../DefaultTopicFilter.java; and Schema Registry's ``_dek_registry_keys``)
   are left out of a log dir, as Kafka's
   consumers (``exclude.internal.topics``) and MirrorMaker 2 do, unless ``topics`` names them (a comma
   list that lists them, a regex that starts with ``__``), ``includeInternal`` is true, or their
   partition folder or segment file is itself an input. :attr:`ReadPlan.left_out` says what was left
   out;
4. the coverage of every tiered partition read with its remote tier: each offset in [log start, first
   local offset) (the log start from the log dir's ``log-start-offset-checkpoint``) is in one segment
   read, or named in :attr:`ReadPlan.not_read`.

What is found only by reading (a damaged batch, an object shorter than its segment) is named by the
readers; together with :attr:`ReadPlan.not_read` that is every offset not exported once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from logdoctor.logdir.coordinator import CoordinatorDecisions, coordinator_decisions
from logdoctor.logdir.names import INTERNAL_TOPICS_UNPREFIXED  # Schema Registry's _dek_registry_keys
from logdoctor.logdir.offsets import uncovered
from logdoctor.logdir.read_options import INTERNAL_TOPIC_PREFIX, ReadOptions, names_internal, topic_matcher
from logdoctor.logdir.refs import PartitionRef, SegmentRef
from logdoctor.logdir.remote_attach import ListingProblem

__all__ = [
    "INTERNAL_TOPIC_PREFIX",
    "NotRead",
    "OffsetOrder",
    "ReadPlan",
    "is_internal_topic",
    "one_remote_copy",
    "plan_read",
    "topic_matcher",
]

#: offsets that will not be read once (see :class:`~logdoctor.logdir.remote_attach.ListingProblem`)
NotRead = ListingProblem


def is_internal_topic(topic: str) -> bool:
    return topic.startswith(INTERNAL_TOPIC_PREFIX) or topic in INTERNAL_TOPICS_UNPREFIXED


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """What an output reads: ``refs`` (the selected partitions, remote segments first), the inputs
    (``items``), the offsets named as not read once (``not_read``), and the internal topics left out."""

    items: tuple[str, ...]
    refs: tuple[PartitionRef, ...]
    not_read: tuple[ListingProblem, ...] = ()
    left_out: tuple[str, ...] = ()
    #: every partition found, before the topics were chosen (what outputs must not overlap)
    found: tuple[PartitionRef, ...] = ()
    #: what becomes of a transaction left without a marker: the coordinator state of the
    #: ``__transaction_state`` partitions found, and the ``openTransactions`` policy
    #: (:mod:`logdoctor.logdir.coordinator`), what every reader's ``partition_transactions`` is given
    decisions: CoordinatorDecisions = field(default_factory=CoordinatorDecisions)

    @property
    def log_dirs(self) -> list[str]:
        return sorted({r.log_dir for r in (self.found or self.refs)})

    def left_out_text(self) -> str | None:
        """One line naming the internal topics left out, and how to export them (None: none)."""
        if not self.left_out:
            return None
        return (
            f"internal topics left out: {', '.join(self.left_out)} (name them in --topics, or give "
            "--include-internal, to export them)"
        )


def _remote_key(ref: PartitionRef, seg: SegmentRef) -> tuple[str, int, str, str]:
    assert seg.remote is not None
    return (ref.topic, ref.partition, str(seg.remote.root), seg.path)


def _local_from(ref: PartitionRef) -> float:
    """The replica's first local offset (infinite without a local segment: it reads the whole remote tier)."""
    local = [s.base_offset for s in ref.segments if s.remote is None]
    return float(local[0]) if local else float("inf")


def one_remote_copy(refs: Sequence[PartitionRef]) -> tuple[PartitionRef, ...]:
    """``refs`` with the remote tier read once (issue 47): replicas of one partition (several brokers' log
    dirs) read with one store list the same objects, each cut where its own local log takes over. The
    replica whose local log starts highest (one with no local segment reads the whole remote tier) keeps
    them, the others lose every remote segment the kept one holds; their rows are their local segments.
    So each remote offset is read once (its rows' ``log_dir`` is the store) and each local offset once per
    replica, and one replica's rows with the store's are that replica's whole log (a replica whose local
    log starts lower holds the offsets between in its own rows too). In offset order, as ``refs``."""
    holder: dict[tuple[str, int, str, str], tuple[float, int]] = {}
    for i, ref in enumerate(refs):
        reach = _local_from(ref)
        for seg in ref.segments:
            if seg.remote is not None:
                key = _remote_key(ref, seg)
                best = holder.get(key)
                if best is None or reach > best[0]:
                    holder[key] = (reach, i)
    if not holder:
        return tuple(refs)
    out: list[PartitionRef] = []
    for i, ref in enumerate(refs):
        segs = tuple(s for s in ref.segments if s.remote is None or holder[_remote_key(ref, s)][1] == i)
        out.append(ref if len(segs) == len(ref.segments) else replace(ref, segments=segs))
    return tuple(out)


def normalized(path: str, local: bool) -> str:
    """``path`` as one partition folder is always named (absolute, or a URI without a trailing slash)."""
    return os.path.abspath(os.path.normpath(path)) if local and "://" not in path else path.rstrip("/")


def named_directly(ref: PartitionRef, item: str) -> bool:
    """The partition folder, or one of its segment files, is the input ``item`` itself."""
    local = ref.storage.is_local
    given, path = normalized(item, local), normalized(ref.path, local)
    return given == path or os.path.dirname(given) == path


def _metadata(refs: Sequence[PartitionRef]):
    """The replay of the ``__remote_log_metadata`` partitions of the local log dirs of the inputs (a
    partition folder given alone: its log dir's), None when they hold none."""
    from logdoctor.logdir.remote_metadata import find_metadata_partitions, replay_remote_log_metadata

    dirs = sorted({r.log_dir for r in refs if r.storage.is_local and r.log_dir})
    if not dirs or not find_metadata_partitions(dirs):
        return None
    return replay_remote_log_metadata(dirs)


def _log_start(ref: PartitionRef) -> int | None:
    """The partition's ``log-start-offset-checkpoint`` entry (None: none, or not a local log dir)."""
    if not ref.storage.is_local:
        return None
    from logdoctor.logdir.model import LogDir

    try:
        return LogDir.shared(ref.log_dir).partition(ref.topic, ref.partition).log_start_offset_checkpoint
    except (OSError, KeyError, ValueError, AttributeError):
        return None


def _uncovered(ref: PartitionRef, named: Sequence[ListingProblem]) -> list[ListingProblem]:
    """The offsets of [log start, first local offset) that no remote segment to read holds and no
    listing problem names already (rule 4 of the module doc)."""
    remote = [s for s in ref.segments if s.remote is not None]
    if not remote:
        return []
    local = [s for s in ref.segments if s.remote is None]
    end = local[0].base_offset if local else None
    start = _log_start(ref)
    if start is None or end is None or start >= end:
        return []
    held: list[tuple[int, int]] = []
    for i, s in enumerate(remote):
        last = s.remote.end_offset if s.remote is not None else None
        if last is None:
            nxt = remote[i + 1].base_offset if i + 1 < len(remote) else end
            last = nxt - 1
        held.append((s.base_offset, last + 1))
    for p in named:
        held.append((p.first_offset, (p.last_offset if p.last_offset is not None else end - 1) + 1))
    return [
        ListingProblem(
            ref.topic,
            ref.partition,
            remote[0].path if a < remote[0].base_offset else ref.path,
            a,
            b - 1,
            f"{ref.topic}-{ref.partition}: offsets {a}-{b - 1} not read: the log start offset is "
            f"{start} (log-start-offset-checkpoint of {ref.log_dir}) and no object of the remote "
            f"store holds them (the first local offset is {end})",
        )
        for a, b in uncovered(start, end, held)
    ]


def _readable_only(refs: list[PartitionRef]) -> tuple[list[PartitionRef], list[ListingProblem]]:
    """The refs with what this user cannot read taken out, and each named (issue 59 item 8): a partition
    folder it cannot list (read nothing of it), a local .log it cannot open (that segment's offsets, up to
    the next segment's base offset). Reading them anyway failed the whole export (exit 64, or Python's
    "[Errno 13]" from the transaction planning); the readable partitions are still exported. One
    ``access`` call per local segment (the real user's rights, as open() checks them)."""
    kept: list[PartitionRef] = []
    named: list[ListingProblem] = []
    for ref in refs:
        if ref.unreadable is not None:
            named.append(
                ListingProblem(
                    ref.topic, ref.partition, ref.path, 0, None,
                    f"{ref.topic}-{ref.partition}: not read: {ref.path}: {ref.unreadable}", permission=True,
                )
            )  # fmt: skip
            kept.append(ref)  # no segments: nothing of it is read
            continue
        if not ref.storage.is_local:
            kept.append(ref)
            continue
        segs = []
        for s in ref.segments:
            if s.remote is None and not os.access(s.path, os.R_OK):
                last = s.next_base_offset - 1 if s.next_base_offset is not None else None
                offsets = f"offsets {s.base_offset}" + (f"-{last}" if last is not None else " and after")
                named.append(
                    ListingProblem(
                        ref.topic, ref.partition, s.path, s.base_offset, last,
                        f"{ref.topic}-{ref.partition}: {offsets} not read: {s.path}: permission denied: this "
                        "user cannot read the file (run as the broker's user or as root)",
                        permission=True,
                    )
                )  # fmt: skip
                continue
            segs.append(s)
        kept.append(ref if len(segs) == len(ref.segments) else replace(ref, segments=tuple(segs)))
    return kept, named


def plan_read(
    paths: str | Sequence[str],
    opts: ReadOptions | None = None,
    *,
    keep_local_copies: bool = False,
) -> ReadPlan:
    """The read plan of ``paths`` with the read options ``opts`` (see the module doc). Raises
    :class:`~logdoctor.logdir.discovery.DiscoveryError` for a bad path (a store that cannot be used:
    :class:`~logdoctor.logdir.remote_store.RemoteTierError`)."""
    from logdoctor.logdir.discovery import discover, split_paths
    from logdoctor.logdir.remote_attach import attach_remote

    opts = opts if opts is not None else ReadOptions()
    items = split_paths(paths, opts)
    found = discover(items, opts)
    problems: list[ListingProblem] = []
    if opts.remote is not None:
        found = attach_remote(
            found,
            opts.remote,
            metadata=_metadata(found),
            problems=problems,
            keep_local_copies=keep_local_copies,
        )
    match = topic_matcher(opts.topics)
    internal_ok = opts.include_internal or names_internal(opts.topics)
    refs: list[PartitionRef] = []
    left_out: set[str] = set()
    for ref in found:
        if not match(ref.topic):
            continue
        left = is_internal_topic(ref.topic) and not internal_ok
        if left and not any(named_directly(ref, item) for item in items):
            left_out.add(ref.topic)
            continue
        refs.append(ref)
    refs, unreadable = _readable_only(refs)
    chosen = {(r.topic, r.partition) for r in refs}
    not_read = [p for p in problems if (p.topic, p.partition) in chosen]
    not_read.extend(unreadable)
    if not keep_local_copies:
        for ref in refs:
            named = [p for p in not_read if (p.topic, p.partition) == (ref.topic, ref.partition) and p.lost]
            not_read.extend(_uncovered(ref, named))
    not_read.sort(key=lambda p: (p.topic, p.partition, p.first_offset))
    decisions = coordinator_decisions(found, opts.open_transactions)
    if opts.cut_at is not None:
        from logdoctor.logdir.cut import cut_moments

        decisions = replace(decisions, cut_moments=cut_moments(refs))
    return ReadPlan(
        tuple(items), tuple(refs), tuple(not_read), tuple(sorted(left_out)), tuple(found), decisions
    )


class OffsetOrder:
    """The offsets of one segment's batches as they are read, checked so that each is read once or named
    (``problems``: one line each, naming the file, the byte position and the offsets):

    - a batch whose base offset is at or below an offset already read (it goes backwards or repeats; the
      base offset is outside the CRC, K:clients/.../record/DefaultRecordBatch.java) is not read: its
      offsets were read already; in a log dir and in the remote tier alike;
    - in a remote segment (a tiered topic is never compacted, K:core/.../log/UnifiedLog.scala
      isRemoteLogEnabled, so its offsets are consecutive) offsets that are skipped, and a batch past the
      segment's last offset (the remote log metadata's, or the next segment's start), are named too."""

    __slots__ = ("_end", "_last", "_remote", "_seg", "problems")

    def __init__(self, seg: SegmentRef) -> None:
        self._seg = seg
        self._remote = seg.remote is not None
        self._last: int | None = seg.base_offset - 1 if self._remote else None
        end = None
        if seg.remote is not None:  # its own last offset (not where the local log takes over)
            bounds = [seg.next_base_offset - 1] if seg.next_base_offset is not None else []
            if seg.remote.end_offset is not None:
                bounds.append(seg.remote.end_offset)
            end = min(bounds) if bounds else None
        self._end = end
        self.problems: list[str] = []

    @property
    def end(self) -> int | None:
        """The segment's own last offset (a remote segment's: its metadata's end offset, or the next
        segment's base - 1), None when unknown or for a local segment."""
        return self._end

    def beyond(self, batch: Any) -> None:
        """A read that stops at ``batch`` because it starts past the range read: named when that is the
        segment's own last offset (an object that also holds the next segment's offsets)."""
        if self._end is None or int(batch.base_offset) <= self._end:
            return
        base = int(batch.base_offset)
        missing = ""
        if self._last is not None and self._last < self._end:
            missing = f"; offsets {self._last + 1}-{self._end} are in no batch before it: not read"
        self.problems.append(
            f"{self._seg.path}@{batch.position}: the object goes on past the segment's last offset "
            f"{self._end} (a batch from offset {base}): those offsets are read once, from the segment "
            f"that holds them{missing}"
        )

    def passed(self, last_offset: int | None) -> None:
        """A batch left out alone (its CRC does not match: named by the caller) held offsets up to
        ``last_offset``: the next batch's offsets follow on from it, not a gap of the segment."""
        if last_offset is not None and (self._last is None or last_offset > self._last):
            self._last = int(last_offset)

    def admit(self, batch: Any) -> bool:
        """Whether to read ``batch`` (False: its offsets were read already; named in ``problems``)."""
        base, last = int(batch.base_offset), int(batch.last_offset)
        where = f"{self._seg.path}@{batch.position}"
        if self._last is not None and base <= self._last:
            self.problems.append(
                f"{where}: the batch's base offset {base} goes back (offsets up to {self._last} were read "
                f"before it): offsets {base}-{last} not read again"
            )
            return False
        if self._remote and self._last is not None and base > self._last + 1:
            self.problems.append(
                f"{where}: offsets {self._last + 1}-{base - 1} are in no batch of the remote segment "
                f"(its batches go from offset {self._last} to {base}): not read"
            )
        if self._end is not None and last > self._end:
            self.problems.append(
                f"{where}: the batch holds offsets {max(base, self._end + 1)}-{last}, past the segment's "
                f"last offset {self._end}: those offsets are read from the segment that holds them"
            )
        self._last = last
        return True
