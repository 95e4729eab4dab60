"""Units of the scan: the catalog, findings' JSON form, and the batch walker under random damage."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import realworld
import tiers
from logdoctor.checks import catalog
from logdoctor.checks.findings import Finding, Severity, exit_code
from logdoctor.checks.state import segment_walk as walker  # the scan's segment walk

REQUIRED = {
    "INDEX_CORRUPT",
    "RETENTION_RISK",
    "CHECKPOINT_MISMATCH",
    "LOG_CORRUPT",
    "UNCLEAN_SHUTDOWN",
    "BROKER_RUNNING",
    "ORPHAN_FILE",
    "PERMISSION_DENIED",
    "META_PROPERTIES_MISMATCH",
}


def test_catalog_has_the_required_codes_with_fix_and_source() -> None:
    assert set(catalog.codes()) >= REQUIRED
    for entry in catalog.CATALOG.values():
        assert entry.code.isupper() and entry.title and entry.message and entry.fix and entry.source


def test_make_fills_templates_and_keeps_position() -> None:
    f = catalog.make("BROKER_RUNNING", "/d/.lock", holder=" (by pid 7)", logdir="/d")
    assert f.severity is Severity.INFO and f.position is None  # a live dir is no damage (issue 58)
    assert f.message.startswith("/d/.lock is locked (by pid 7): a broker is running on /d")
    g = catalog.make(
        "CHECKPOINT_MISMATCH",
        "/d/replication-offset-checkpoint",
        case="high-watermark-beyond-log-end",
        logdir="/d",
        position=12,
        offset=90,
        severity=Severity.ERROR,
        partition="orders-3",
        log_end_offset=80,
        log_start_offset=0,
        last_missing=89,
    )
    assert g.message == (
        "/d/replication-offset-checkpoint: high watermark 90 of orders-3 is beyond its log end offset 80: "
        "committed records 80..89 are missing from this replica (the broker clamps the high watermark to "
        "the log end offset)"
    )
    assert g.fix.startswith("Set the entry to a value within the log (`logdoctor repair /d --only ")
    assert (g.position, g.offset, g.severity) == (12, 90, Severity.ERROR)
    with pytest.raises(KeyError):  # a case's fields must all be given: no silent blanks
        catalog.make("CHECKPOINT_MISMATCH", "/d/x", case="stale-entries", logdir="/d", count=1)
    with pytest.raises(KeyError):
        catalog.make("CHECKPOINT_MISMATCH", "/d/x", case="no-such-case")
    with pytest.raises(KeyError):
        catalog.make("NO_SUCH_CODE", "/d")


def test_every_case_template_formats_with_its_own_fields() -> None:
    """Each Case names its facts: formatting it with exactly the fields it names works, and none of
    them is a bare {problem} (the words are in the catalog, not at the call site)."""
    import string

    for code, entry in catalog.CATALOG.items():
        for name, case in entry.cases.items():
            for template in (case.message, case.fix or entry.fix):
                fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
                assert "problem" not in fields, (code, name)
                template.format(**{f: f"<{f}>" for f in fields})


def test_finding_json_round_trip_and_exit_codes() -> None:
    f = Finding("LOG_CORRUPT", Severity.ERROR, "/a.log", "m", "x", position=3, offset=9, details={"k": 1})
    assert Finding.from_json(f.to_json()) == f
    w = Finding("ORPHAN_FILE", Severity.WARNING, "/b", "m", "x")
    i = Finding("UNKNOWN_FILE", Severity.INFO, "/c", "m", "x")
    assert [exit_code([]), exit_code([i]), exit_code([i, w]), exit_code([w, f])] == [0, 0, 1, 2]


def _segment() -> bytes:
    d = realworld.require() / "zk-3.7-nikhildighe-b0" / "__consumer_offsets-12" / "00000000000000000000.log"
    return d.read_bytes()


@pytest.mark.realworld
@settings(
    max_examples=tiers.examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_walker_agrees_with_the_record_reader_under_damage(data) -> None:
    from logdoctor.formats.records import scan_batches

    seg = bytearray(_segment())
    kind = data.draw(st.sampled_from(["truncate", "flip", "zero_tail"]))
    if kind == "truncate":
        seg = seg[: data.draw(st.integers(0, len(seg)))]
    elif kind == "flip":
        at = data.draw(st.integers(0, len(seg) - 1))
        seg[at] ^= data.draw(st.integers(1, 255))
    else:
        at = data.draw(st.integers(0, len(seg) - 1))
        seg[at:] = bytes(len(seg) - at)
    ours = walker.walk(bytes(seg), 0, verify_crc=True)  # never raises
    theirs = scan_batches(bytes(seg), verify_crc=True)
    if any(d.kind == "order" for d in ours.damage):
        return  # a flipped base offset: not covered by the CRC, so the reader does not see it
    assert ours.valid_bytes == theirs.valid_bytes
    assert ours.clean == (theirs.error is None)
    if not ours.clean:
        # we name the entry's start (where a repair cuts); the reader may name the bad field in its header
        assert 0 <= theirs.error.position - ours.damage[0].position < walker.V2_HEADER
