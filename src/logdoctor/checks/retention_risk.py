"""RETENTION_RISK's one rule, for `scan` (default and --quick) and `retention`: when time retention deletes a
segment whose largest timestamp the broker reads wrong, what must go first, and so the finding's words and
severity.

Kafka deletes by time only from the oldest segment forward, while each one is past the limit:
K:core/src/main/scala/kafka/log/UnifiedLog.scala deleteRetentionMsBreachedSegments runs
deleteOldSegments(shouldDelete), and deletableSegments walks the segments oldest first and stops at the
first one the predicate refuses (or whose upper bound is above the high watermark). So a segment whose
largest timestamp reads as 0 goes at the next retention check only when every older segment goes with it;
otherwise it goes once the last of the older ones passes retention. The moment is found with the round
itself (:func:`logdoctor.checks.retention_round.partition_verdicts`: log start, size and time passes, the high
watermark rule): the round at ``now`` says what goes now; a segment kept then goes, if ever, at the first
moment every segment up to it that is kept now is past retention.ms, and the round at that moment says
whether it does.

Which segments: those whose largest timestamp as the broker reads it is far older than their records' (or 0:
:func:`suspicious`; --quick, which reads no inactive .log, those the index headers make suspect). Severity: an
ERROR when the next retention check deletes it, or when nothing older holds it (its own wrong timestamp alone
sets the date); a WARNING with the date when it goes only once older segments have gone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from logdoctor.checks.findings import Severity
from logdoctor.checks.state.time_words import duration, iso

#: a broker timestamp this much older than the records is "far older", and a timestamp this much ahead of
#: now is "in the future" (not clock noise: a producer's clock ahead of the broker's); RETENTION_RISK's and
#: RETENTION_BLOCKED's (checks.timestamps)
RISK_TOLERANCE_MS = 60_000

#: one retention round: the reason each of ``segments`` (base offset, size, largest timestamp) is deleted at
#: a moment (None: kept); :func:`logdoctor.checks.retention_round.round_at` makes one for a partition
Round = Callable[[list[tuple[int, int, int]], int], list[str | None]]

__all__ = [
    "RISK_TOLERANCE_MS",
    "RiskMoment",
    "Round",
    "deletion_moment",
    "risk_fields",
    "risk_moment",
    "suspicious",
]


@dataclass(frozen=True, slots=True)
class RiskMoment:
    """When time retention deletes one segment, by the largest timestamps the broker reads and by the
    records' true ones."""

    now_ms: int
    #: when the broker deletes it (now_ms: at the next retention check; None: never, as things stand)
    at_ms: int | None
    #: the same with the records' true timestamps (None: never, or not known: ``true_known``)
    true_at_ms: int | None
    #: its own largest timestamp (as the broker reads it) + retention.ms + 1: when it alone would go
    own_due_ms: int | None
    #: base offsets of the older segments the next retention check keeps, that must go first
    first: tuple[int, ...] = ()
    #: the older segment whose largest timestamp sets ``at_ms`` (None: its own, or the next check)
    holder: int | None = None
    true_known: bool = True

    @property
    def next_check(self) -> bool:
        return self.at_ms is not None and self.at_ms <= self.now_ms

    @property
    def held(self) -> bool:
        """Goes only once older segments have gone (later than its own timestamp alone would say)."""
        return (
            not self.next_check
            and self.at_ms is not None
            and self.holder is not None
            and (self.own_due_ms is None or self.at_ms > max(self.now_ms, self.own_due_ms))
        )

    @property
    def early(self) -> bool:
        """The broker deletes it before its records' true timestamps would let it (the risk itself)."""
        if self.at_ms is None:
            return False
        if not self.true_known or self.true_at_ms is None:
            return True
        return self.at_ms < self.true_at_ms and (
            self.next_check or self.true_at_ms - self.at_ms > RISK_TOLERANCE_MS
        )

    @property
    def severity(self) -> Severity:
        """ERROR when the next retention check deletes it or its own timestamp sets the date; WARNING when
        it goes only once older segments have gone (or once what holds it now lets it go)."""
        return Severity.WARNING if self.held or self.at_ms is None else Severity.ERROR

    def when(self) -> str:
        """The finding's ``{when}``: '... it would delete the segment {when}'."""
        if self.at_ms is None:
            own = f"; by its own largest timestamp from {iso(self.own_due_ms)}" if self.own_due_ms else ""
            return (
                "only once what holds it now lets it go (time retention never deletes a segment at or above "
                "the high watermark, nor a tiered one before its upload: deletableSegments)" + own
            )
        if not self.true_known:
            instead = " (its records' true timestamps are not read in --quick; run the default scan)"
        elif self.true_at_ms is None:
            instead = ", where its records' true timestamps would keep it"
        elif self.true_at_ms <= self.at_ms:
            instead = ", when its records' true timestamps would have it go too"
        else:
            instead = f", instead of at {iso(self.true_at_ms)} by its records' true timestamps"
        if self.next_check:
            past = self.now_ms - (self.own_due_ms - 1) if self.own_due_ms is not None else 0
            return (
                f"at the next retention check (already {duration(past)} past retention by its clock){instead}"
            )
        if self.held:
            return (
                f"at {iso(self.at_ms)}, once {_span(self.first)} ha{'s' if len(self.first) == 1 else 've'} "
                f"gone (time retention deletes from the oldest segment forward; segment {self.holder}'s "
                f"largest timestamp sets the date){instead}; the next retention check keeps it"
            )
        return f"at {iso(self.at_ms)}{instead}"

    def to_json(self) -> dict[str, Any]:
        return {
            "deleted_at": self.at_ms,
            "deleted_at_with_true_timestamps": self.true_at_ms if self.true_known else None,
            "next_retention_check": self.next_check,
            "deleted_early": self.early,
            "goes_first": list(self.first),
        }


def _span(bases: tuple[int, ...]) -> str:
    if len(bases) == 1:
        return f"segment {bases[0]}"
    return f"segments {bases[0]} to {bases[-1]} ({len(bases)} segments)"


def suspicious(broker_ts: int | None, true_ts: int | None) -> bool:
    """The broker's largest timestamp of a segment is far older than its records' (or 0)."""
    return (
        broker_ts is not None
        and true_ts is not None
        and true_ts >= 0
        and (broker_ts <= 0 or true_ts - broker_ts > RISK_TOLERANCE_MS)
    )


def deletion_moment(
    segments: list[tuple[int, int, int]],
    k: int,
    *,
    now_ms: int,
    retention_ms: int,
    delete: bool,
    round_: Round,
) -> tuple[int | None, tuple[int, ...], int | None]:
    """When ``round_`` first deletes ``segments[k]`` at or after ``now_ms``: ``(moment or None, the older
    segments kept at now_ms, the one whose largest timestamp sets the moment or None)``. The log start and
    size passes do not depend on the moment and the time pass deletes more the later it runs, so the round at
    the moment every segment up to ``k`` kept now is past ``retention_ms`` says whether it ever goes."""
    reasons = round_(segments, now_ms)
    if reasons[k] is not None:
        return now_ms, (), None
    kept = [j for j in range(k) if reasons[j] is None]
    first = tuple(segments[j][0] for j in kept)
    if not delete or retention_ms < 0:
        return None, first, None
    due, j_max = max((segments[j][2] + retention_ms + 1, j) for j in (*kept, k))
    at = max(due, now_ms)
    if round_(segments, at)[k] is None:
        return None, first, None
    return at, first, segments[j_max][0] if j_max != k else None


def risk_moment(
    broker_segments: list[tuple[int, int, int]],
    true_segments: list[tuple[int, int, int]] | None,
    k: int,
    *,
    now_ms: int,
    retention_ms: int,
    delete: bool,
    round_: Round,
) -> RiskMoment:
    """The moment of ``segments[k]`` by the broker's timestamps and by the true ones (``true_segments``
    None: not known, --quick)."""
    kw: dict[str, Any] = {"now_ms": now_ms, "retention_ms": retention_ms, "delete": delete, "round_": round_}
    at, first, holder = deletion_moment(broker_segments, k, **kw)
    true_at = deletion_moment(true_segments, k, **kw)[0] if true_segments is not None else None
    own = broker_segments[k][2] + retention_ms + 1 if retention_ms >= 0 else None
    return RiskMoment(now_ms, at, true_at, own, first, holder, true_segments is not None)


def risk_fields(moment: RiskMoment) -> dict[str, Any]:
    """The catalog fields and severity a RETENTION_RISK takes from its moment (:func:`catalog.make`)."""
    return {"when": moment.when(), "severity": moment.severity}
