"""The values the model produces for Spark (Partition.ref, LogDir.partition_refs) and local discovery
through the model: the model's segments and rules, cheap to pickle."""

from __future__ import annotations

import os
import pickle

import pytest

import realworld
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.model import LogDir
from logdoctor.logdir.storage import LOCAL
from logdoctor.sample.logdir import TopicSpec, generate_log_dir


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    path, _ = generate_log_dir(
        tmp_path_factory.mktemp("refs") / "broker",
        [
            TopicSpec(
                "events", partitions=2, records_per_partition=3000, value_size=100, segment_bytes=64 * 1024
            )
        ],
    )
    return path


def _check_refs(model: LogDir) -> None:
    refs = model.partition_refs()
    assert [(r.topic, r.partition) for r in refs] == [(p.topic, p.partition) for p in model.partitions]
    for ref, part in zip(refs, model.partitions, strict=True):
        assert ref.log_dir == str(model.path) and ref.path == str(part.path) and ref.kind == "log"
        assert ref.storage == LOCAL
        assert [s.base_offset for s in ref.segments] == [s.base_offset for s in part.segments]
        for seg, nxt in zip(ref.segments, [*ref.segments[1:], None][: len(ref.segments)], strict=True):
            assert seg.size == os.stat(seg.path).st_size
            assert seg.next_base_offset == (nxt.base_offset if nxt is not None else None)
            assert os.path.exists(seg.path) and seg.index_path.endswith(".index")
        assert pickle.loads(pickle.dumps(ref)) == ref


def test_the_model_produces_the_refs_discovery_returns(log_dir):
    model = LogDir(log_dir)
    _check_refs(model)
    assert sum(len(r.segments) for r in model.partition_refs()) > 4
    assert discover(str(log_dir)) == model.partition_refs()
    # one ref with its segments pickles small: plain strings and numbers, no model object
    ref = model.partition_refs()[0]
    assert len(pickle.dumps(ref)) < 400 + 250 * len(ref.segments)


def test_a_symlinked_partition_folder_is_not_followed(log_dir, tmp_path):
    """Discovery takes the model's rule: a symlink below the log dir's root is never followed."""
    other = tmp_path / "elsewhere" / "hidden-0"
    other.mkdir(parents=True)
    (other / f"{0:020d}.log").write_bytes(b"")
    link = log_dir / "hidden-0"
    link.symlink_to(other, target_is_directory=True)
    try:
        assert "hidden" not in {r.topic for r in discover(str(log_dir))}
        assert "hidden" not in {p.topic for p in LogDir(log_dir).partitions}
    finally:
        link.unlink()


@pytest.mark.parametrize("name", realworld.name_params())
def test_real_log_dirs(name):
    realworld.require()
    _check_refs(LogDir(realworld.REALWORLD / name))
