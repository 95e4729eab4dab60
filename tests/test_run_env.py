"""The environment `make demo` builds (requirements-run-lock.txt and the project, no test extra) runs every
command (issue 87 item 14: `replay` died there with ModuleNotFoundError, confluent-kafka being a test tool).

The environment is built as the Makefile builds it (scripts/install-env.sh create, the run lock alone) from
a copy of the checkout's sources in a temporary folder (its C extension built there, not over the one the
other tests load), uv's cache making it quick. In it: every command's ``--help``, and a small real run of
the offline commands on a log dir a real Kafka 4.4.0 broker wrote and of ``replay``'s plan against that
broker, started again (tests/kafka_cluster.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import kafka_cluster as kc
from logdoctor.cli.registry import COMMANDS

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def run_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run environment's ``bin`` folder."""
    copy = tmp_path_factory.mktemp("run-env") / "checkout"
    copy.mkdir()
    for name in ("pyproject.toml", "README.md", "requirements-run-lock.txt"):
        shutil.copy2(ROOT / name, copy / name)
    (copy / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "install-env.sh", copy / "scripts" / "install-env.sh")
    built = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info")
    shutil.copytree(ROOT / "src", copy / "src", ignore=built)
    (copy / ".tools").symlink_to((ROOT / ".tools").resolve())  # the pinned uv installed there
    venv = copy / ".venv"
    done = subprocess.run(
        ["bash", str(copy / "scripts" / "install-env.sh"), "create", str(venv), "requirements-run-lock.txt"],
        cwd=copy, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    bin_dir = venv / "bin"
    assert not (bin_dir / "pytest").exists()  # no test extra
    return bin_dir


def _run(bin_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYSPARK_PYTHON": str(bin_dir / "python")}  # as `make demo` runs it
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        [str(bin_dir / "logdoctor"), *args], capture_output=True, text=True, timeout=600, env=env,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip


# each command's ``--help`` as ``logdoctor COMMAND --help`` runs it (main(): the command's module and what it
# imports loaded), one after the other in one interpreter of the run environment: its exit code and stdout
_HELPS = """import contextlib, io, json, sys
from logdoctor.cli.main import main
seen = {}
for name in sys.argv[1:]:
    sys.argv, out, code = ["logdoctor", name, "--help"], io.StringIO(), 0
    with contextlib.redirect_stdout(out):
        try:
            main()
        except SystemExit as e:
            code = e.code
    seen[name] = [code, out.getvalue()]
print(json.dumps(seen))
"""


def test_every_command_help(run_env: Path) -> None:
    done = _run(run_env, "--help")  # the installed script itself
    assert done.returncode == 0 and "Usage" in done.stdout, (done.stdout, done.stderr)
    names = [c.name for c in COMMANDS]
    env = {**os.environ, "PYSPARK_PYTHON": str(run_env / "python")}
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(
        [str(run_env / "python"), "-c", _HELPS, *names], capture_output=True, text=True, timeout=600, env=env,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout, done.stderr)
    seen = json.loads(done.stdout)
    assert list(seen) == names
    for name, (code, out) in seen.items():
        assert code in (0, None), (name, code, out, done.stderr)
        assert "Usage" in out, name


def test_a_real_run_of_the_commands(run_env: Path, tmp_path: Path) -> None:
    cluster = kc.KafkaCluster(tmp_path / "cluster")
    cluster.start()
    try:
        cluster.create_topic("orders", 1)
        cluster.produce("orders", [(f"k{i}".encode(), f"order-{i}".encode()) for i in range(10)])
        cluster.stop()
        log_dir = tmp_path / "kafka-logs"
        shutil.copytree(cluster.broker(1).log_dirs[0], log_dir)
        cluster.start()

        segment = kc.segments(log_dir / "orders-0")[0]
        dump = _run(run_env, "dump", "-p", str(segment))
        assert dump.returncode == 0 and "order-9" in dump.stdout, dump.stdout + dump.stderr
        for args in (["scan", str(log_dir)], ["retention", str(log_dir)], ["repair", str(log_dir)]):
            done = _run(run_env, *args)
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        inventory = tmp_path / "broker-1.json"
        done = _run(run_env, "inventory", str(log_dir), "--out", str(inventory))
        assert done.returncode == 0 and inventory.is_file(), done.stdout + done.stderr
        out = tmp_path / "export"
        done = _run(run_env, "export", str(log_dir / "orders-0"), "--out", str(out), "--master", "local[1]")
        assert done.returncode == 0, done.stdout + done.stderr
        import pyarrow.parquet as pq

        rows = pq.read_table(out).to_pylist()
        assert sorted(r["value"] for r in rows) == sorted(f"order-{i}".encode() for i in range(10))

        plan = _run(
            run_env, "replay", str(log_dir), "--bootstrap-server", cluster.bootstrap, "--topics", "orders",
            "--topic-map", "orders=orders-copy",
        )  # fmt: skip
        assert plan.returncode == 0, plan.stdout + plan.stderr
        assert "orders-0 -> orders-copy-0: 10 records" in plan.stdout
    finally:
        cluster.stop()
