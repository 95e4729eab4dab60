"""`logdoctor census` classifies its inputs once (issue #27): the CLI's checks and the census job share one
``CensusInputs``; no input is walked, nor a log dir's meta.properties read, twice on the driver."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import logdoctor.logdir.discovery as discovery
import logdoctor.spark.census_inputs as census_inputs
import logdoctor.spark.census_rules as census_rules
import logdoctor.spark.session as session
import realworld
from logdoctor.cli.census import run_census_cli
from logdoctor.cli.output import text_console

pytestmark = pytest.mark.spark

BROKERS = ("kraft-3.5-greenlemont-n1", "kraft-3.5-greenlemont-n2", "kraft-3.5-greenlemont-n3")


def test_one_census_run_visits_each_input_once(spark, tmp_path: Path, monkeypatch) -> None:
    root = realworld.require()
    paths = [str(root / name) for name in BROKERS]
    walked: Counter[str] = Counter()  # the walk of an input path for its log dirs (depth 0)
    metas: Counter[str] = Counter()  # a log dir's meta.properties read on the driver (grouping brokers)
    classified: list[object] = []

    find_log_dirs, meta, classify = discovery.find_log_dirs, census_rules._meta, census_inputs.classify

    def counting_find(path, depth=0, storage=None):
        if depth == 0:
            walked[str(path)] += 1
        return find_log_dirs(path, depth, storage)

    def counting_meta(log_dir):
        metas[str(log_dir)] += 1
        return meta(log_dir)

    def counting_classify(*args, **kwargs):
        classified.append(args)
        return classify(*args, **kwargs)

    monkeypatch.setattr(discovery, "find_log_dirs", counting_find)
    monkeypatch.setattr(census_rules, "_meta", counting_meta)
    monkeypatch.setattr(census_inputs, "classify", counting_classify)
    monkeypatch.setattr(session, "get_spark", lambda *a, **k: spark)

    result = run_census_cli(
        paths, tmp_path / "out", None, True, text_console(), text_console(stderr=True), now_ms=0
    )

    assert result.brokers == 3
    assert {r["broker"] for r in result.replicas} == {"broker-1", "broker-2", "broker-3"}
    assert len(classified) == 1
    assert walked == Counter({p: 1 for p in paths})
    assert metas == Counter({p: 1 for p in paths})  # each path is a log dir
