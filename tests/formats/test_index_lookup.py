"""The one place index bytes are looked up (formats.index_lookup): which entries are usable, and the
offset (<=) and timestamp (<) rules."""

from __future__ import annotations

from logdoctor.formats.index import OffsetEntry, TimeEntry, write_offset_index, write_time_index
from logdoctor.formats.index_lookup import offset_entries, time_entries

BASE = 1000


def test_offset_entries_stop_at_the_first_entry_out_of_order_or_out_of_the_segment():
    good = [OffsetEntry(BASE + 9, 100), OffsetEntry(BASE + 19, 200), OffsetEntry(BASE + 29, 300)]
    data = write_offset_index(good, BASE, size=80)  # a preallocated zero tail is no entry
    assert offset_entries(data, BASE).pairs() == [(e.offset, e.position) for e in good]
    assert offset_entries(data, BASE).complete
    assert offset_entries(data, BASE, log_size=300).pairs() == [(BASE + 9, 100), (BASE + 19, 200)]
    assert offset_entries(data, BASE, next_base_offset=BASE + 19).pairs() == [(BASE + 9, 100)]
    back = write_offset_index([*good[:2], OffsetEntry(BASE + 15, 400), OffsetEntry(BASE + 39, 500)], BASE)
    entries = offset_entries(back, BASE)
    assert entries.pairs() == [(BASE + 9, 100), (BASE + 19, 200)] and not entries.complete
    same_position = write_offset_index([good[0], OffsetEntry(BASE + 19, 100)], BASE)
    assert offset_entries(same_position, BASE).pairs() == [(BASE + 9, 100)]
    assert not offset_entries(b"", BASE) and not offset_entries(None, BASE)
    assert offset_entries(data + b"\x00\x00\x00", BASE).pairs() == offset_entries(data, BASE).pairs()


def test_floor_is_offset_index_lookup():
    entries = offset_entries(
        write_offset_index([OffsetEntry(BASE + 9, 100), OffsetEntry(BASE + 19, 200)], BASE), BASE
    )
    assert entries.floor(BASE + 8) is None
    assert entries.floor(BASE + 9) == (BASE + 9, 100)
    assert entries.floor(BASE + 18) == (BASE + 9, 100)
    assert entries.floor(BASE + 10**6) == (BASE + 19, 200)


def test_below_is_strict_and_time_entries_keep_the_running_maximum():
    data = write_time_index(
        [TimeEntry(5000, BASE + 5), TimeEntry(6000, BASE + 9), TimeEntry(6000, BASE + 12)], BASE
    )
    entries = time_entries(data, BASE)
    assert entries.complete and entries.last == (6000, BASE + 12)
    assert entries.below(5000) is None  # Kafka's <= would give (5000, BASE + 5)
    assert entries.below(5001) == (5000, BASE + 5)
    assert entries.below(6000) == (5000, BASE + 5)
    assert entries.below(6001) == (6000, BASE + 12)
    down = write_time_index([TimeEntry(5000, BASE + 5), TimeEntry(4000, BASE + 9)], BASE)
    assert time_entries(down, BASE).pairs() == [(5000, BASE + 5)] and not time_entries(down, BASE).complete
    untrimmed = write_time_index([TimeEntry(5000, BASE + 5)], BASE, size=120)
    assert (
        time_entries(untrimmed, BASE).pairs() == [(5000, BASE + 5)]
        and not time_entries(untrimmed, BASE).complete
    )
