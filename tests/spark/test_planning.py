"""Planning and reading without a Spark session: index seeks, options, Java detection, decoders."""

from __future__ import annotations

import json
import os
import stat
import sys

import oracle
import pytest

import realworld
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.slices import (
    PlanningError,
    parse_read_options,
    plan_slices,
)
from logdoctor.spark.session import SparkUnavailableError, check_java, parse_java_major
from logdoctor.spark.sources.slice_reader import read_slice

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(
    ("text", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment', 17),
        ('java version "1.8.0_392"\nJava(TM) SE Runtime Environment', 8),
        ('openjdk version "21" 2023-09-19', 21),
        ('openjdk version "11.0.2" 2019-01-15', 11),
        ("no version here", None),
    ],
)
def test_java_version_is_parsed(text, major):
    assert parse_java_major(text) == major


def test_an_old_or_missing_java_is_a_clear_error(tmp_path, monkeypatch):
    bin_dir = tmp_path / "jdk8" / "bin"
    bin_dir.mkdir(parents=True)
    java = bin_dir / "java"
    java.write_text('#!/bin/sh\necho \'java version "1.8.0_392"\' >&2\n')
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk8"))
    with pytest.raises(SparkUnavailableError, match=r"needs Java 17 or newer.*Java 8"):
        check_java()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(SparkUnavailableError, match="no `java` was found"):
        check_java()


def test_options_are_validated():
    with pytest.raises(PlanningError, match="decoder"):
        parse_read_options({"decoder": "xml"})
    with pytest.raises(PlanningError, match="startingOffsets"):
        parse_read_options({"startingOffsets": "{not json"})
    opts = parse_read_options({"startingOffsets": '{"t": {"0": 5, "1": -2}}', "endingOffsets": "latest"})
    assert opts.starting_offsets.get("t", 0) == 5 and opts.starting_offsets.get("t", 1) == -2
    assert opts.starting_offsets.get("u", 0) is None and opts.ending_offsets.get("t", 0) == -1


def _folder():
    realworld.require()
    return realworld.REALWORLD / "kraft-3.5-greenlemont-n1" / "__cluster_metadata-0"


def test_an_offset_start_seeks_with_the_offset_index():
    folder = _folder()
    recs = [r for log in sorted(folder.glob("*.log")) for r in oracle.records_of(log)]
    start = recs[len(recs) // 2][2]
    opts = parse_read_options({"startingOffsets": str(start)})
    slices = plan_slices(discover(str(folder)), opts)
    assert len(slices) == 1
    sl = slices[0]
    assert 0 < sl.read_from < sl.segment.size // 2 + 20_000  # an index position near the target, not 0
    got = [o for rb in read_slice(sl, opts) for o in rb.column("offset").to_pylist()]
    assert got == [r[2] for r in recs if r[2] >= start]


def test_a_timestamp_start_seeks_with_the_time_index():
    folder = _folder()
    recs = [r for log in sorted(folder.glob("*.log")) for r in oracle.records_of(log)]
    ts = sorted(r[3] for r in recs)[len(recs) // 2]
    opts = parse_read_options({"startingTimestamp": str(ts)})
    (sl,) = plan_slices(discover(str(folder)), opts)
    assert sl.read_from > 0
    first = min(r[2] for r in recs if r[3] >= ts)
    got = [o for rb in read_slice(sl, opts) for o in rb.column("offset").to_pylist()]
    assert got == [r[2] for r in recs if r[2] >= first]


def test_decoder_auto_decodes_internal_topics():
    realworld.require()
    folder = realworld.REALWORLD / "kraft-3.5-greenlemont-n1" / "__cluster_metadata-0"
    opts = parse_read_options({"decoder": "auto", "endingOffsets": "200"})
    rows = [row for sl in plan_slices(discover(str(folder)), opts) for rb in read_slice(sl, opts)
            for row in rb.select(["offset", "decoded"]).to_pylist()]
    assert len(rows) > 50
    decoded = [json.loads(r["decoded"]) for r in rows]
    assert all("type" in d for d in decoded)
    assert {d["type"] for d in decoded} - {"undecodable"}  # real metadata records, not only failures


def test_paths_take_log_dirs_partition_folders_files_and_commas():
    realworld.require()
    base = realworld.REALWORLD / "zk-2.8-seanorth"
    whole = discover(str(base))
    one = next(r for r in whole if r.segments)
    again = discover(f"{one.path},{one.segments[0].path}")
    assert [(r.topic, r.partition) for r in again] == [(one.topic, one.partition)]
    assert len(again[0].segments) == len(one.segments)  # the file named twice is read once
    with pytest.raises(PlanningError, match="no such file"):
        discover(str(base / "nope"))


def test_the_session_uses_this_python(spark):
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    assert spark.conf.get("spark.ui.enabled") == "false"


def test_the_log_dir_column_is_absolute_for_a_relative_path(tmp_path, monkeypatch):
    """Issue 31 item 10: ``log_dir`` was relative for local rows read through a relative path and absolute
    for remote ones; rows of the same log dir read from two folders did not compare."""
    from logdoctor.logdir.slices import discover_refs
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir
    from logdoctor.spark.sources.segment_summary import segment_summary
    from logdoctor.spark.sources.slice_reader import read_slice

    root, _ = generate_log_dir(tmp_path / "logs", [TopicSpec("t", partitions=1, records_per_partition=10)])
    monkeypatch.chdir(tmp_path)
    relative = os.path.relpath(root, tmp_path)
    opts = parse_read_options({})
    slices = plan_slices(discover_refs([relative]), opts)
    (rb,) = list(read_slice(slices[0], opts))
    assert set(rb.column("log_dir").to_pylist()) == {str(root)}
    assert segment_summary(slices[0].segment)["log_dir"] == str(root)
