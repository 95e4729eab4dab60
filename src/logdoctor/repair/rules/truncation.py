"""A log cut at its first invalid batch: LOG_CORRUPT, and what the broker's recovery does after the cut.

Restates K:storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegment.java ``recover``
(the walk stops at the first batch failing ``ensureValid``: CRC, size; the log is cut at the bytes
before it and its indexes rebuilt) and K:.../log/LogLoader.java ``recoverLog`` after a truncation:
every later segment of the partition is deleted (here: moved to the backup), producer snapshots
beyond the new log end go (ProducerStateManager.truncateAndReload), and the recovery point becomes
``min(recovery point, new log end)`` (RecoveryOffsets; the checkpoints rule clamps it, the leader
epochs rule truncates the epoch cache). An offset index append failing with InvalidOffsetException
makes recoverLog truncate the whole segment to its base offset (``segment.truncateTo(baseOffset)``);
an offset beyond the int32 range (LogSegmentOffsetOverflowException) is split by the broker
(LogLoader.retryOnOffsetOverflow), not truncated: left to it. A batch whose producer state Kafka's load
refuses with an exception recover does not catch (a control record of an unknown type, a non-transactional
batch inside an open transaction: :class:`~logdoctor.formats.producer_state.ProducerStateError`) fails the
broker's load of the partition without a truncation: nothing is cut there either. A CRC mismatch in a
segment the broker does not re-read at startup is found only at ``--deep``; ``repair --deep`` plans the same
cut.

The KRaft metadata log (``__cluster_metadata-0``): what the cut loses is told
(:func:`logdoctor.checks.metadata_log.metadata_log_loss`), and the cut of a node no other voter backs
is refused without ``--allow-metadata-loss`` (explicit consent).
"""

from __future__ import annotations

from logdoctor.checks.context import Depth
from logdoctor.checks.findings import Finding
from logdoctor.errors import FormatError
from logdoctor.formats.producer_state import ProducerStateError
from logdoctor.formats.recovery import rebuild_indexes
from logdoctor.logdir.model import Segment
from logdoctor.logdir.names import METADATA_TOPIC
from logdoctor.repair.plan import Action, Change
from logdoctor.repair.rules.context import INDEX_SUFFIXES, PartitionPlan, PlanContext, segment_base
from logdoctor.repair.rules.indexes import rebuilt, write_indexes
from logdoctor.repair.steps.truncate import truncate_file

CODES = ("LOG_CORRUPT",)


def plan(ctx: PlanContext, pp: PartitionPlan, segs: dict[int, Segment]) -> None:
    """Truncate at the first corrupt segment still present (later ones go with it)."""
    corrupt = sorted(
        (
            b
            for f in pp.findings
            if f.code == "LOG_CORRUPT"
            for b in [segment_base(f.path)]
            if b is not None and b in segs and b not in pp.removed
        ),
    )
    if corrupt:
        truncate(ctx, pp, segs[corrupt[0]], [f for f in pp.findings if f.code == "LOG_CORRUPT"])


def _expected(error: FormatError | None, what: str) -> bool:
    """Whether ``error`` is the one that expected ``what`` (its ``expected`` starts with it)."""
    return error is not None and str(getattr(error, "expected", "")).startswith(what)


def truncate(ctx: PlanContext, pp: PartitionPlan, seg: Segment, fs: list[Finding]) -> None:
    r = rebuilt(ctx, pp, seg, True)
    size = seg.size
    if r.valid_bytes >= size:
        overlap = any(f.details.get("kind") == "overlap" for f in fs)
        for f in fs:
            if f.details.get("kind") == "overlap" or overlap:
                why = (
                    "segments overlap but every batch is valid: the broker's recovery truncates nothing "
                    "here, and which copy of the overlapping offsets is right needs a person"
                )
            elif ctx.depth < Depth.DEEP:
                why = "recovery finds no invalid batch to truncate at (rescan with --deep)"
            else:
                why = "the broker's recovery reads every batch of this segment as valid: nothing to cut"
            ctx.unrepaired(f, why)
        return
    # LogSegmentOffsetOverflowException: a last offset outside [base, base + int32 max]
    if _expected(r.error, "a last offset within int32"):
        for f in fs:
            ctx.unrepaired(
                f,
                "an offset beyond the int32 range of the segment's base offset: the broker splits such a "
                "segment at startup (LogLoader.retryOnOffsetOverflow / splitOverflowedSegment) instead "
                "of truncating it; logdoctor leaves that to the broker",
            )
        return
    if isinstance(r.error, ProducerStateError):
        for f in fs:
            ctx.unrepaired(
                f,
                f"the broker's load of this partition fails at byte {r.error.position} "
                f"({r.error.kafka_exception} from its producer state: {r.error}): it truncates nothing "
                "there, and logdoctor cuts no record that the broker would keep; what to do with the batch "
                "needs a person (logdoctor dump shows it)",
            )
        return
    if _expected(r.error, "an offset above the last indexed offset"):
        # InvalidOffsetException from OffsetIndex.append (an offset not above the last indexed one):
        # recoverLog truncates the whole segment to its base offset (LogLoader.recoverLog:
        # segment.truncateTo(startOffset))
        r = rebuild_indexes(b"", seg.base_offset, index_interval_bytes=ctx.interval, source=str(seg.log_path))
    loss_note = ""
    if pp.part.topic == METADATA_TOPIC:
        # the KRaft metadata log: what the cut loses, and the last voter's consent (checks.metadata_log,
        # imported here: a repair of topic partitions never loads the metadata log's modules)
        from logdoctor.checks.metadata_log import metadata_log_loss

        loss = metadata_log_loss(
            str(seg.log_path), r.valid_bytes, pp.report.log_end_offset if pp.report else None
        )
        if loss.last_voter and not ctx.allow_metadata_loss:
            consent = (
                f"logdoctor repair {' '.join(ctx.log_dirs)} --only LOG_CORRUPT"
                f"{' --deep' if ctx.depth >= Depth.DEEP else ''} --allow-metadata-loss"
            )
            for f in fs:
                ctx.unrepaired(
                    f,
                    "refused: the KRaft metadata log of a node no other voter backs "
                    f"({loss.voters_text()}); "
                    f"{loss.loss_text()}. Copy {pp.part.path} first; `{consent}` prints the plan that "
                    "truncates it (explicit consent), add --apply to make it",
                )
            return
        if not any(f.details.get("metadata_log") for f in fs):  # the finding says it already
            loss_note = f" KRaft metadata log ({loss.voters_text()}): {loss.loss_text()}."
    action = Action(
        "truncate-log",
        str(seg.log_path),
        "; ".join(f"{f.code}: {f.message}" for f in fs) + loss_note,
        ["LOG_CORRUPT"],
        [f.path for f in fs],
    )
    step = truncate_file(str(seg.log_path), r.valid_bytes, ctx.names)
    action.steps.append(step)
    later_logs = [str(x.log_path) for x in pp.part.segments if x.base_offset > seg.base_offset]
    from logdoctor.repair.removed_records import removed_records  # only where a log is cut (issue 35)

    removed = removed_records(str(seg.log_path), r.valid_bytes, later_logs, ctx.backup_dir)
    action.changes.append(
        Change(
            str(seg.log_path),
            size,
            r.valid_bytes,
            None,
            f"{size - r.valid_bytes} bytes from position {r.valid_bytes} on go to the backup "
            f"(LogSegment.recover stops there: {r.error})"
            + (f"; with the later segments the cut {removed.describe()}" if removed is not None else ""),
        )
    )
    write_indexes(ctx, pp, seg, action, r, INDEX_SUFFIXES)
    pp.rebuilt.add(seg.base_offset)
    new_leo = r.next_offset if r.next_offset is not None else seg.base_offset
    pp.new_leo = new_leo
    for later in pp.part.segments:
        if later.base_offset <= seg.base_offset:
            continue
        pp.removed.add(later.base_offset)
        for p in (later.log_path, later.index_path, later.timeindex_path, later.txnindex_path):
            if p is not None:
                ctx.move_step(
                    action,
                    str(p),
                    "a later segment: recovery deletes it after a truncation (kept in the backup dir)",
                )
    for off, spath in pp.part.producer_snapshots:
        if off > new_leo:
            ctx.move_step(action, str(spath), f"producer snapshot beyond the new log end {new_leo}")
    ctx.add(action)
