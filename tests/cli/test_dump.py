"""``logdoctor dump`` on every real file: no error, the same batches and records as kafka-python, typed
decoders. Also the helpers the other dump tests import (in-process invocation, the independent oracle)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from kafka.record import MemoryRecords
from typer.main import get_command
from typer.testing import CliRunner

from logdoctor.cli.main import _register, app

_register()
_PREFIX = ["dump"] if hasattr(get_command(app), "commands") else []


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None

    @cached_property
    def objects(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def of_type(self, t: str) -> list[dict]:
        return [o for o in self.objects if o["type"] == t]


def dump(*args: str | Path) -> Run:
    """``logdoctor dump ARGS`` in-process (Typer's CliRunner), stdout and stderr apart."""
    runner = CliRunner()
    r = runner.invoke(app, [*_PREFIX, *map(str, args)])
    exc = r.exception if r.exception is not None and not isinstance(r.exception, SystemExit) else None
    return Run(r.exit_code, r.stdout, r.stderr, exc)


@dataclass
class PyBatch:
    position: int
    base_offset: int
    last_offset: int
    magic: int
    records: list  # kafka-python records: .offset .timestamp .key .value .headers


def kafka_python_batches(data: bytes) -> list[PyBatch]:
    """Batches and records of a log as kafka-python decodes them (the independent oracle)."""
    mr = MemoryRecords(data)
    out: list[PyBatch] = []
    pos = 0
    while (b := mr.next_batch()) is not None:
        recs = list(b)
        if b.magic >= 2:
            first, last = b.base_offset, b.last_offset
        else:
            first, last = (
                recs[0].offset if recs else b.base_offset,
                recs[-1].offset if recs else b.base_offset,
            )
        out.append(PyBatch(pos, first, last, b.magic, recs))
        pos += b.size_in_bytes
    return out


# --- the real log dirs -------------------------------------------------------------------------------------

import base64  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402

import pytest  # noqa: E402

import realworld  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

BATCH_KEYS = {
    "file",
    "position",
    "size",
    "base_offset",
    "last_offset",
    "record_count",
    "magic",
    "compression",
    "crc_valid",
    "max_timestamp",
    "timestamp_type",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "partition_leader_epoch",
    "is_transactional",
    "is_control",
}
RECORD_KEYS = {"offset", "timestamp", "key", "value", "headers"}
_INTERNAL = {
    "__consumer_offsets": "consumer-offsets",
    "__cluster_metadata": "cluster-metadata",
    "__transaction_state": "transactions",
}


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


@pytest.fixture(
    scope="module",
    params=realworld.name_params(),
)
def dumped_dir(request):
    """Every file of one real log dir dumped in one call with --json --deep."""
    root = realworld.require() / request.param
    files = [p for p in sorted(root.rglob("*")) if p.is_file()]
    return root, files, dump("--json", "--deep", *files)


def test_every_real_file_dumps(dumped_dir):
    _root, files, run = dumped_dir
    assert run.exception is None, run.exception
    objects = run.objects  # every line is JSON with a type
    assert all("type" in o for o in objects)
    errors = run.of_type("error")
    # The only unreadable files in the real dirs are the truncated (0-byte) small files the manifest
    # lists as problems: they must fail with one line naming the file, and nothing else may.
    for e in errors:
        p = Path(e["file"])
        assert p.stat().st_size == 0 and p.name in ("partition.metadata", "meta.properties"), e
        assert e["exit_code"] == 2
    stderr_lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(stderr_lines) == len(errors)
    for line, e in zip(stderr_lines, errors, strict=True):
        assert line.startswith(f"error: {e['file']}") and "@0" in line
    assert run.exit_code == (2 if errors else 0)
    # every file was dumped: a summary or a single-object dump or an error for each
    per_file = {o.get("file") for o in objects}
    assert {str(p) for p in files} <= per_file


def test_log_batches_and_records_equal_kafka_python(dumped_dir):
    root, files, run = dumped_dir
    batches_by_file: dict[str, list[dict]] = {}
    records_by_file: dict[str, list[dict]] = {}
    for o in run.objects:
        if o["type"] == "batch":
            batches_by_file.setdefault(o["file"], []).append(o)
        elif o["type"] == "record":
            records_by_file.setdefault(o["file"], []).append(o)
    logs = [
        p
        for p in files
        if (p.name.endswith((".log", ".checkpoint")) and p.parent != root) or p.name == "bootstrap.checkpoint"
    ]
    for log in logs:
        expected = kafka_python_batches(log.read_bytes())
        got = batches_by_file.get(str(log), [])
        assert len(got) == len(expected), log
        for g, e in zip(got, expected, strict=True):
            assert g.keys() >= BATCH_KEYS
            assert (g["position"], g["last_offset"], g["magic"]) == (e.position, e.last_offset, e.magic), log
            if e.magic >= 2:
                assert g["base_offset"] == e.base_offset
                assert g["record_count"] == len(e.records)
            assert g["crc_valid"] is True
        recs = records_by_file.get(str(log), [])
        flat = [r for e in expected for r in e.records]
        assert len(recs) == len(flat), log
        for g, r in zip(recs, flat, strict=True):
            assert g.keys() >= RECORD_KEYS
            assert (g["offset"], g["timestamp"]) == (r.offset, r.timestamp)
            assert (g["key"], g["value"]) == (_b64(r.key), _b64(r.value))
            assert [(h["key"], h["value"]) for h in g["headers"]] == [(k, _b64(v)) for k, v in r.headers]


_ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID's text: OffsetCommitValue v4's topicId (4.1+)


def _hexlike(v) -> bool:
    return (isinstance(v, str) and len(v) >= 16 and v != _ZERO_UUID
            and all(c in "0123456789abcdefABCDEF" for c in v))


def _no_hex(obj) -> bool:
    if isinstance(obj, dict):
        return all(_no_hex(v) for v in obj.values())
    if isinstance(obj, list):
        return all(_no_hex(v) for v in obj)
    return not _hexlike(obj)


def test_internal_topics_decode_to_typed_fields(dumped_dir):
    root, _files, run = dumped_dir
    for rec in run.of_type("record"):
        p = Path(rec["file"])
        topic = p.parent.name.rsplit("-", 1)[0] if p.parent != root else "__cluster_metadata"
        assert "decode_error" not in rec, rec
        if topic not in _INTERNAL:
            assert "decoded" not in rec or rec["decoded"]["type"] == "control"
            continue
        d = rec["decoded"]
        assert isinstance(d, dict) and d["type"], rec
        if d["type"] == "control":
            assert d["control_type"] not in ("UNKNOWN",)
            continue
        assert rec["decoder"] == _INTERNAL[topic]
        payload = d.get("data", d.get("value"))
        if topic == "__consumer_offsets":
            assert isinstance(d["key"], dict) and d["key"]
            assert payload is None or isinstance(payload, dict)  # None: a tombstone
        else:
            assert isinstance(payload, dict)
        assert _no_hex(d), d


def test_control_records_are_decoded(realworld_dir):
    log = realworld_dir / "kraft-4.2-nomanazeem/__cluster_metadata-0/00000000000000000000.log"
    run = dump("--json", "--deep", log)
    control = [r for r in run.of_type("record") if r["decoded"]["type"] == "control"]
    assert control, "a KRaft metadata log has LeaderChange / KRaftVersion control records"
    kinds = {r["decoded"]["control_type"] for r in control}
    assert kinds & {"LEADER_CHANGE", "KRAFT_VERSION", "KRAFT_VOTERS"}
    assert all("value" in r["decoded"] for r in control)


def test_installed_command_runs(realworld_dir, tmp_path):
    exe = REPO / ".venv" / "bin" / "logdoctor"
    if not exe.exists():
        pytest.skip("no installed .venv/bin/logdoctor")
    d = realworld_dir / "zk-pre2.8-volodymyrzee"
    log = d / "__consumer_offsets-18/00000000000000000000.log"
    cp = d / "recovery-point-offset-checkpoint"
    env = dict(os.environ, COLUMNS="200")
    r = subprocess.run(
        [str(exe), "dump", "--json", "--deep", str(log), str(cp)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    import json

    objs = [json.loads(line) for line in r.stdout.splitlines()]
    expected = kafka_python_batches(log.read_bytes())
    assert len([o for o in objs if o["type"] == "batch"]) == len(expected)
    assert len([o for o in objs if o["type"] == "record"]) == sum(len(b.records) for b in expected)
    entries = [o for o in objs if o["type"] == "checkpoint_entry"]
    lines = cp.read_text().splitlines()
    assert len(entries) == int(lines[1]) and entries[0]["topic"] == lines[2].split()[0]
    # and the text form, for people: a header, aligned rows, a summary line
    t = subprocess.run([str(exe), "dump", str(log)], capture_output=True, text=True, env=env, timeout=120)
    assert t.returncode == 0
    out = t.stdout.splitlines()
    assert out[0].startswith(f"Dumping {log}")
    assert out[-1].strip().startswith(f"summary: {len(expected)} batches")
    rows = out[2:-1]
    assert len(rows) == len(expected) and len({len(r.rstrip()) for r in rows}) <= 2
