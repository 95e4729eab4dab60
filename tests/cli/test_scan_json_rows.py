"""`scan --json` of many partitions: the same JSON value as before, one partition or finding per line,
written by Python's C encoder (issue 26: ``json.dumps(indent=1)`` is the pure-Python encoder, 1.7 s of the
``scan --quick --json`` of 50,000 partitions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.jsonout import json_rows
from logdoctor.cli.main import app

NOW = "2024-01-01T00:00:00Z"

LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=8), VALUES, max_size=6))
def test_json_rows_is_the_same_json_value(obj):
    assert json.loads(json_rows(obj)) == json.loads(json.dumps(obj, indent=1))


def test_json_rows_puts_each_element_of_a_list_on_a_line():
    text = json_rows({"a": 1, "rows": [{"x": [1, 2]}, {"y": "z\n"}], "empty": [], "d": {"k": [3]}})
    assert text.splitlines() == [
        "{",
        ' "a": 1,',
        ' "rows": [',
        '  {"x": [1, 2]},',
        '  {"y": "z\\n"}',
        " ],",
        ' "empty": [],',
        ' "d": {"k": [3]}',
        "}",
    ]


@pytest.mark.realworld
@pytest.mark.parametrize("name", ["zk-2.8-seanorth", "kraft-3.5-greenlemont-n1"])
def test_scan_json_of_a_real_log_dir_has_the_reports_value_one_partition_per_line(
    realworld_dir: Path, name: str
) -> None:
    d = realworld_dir / name
    r = CliRunner().invoke(app, ["scan", "--json", "--jobs", "1", "--now", NOW, str(d)])
    assert r.exit_code in (0, 1, 2), r.output
    out = json.loads(r.stdout)
    rep = scan([str(d)], ScanOptions(depth=Depth.DEFAULT, now_ms=out["now_ms"]), jobs=1)
    report = rep.to_json()
    # each partition's topic_config made apart (the report makes one per topic and shares it)
    assert report["partitions"] == [p.to_json() for p in rep.partitions]
    for doc in (out, report):
        doc.pop("elapsed_s", None)
        for ld in doc["log_dirs"]:
            ld.pop("disk", None)  # free space changes between the two runs
    assert out == report
    lines = r.stdout.splitlines()
    rows = [v for v in out.values() if isinstance(v, list) and v]
    assert len(lines) == 2 + len(out) + sum(1 + len(v) for v in rows)
    for p in out["partitions"]:
        assert f"  {json.dumps(p)}," in lines or f"  {json.dumps(p)}" in lines


def test_json_rows_of_lists_longer_than_a_batch_are_the_text_made_in_one_piece(capsys):
    # encoded and written _ROWS_BATCH elements at a time: the same text as one join of every element
    from logdoctor.cli import jsonout

    n = 2 * jsonout._ROWS_BATCH + 7
    obj = {"depth": "quick", "partitions": [{"p": i, "s": "x,\n" * (i % 3)} for i in range(n)], "tail": []}
    encode = json.JSONEncoder().encode
    whole = "\n".join(
        [
            "{",
            ' "depth": "quick",',
            ' "partitions": [',
            ",\n".join("  " + encode(v) for v in obj["partitions"]),
            " ],",
            ' "tail": []',
            "}",
        ]
    )
    assert jsonout.json_rows(obj) == whole
    jsonout.print_json_rows(obj)
    assert capsys.readouterr().out == whole + "\n"


@given(
    st.lists(st.dictionaries(st.text(max_size=5), VALUES, max_size=4), max_size=6),
    st.lists(VALUES, min_size=1, max_size=3),
    st.lists(st.integers(0, 2), max_size=6),
)
def test_shared_last_values_encoded_once_give_the_same_text(elements, shared, picks):
    # scan --json: each topic's config object, shared by its partitions, is encoded once (jsonout._SharedLast)
    rows: list = []
    for i, e in enumerate(elements):
        row = {k: v for k, v in e.items() if k != "topic_config"}
        if i < len(picks):  # last key, one of a few shared objects (a later element reuses its text)
            row["topic_config"] = shared[picks[i] % len(shared)]
        rows.append(row)
    rows.append({"topic_config": shared[0]})  # nothing before it
    rows.append({"topic_config": shared[0], "after": 1})  # not last: encoded whole
    obj = {"partitions": rows, "findings": [], "n": 1}
    assert json_rows(obj, shared_last="topic_config") == json_rows(obj)
