"""Where the real log dirs of ../shared/realworld are, and how tests get them.

They are read in place, never copied into the repo. Outside the workspace (a clone
with no ../shared) tests that need them skip with a clear reason; in CI (CI=true)
they must not skip: tests/conftest.py turns any such skip into a failure.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

import tiers

REPO_ROOT = Path(__file__).resolve().parent.parent
REALWORLD = Path(os.environ.get("LOGDOCTOR_REALWORLD", REPO_ROOT.parent / "shared" / "realworld"))
SKIP_REASON = f"realworld: no real log dirs at {REALWORLD} (../shared/realworld exists only in the workspace)"


def available() -> bool:
    return (REALWORLD / "MANIFEST.json").is_file()


def require() -> Path:
    """Return the realworld folder or skip the calling test (CI turns this skip into a failure)."""
    if not available():
        pytest.skip(SKIP_REASON)
    return REALWORLD


@cache
def manifest() -> dict:
    return json.loads((REALWORLD / "MANIFEST.json").read_text())


def log_dir_names() -> list[str]:
    """Names of the log dirs (static list so tests can be parametrized without the data)."""
    if not available():
        return []
    return [e["name"] for e in manifest()["entries"]]


def log_dirs() -> list[Path]:
    return [REALWORLD / n for n in log_dir_names()]


def files(
    suffix: str | None = None, name: str | None = None, dirs: list[str] | None = None
) -> Iterator[Path]:
    """Every file under the log dirs (not the broker logs), optionally by suffix or exact name, optionally
    only under the log dirs named ``dirs``."""
    for d in log_dirs() if dirs is None else [REALWORLD / n for n in dirs]:
        for p in _files_under(d):
            if suffix is not None and not p.name.endswith(suffix):
                continue
            if name is not None and p.name != name:
                continue
            yield p


@cache
def _files_under(log_dir: Path) -> tuple[Path, ...]:
    """The files under ``log_dir``, sorted: walked once per process (collection asks ~100 times)."""
    return tuple(p for p in sorted(log_dir.rglob("*")) if p.is_file())


def absent(arity: int = 1) -> list:
    """The parametrization of a test over real data when there is none: one param (of ``arity``
    values, as many as the test's parameter names) that skips with the realworld reason, so the
    absence is visible (and fatal in CI) and collection never fails."""
    return [pytest.param(*([None] * arity), id="no-realworld", marks=pytest.mark.skip(reason=SKIP_REASON))]


# The real log dirs that `make test-fast` reads; `make test` (CI) reads all of them. Together they hold
# every kind the others hold: magic v1 message sets (0.10.1), snappy batches and the ZooKeeper-era v2 layout
# (2.8), partitions of several segments (2.7), a log dir with no partition.metadata at the repository's root
# (pre-2.8), truncated small files (the corrupt one), KRaft's metadata log (3.5 single node), KRaft snapshots
# and a log of control batches only (3.9), the newest broker (4.2), and a dir with only meta.properties. The
# others repeat these kinds with more records (the three 3.5 cluster nodes alone cost a fifth of the
# real-data tests); tests/test_tiers.py checks that test-fast's dirs hold every kind the manifest names.
FAST_LOG_DIRS = frozenset(
    {
        "zk-0.10.1-xpxwo100",
        "zk-2.7-donaldy",
        "zk-2.8-seanorth",
        "zk-pre2.8-volodymyrzee",
        "zk-corrupt-znsio",
        "kraft-3.5-greenlemont-single",
        "kraft-3.9-duongnvt2110",
        "kraft-4.2-nomanazeem",
        "kraft-meta-only-surjith-07",
    }
)


def params(items) -> list:
    """pytest params with readable ids relative to the realworld folder (:func:`absent` without data);
    a case on a log dir outside :data:`FAST_LOG_DIRS` is marked ``slow`` (run by make test, not test-fast)."""
    if not available():
        return absent()
    out = []
    for p in items:
        rel = p.relative_to(REALWORLD)
        out.append(pytest.param(p, id=str(rel), marks=tiers.marks(rel.parts[0] in FAST_LOG_DIRS)))
    return out


def log_dir_tiers() -> list:
    """For a test that goes through the real log dirs in one call: two params, the names of the log dirs
    test-fast reads (:data:`FAST_LOG_DIRS`) and those of the rest (marked ``slow``)."""
    if not available():
        return absent()
    names = log_dir_names()
    return [
        pytest.param([n for n in names if (n in FAST_LOG_DIRS) == fast], id=name, marks=tiers.marks(fast))
        for fast, name in ((True, "test-fast-log-dirs"), (False, "other-log-dirs"))
    ]


def name_params() -> list:
    """One param per real log dir's name, tiered as :func:`params` (:func:`absent` without data)."""
    if not available():
        return absent()
    return [pytest.param(n, id=n, marks=tiers.marks(n in FAST_LOG_DIRS)) for n in log_dir_names()]


def writable_copy(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> Path:
    """Copy real data (a folder or a file) for a test to change: contents only, owned by the current
    user, folders 0755 and files 0644. ../shared is read-only (folders r-x, files r--); a plain
    copytree keeps those modes, which root ignores but any other user cannot write or delete in."""
    src, dst = Path(src), Path(dst)
    if src.is_dir():
        shutil.copytree(src, dst, copy_function=shutil.copyfile)
        for root, _dirs, files in os.walk(dst):
            os.chmod(root, 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
        return dst
    if dst.is_dir():
        dst = dst / src.name
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o644)
    return dst


# ../shared/tiered: a tiered (KIP-405) log dir and its remote tier, written by Kafka's own storage
# classes, Kafka's LocalTieredStorage and Aiven's tiered-storage plugin (its README.md gives the
# layout and offsets). Read in place like the real log dirs: tests skip outside the workspace with a
# "realworld:" reason, which CI turns into a failure.
TIERED = Path(os.environ.get("LOGDOCTOR_TIERED", REPO_ROOT.parent / "shared" / "tiered"))
TIERED_SKIP_REASON = (
    f"realworld: no tiered-storage data at {TIERED} (../shared/tiered exists only in the workspace)"
)


def tiered_available() -> bool:
    return (TIERED / "README.md").is_file() and (TIERED / "original" / "kafka-logs").is_dir()


def require_tiered() -> Path:
    """Return ../shared/tiered or skip the calling test (CI turns this skip into a failure)."""
    if not tiered_available():
        pytest.skip(TIERED_SKIP_REASON)
    return TIERED


def _shared_data(name: str, env: str) -> tuple[Path, str]:
    """A data set of ../shared read in place (``env`` overrides its location) and the reason a test skips
    without it."""
    path = Path(os.environ.get(env, REPO_ROOT.parent / "shared" / name))
    return path, f"realworld: no {name} data at {path} (../shared/{name} exists only in the workspace)"


def _require(path: Path, reason: str) -> Path:
    """Return ``path`` or skip the calling test (CI turns this skip into a failure)."""
    if not (path / "README.md").is_file():
        pytest.skip(reason)
    return path


# ../shared/forensics: diverged replicas (wallet-0) and a hanging transaction (billing-0) on three
# ZooKeeper-era brokers, written by Kafka's own storage classes (its README.md gives what the brokers
# compute on it). Read in place; tests skip outside the workspace with a "realworld:" reason.
FORENSICS, FORENSICS_SKIP_REASON = _shared_data("forensics", "LOGDOCTOR_FORENSICS")
# ../shared/semantics: committed, aborted and open transactions (ptx-0), a compacted topic (kv-0) and plain
# records (raw-0), written by Kafka's own storage classes (its README.md gives the facts Kafka computes).
SEMANTICS, SEMANTICS_SKIP_REASON = _shared_data("semantics", "LOGDOCTOR_SEMANTICS")
# ../shared/typed: a log dir with Schema Registry's _schemas and topics of registry-framed Avro, Protobuf and
# JSON Schema, Kafka Connect JSON and Debezium; facts/ gives every record as independent decoders decoded it
# (the Apache avro package, protoc-compiled classes, json + jsonschema) and the CDC topics' final tables.
TYPED, TYPED_SKIP_REASON = _shared_data("typed", "LOGDOCTOR_TYPED")


def require_forensics() -> Path:
    """Return ../shared/forensics or skip the calling test (CI turns this skip into a failure)."""
    return _require(FORENSICS, FORENSICS_SKIP_REASON)


def require_semantics() -> Path:
    """Return ../shared/semantics or skip the calling test (CI turns this skip into a failure)."""
    return _require(SEMANTICS, SEMANTICS_SKIP_REASON)


def require_typed() -> Path:
    """Return ../shared/typed or skip the calling test (CI turns this skip into a failure)."""
    return _require(TYPED, TYPED_SKIP_REASON)
