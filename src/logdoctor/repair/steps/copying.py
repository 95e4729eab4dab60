"""What the steps that copy bytes share: the progress of their copies, the manifests (checksums kept
in the backup dir) by which resume, rollback and verify know a copy, and the copies this process verified.

Invariants: a copy step's checksums are in the backup dir (:func:`manifest_rel`, or one line of
:data:`FETCHED_REL` for a ``fetch-remote`` step) before its copy is renamed into place; a copy counts as
verified by this process only while its identity (sizes, mtimes) is the one it had when its checksums matched.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from logdoctor.logdir import atomic
from logdoctor.logdir.atomic import fsync_dir
from logdoctor.repair import backup as bk
from logdoctor.repair import copies
from logdoctor.repair.plan import Step
from logdoctor.repair.steps.base import StepContext

# --- verified copies --------------------------------------------------------------------------------

_progress: list[copies.Progress] = []


@contextlib.contextmanager
def copy_progress(callback: copies.Progress) -> Iterator[None]:
    """Send the byte counts of copies made by the copy operations to ``callback`` while inside."""
    _progress.append(callback)
    try:
        yield
    finally:
        _progress.remove(callback)


def report_copied(n: int) -> None:
    for cb in _progress:
        cb(n)


# verified copies of this process: path -> identity at the time the checksums matched
_verified: dict[str, dict[str, list[int]]] = {}


def manifest_rel(step: Step) -> str:
    """Where (relative to the backup dir) a copy step keeps the checksums of its copy."""
    return step.params.get("manifest") or os.path.join("manifests", f"{step.number:06d}.json")


#: the checksums of every segment a run's ``fetch-remote`` steps restored, one JSON line each (relative to
#: the backup dir): one file appended to, not one created per segment (a step's own manifest file, which
#: a journal of an older logdoctor names, is read first)
FETCHED_REL = os.path.join("manifests", "fetched.jsonl")
_fetched_cache: dict[str, tuple[tuple[int, int, int], dict[int, dict[str, str]]]] = {}
_fetched_lock = threading.Lock()


def _fetched_records(path: str) -> dict[int, dict[str, str]]:
    """{step number: checksums} of :data:`FETCHED_REL` at ``path`` (the last line of a step wins; a line
    torn by a kill is skipped), parsed again only when the file changed."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}
    ident = (st.st_ino, st.st_size, st.st_mtime_ns)
    with _fetched_lock:
        cached = _fetched_cache.get(path)
        if cached is not None and cached[0] == ident:
            return cached[1]
    records: dict[int, dict[str, str]] = {}
    with open(path, "rb") as fh:
        for line in fh.read().splitlines():
            try:
                rec = json.loads(line)
                records[int(rec["step"])] = dict(rec["checksums"])
            except (ValueError, KeyError, TypeError):
                continue  # torn by a kill while it was written: its step is not done, its file not renamed
    with _fetched_lock:
        _fetched_cache[path] = (ident, records)
    return records


def _append_fetched(
    ctx: StepContext, step: Step, record: dict[str, Any], barrier: atomic.SyncBarrier | None
) -> None:
    """One line of :data:`FETCHED_REL` for ``step`` (after a line a kill tore, on a line of its own), durable
    now, or (with ``barrier``) once the barrier is flushed: the file fsynced once then, not once per line."""
    path = ctx.backup_path(FETCHED_REL)
    line = json.dumps({"step": step.number, **record}, sort_keys=True).encode() + b"\n"
    with atomic.naming(path):
        bk.makedirs_durable(os.path.dirname(path))
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            bk.write_all(fd, line)
            if barrier is None:
                os.fsync(fd)
        finally:
            os.close(fd)
    if barrier is None:
        fsync_dir(os.path.dirname(path))
    else:
        barrier.file_at_flush(path)
        barrier.folder(os.path.dirname(path))


def read_manifest(ctx: StepContext, step: Step) -> dict[str, str] | None:
    try:
        data = json.loads(Path(ctx.backup_path(manifest_rel(step))).read_text())
    except (OSError, ValueError):
        if step.op != "fetch-remote":  # FetchRemote.op (its module imports this one)
            return None
        return _fetched_records(ctx.backup_path(FETCHED_REL)).get(step.number)
    sums = data.get("checksums") if isinstance(data, dict) else None
    return sums if isinstance(sums, dict) else None


def matches_manifest(path: str, manifest: dict[str, str]) -> bool:
    """Checksums of ``path`` equal the manifest (skipped when this process verified it unchanged)."""
    if not os.path.lexists(path):
        return False
    ident = copies.identity(path)
    if _verified.get(path) == ident and set(ident) == set(manifest):
        return True
    if copies.verify_tree(path, manifest):
        return False
    _verified[path] = ident
    return True


def fingerprint_ok(step: Step, path: str) -> bool:
    """``path`` (a folder or a file) has the sizes and mtimes of ``step.params["fingerprint"]``."""
    if not (os.path.isdir(path) or os.path.isfile(path)):
        return False
    return copies.fingerprint(path) == step.params["fingerprint"]
