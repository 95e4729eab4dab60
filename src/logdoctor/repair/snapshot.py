"""What a live path is like now, in a few bytes: the state a journal records of every file a step
changes (before the run, after each step) and that every apply, resume and rollback compares with the
files in front of it before it writes anything (:func:`logdoctor.repair.apply.check_recorded`).

A snapshot is a small JSON-able dict:

``{"kind": "absent"}``
``{"kind": "file", "size", "hash", "mode", "uid", "gid"}``   (``level="content"``)
``{"kind": "file", "size", "hash", "ends": true, ...}``   (``level="segment"``: a segment a step wrote
whole, hashed by its first :data:`HEAD_BYTES` and last :data:`TREE_TAIL_BYTES` whatever its size)
``{"kind": "dir", "mode", "uid", "gid", "tree": {rel: [size, hash]}}``   a folder, every file in it
``{"kind": "file"|"dir"|..., "mode", "uid", "gid"}``   (``level="meta"``: owner and mode only, a chmod)
``{"kind": "symlink", "to"}`` / ``{"kind": "fifo"|"socket"|...}``   never read

The hash is BLAKE2b-128 of the whole file up to :data:`FULL_HASH_BYTES` (indexes, checkpoints, small
segments), else of its first :data:`HEAD_BYTES` and last :data:`TAIL_BYTES` (a big segment: Kafka only
appends to a segment or truncates it, and either changes its size; the cleaner and our own writes
replace whole files). A restored segment is snapshotted so at any size (``segment``): its step knows
its every byte by the checksum it keeps, and the snapshot, taken after the step and compared before a
resume or rollback, is there to see a later change, which Kafka makes by appending or truncating.
Inside a folder (a partition folder a procedure copied or moved) each file's hash covers at most its
last :data:`TREE_TAIL_BYTES`, with its size: a snapshot of a 100 GiB partition reads a few pages per
segment. Times are not recorded: an undo restores contents, owner and mode,
never the mtime, and a later check must not take that for someone else's change.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Collection
from typing import Any

from logdoctor.logdir.files import file_kind, open_regular

CONTENT, META, SOURCE, SEGMENT = "content", "meta", "source", "segment"
FULL_HASH_BYTES = 16 << 20
HEAD_BYTES = 64 << 10
TAIL_BYTES = 1 << 20
TREE_TAIL_BYTES = 64 << 10

Snapshot = dict[str, Any]


def _digest(path: str, size: int, full: int, head: int, tail: int) -> str:
    import hashlib  # here: a dry run digests nothing (its OpenSSL binding is ~2 ms of import, issue 35)

    h = hashlib.blake2b(digest_size=16)
    fd = open_regular(path)
    try:
        if size <= full:
            ranges = [(0, size)]
        else:
            ranges = [(0, head), (size - tail, size)]
        for a, b in ranges:
            while a < b:
                chunk = os.pread(fd, min(8 << 20, b - a), a)
                if not chunk:
                    break
                h.update(chunk)
                a += len(chunk)
    finally:
        os.close(fd)
    return h.hexdigest()


def _tree(root: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        rel_folder = os.path.relpath(folder, root)
        for name in sorted(dirs):
            p = os.path.join(folder, name)
            if os.path.islink(p):
                out[os.path.normpath(os.path.join(rel_folder, name))] = ["symlink", os.readlink(p)]
        for name in sorted(files):
            p = os.path.join(folder, name)
            rel = os.path.normpath(os.path.join(rel_folder, name))
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                out[rel] = [st.st_size, _digest(p, st.st_size, TREE_TAIL_BYTES, 0, TREE_TAIL_BYTES)]
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = ["symlink", os.readlink(p)]
            else:
                out[rel] = [file_kind(st.st_mode)]
    return out


def snapshot(path: str, level: str = CONTENT) -> Snapshot:
    """The state of ``path`` now (see the module doc); never follows a symlink, never opens a FIFO."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {"kind": "absent"}
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        try:
            return {"kind": "symlink", "to": os.readlink(path)}
        except OSError:
            return {"kind": "symlink"}
    kind = "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else file_kind(mode)
    out: Snapshot = {"kind": kind, "mode": stat.S_IMODE(mode), "uid": st.st_uid, "gid": st.st_gid}
    if level == META:
        return out
    if kind == "file":
        out["size"] = st.st_size
        if level == SEGMENT:
            out["ends"] = True
            full, tail = HEAD_BYTES + TREE_TAIL_BYTES, TREE_TAIL_BYTES
        else:
            full, tail = FULL_HASH_BYTES, TAIL_BYTES
        try:
            out["hash"] = _digest(path, st.st_size, full, HEAD_BYTES, tail)
        except OSError as e:
            if e.errno not in (errno.EACCES, errno.EPERM):
                raise
            out["hash"] = None  # unreadable (a file whose mode a chmod step restores): size and mode only
    elif kind == "dir":
        out["tree"] = _tree(path)
    return out


def differs(recorded: Snapshot, now: Snapshot, skip: Collection[str] = ()) -> str | None:
    """What differs between a recorded snapshot and one taken now (None: nothing), in a few words;
    ``skip``: relative paths inside a folder that other steps change (and are checked on their own)."""
    if recorded.get("kind") != now.get("kind"):
        return f"it was {_kind(recorded)} and is now {_kind(now)}"
    if recorded["kind"] == "symlink" and recorded.get("to") != now.get("to"):
        return f"the symlink pointed to {recorded.get('to')} and now to {now.get('to')}"
    if "size" in recorded and recorded["size"] != now.get("size"):
        return f"its size was {recorded['size']:,} bytes and is now {now.get('size'):,}"
    if (
        "hash" in recorded
        and recorded["hash"] is not None
        and now.get("hash") not in (None, recorded["hash"])
    ):
        return f"its content differs ({recorded['size']:,} bytes both)"
    for key, what in (("mode", "mode"), ("uid", "owner"), ("gid", "group")):
        if key in recorded and recorded[key] != now.get(key):
            old, new = recorded[key], now.get(key)
            if key == "mode":
                old, new = f"{old:o}", f"{new:o}" if new is not None else None
            return f"its {what} was {old} and is now {new}"
    if "tree" in recorded:
        a = {k: v for k, v in recorded["tree"].items() if k not in skip}
        b = {k: v for k, v in (now.get("tree") or {}).items() if k not in skip}
        for rel in sorted(set(a) | set(b)):
            if a.get(rel) != b.get(rel):
                if rel not in b:
                    return f"{rel} in it is gone"
                if rel not in a:
                    return f"{rel} in it is new"
                if a[rel][:1] != b[rel][:1]:
                    return f"{rel} in it was {a[rel][0]} bytes and is now {b[rel][0]}"
                return f"the content of {rel} in it differs"
    return None


def _kind(s: Snapshot) -> str:
    k = s.get("kind")
    return {"absent": "absent", "file": "a file", "dir": "a folder"}.get(str(k), f"a {k}")


__all__ = ["CONTENT", "META", "SEGMENT", "SOURCE", "Snapshot", "differs", "snapshot"]
