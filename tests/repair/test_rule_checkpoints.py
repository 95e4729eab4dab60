"""rules/checkpoints.py on its own: what happens to one log-start-offset-checkpoint entry, as
K:storage/.../log/LogLoader.java load decides the log start (``isRemoteLogEnabled ? checkpoint :
max(checkpoint, first segment)``) and recoverLog deletes every segment below a log start beyond the
log end (deleteSegmentsIfLogStartGreaterThanLogEnd)."""

from __future__ import annotations

from logdoctor.repair.rules.checkpoints import _Bounds, _log_start_decision

TP = ("t", 0)


def bounds(first: int = 100, leo: int = 200, *, tiered: bool = False, maybe: bool = False) -> _Bounds:
    return _Bounds(first, leo, tiered, "remote.storage.enable=true" if tiered else "", maybe_tiered=maybe)


def test_an_entry_within_the_log_is_kept() -> None:
    d = _log_start_decision(TP, 150, bounds(), "/d")
    assert (d.value, d.changed, d.refused) == (150, False, False)


def test_an_entry_below_the_first_segment_is_never_raised() -> None:
    # without remote storage the broker takes max(entry, first segment) itself; with it the entry is
    # where the remote tier starts
    d = _log_start_decision(TP, 10, bounds(), "/d")
    assert (d.value, d.changed, d.refused) == (10, False, False)
    assert "kept as it is" in d.note


def test_an_entry_beyond_the_log_end_becomes_the_first_offset_on_disk() -> None:
    d = _log_start_decision(TP, 500, bounds(), "/d")
    assert (d.value, d.changed, d.refused) == (100, True, False)
    assert "Deleting all segments" in d.note


def test_a_tiered_entry_beyond_the_log_end_is_left_and_refused() -> None:
    d = _log_start_decision(TP, 500, bounds(tiered=True), "/d")
    assert (d.value, d.changed, d.refused) == (500, False, True)


def test_a_tiered_entry_below_the_first_segment_is_kept() -> None:
    d = _log_start_decision(TP, 10, bounds(tiered=True), "/d")
    assert (d.value, d.changed, d.refused) == (10, False, False)


def test_a_maybe_tiered_entry_beyond_the_log_end_is_refused_with_a_runnable_command() -> None:
    d = _log_start_decision(TP, 500, bounds(maybe=True), "/the dir")
    assert (d.value, d.changed, d.refused) == (500, False, True)
    assert "`logdoctor repair '/the dir' --topic-config t:remote.storage.enable=false`" in d.note
