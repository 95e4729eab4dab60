"""Owner and mode of the broker's files: PERMISSION_DENIED.

The broker runs as the log dir's owner and needs read and write on every file and folder of it
(K:core/src/main/scala/kafka/log/LogManager.scala createAndValidateLogDirs / loadLogs: an unreadable
file fails the log dir). The plan gives a file the owner and group of its log dir and a mode like its
siblings' (at least rw for the owner, rwx for a folder); the log dir itself keeps its owner and gains
rwx for it. Changing an owner needs root; symlinks are never changed.
"""

from __future__ import annotations

import os
import stat

from logdoctor.checks.findings import Finding
from logdoctor.repair.plan import Action, Change
from logdoctor.repair.rules.context import PlanContext
from logdoctor.repair.steps.chmod import set_owner_mode

CODES = ("PERMISSION_DENIED",)


def permission(ctx: PlanContext, f: Finding) -> None:
    d = ctx.log_dir_of(f.path)
    assert d is not None
    path = f.path
    try:
        st = os.lstat(path)
    except OSError as e:
        ctx.unrepaired(f, f"cannot stat it: {e.strerror}")
        return
    if stat.S_ISLNK(st.st_mode):
        ctx.unrepaired(f, "a symlink: never changed")
        return
    uid, gid = ctx.owner_of(d)
    is_dir = stat.S_ISDIR(st.st_mode)
    if path == d:
        uid, gid = st.st_uid, st.st_gid  # the log dir's owner is the broker's user
        mode = stat.S_IMODE(st.st_mode) | 0o700
    else:
        mode = ctx.sibling_modes.mode(path, is_dir, uid) | (0o700 if is_dir else 0o600)
    if (st.st_uid, st.st_gid) != (uid, gid) and os.geteuid() != 0:
        ctx.unrepaired(f, "changing the owner needs root")
        return
    if (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (uid, gid, mode):
        return
    step = set_owner_mode(path, uid, gid, mode)
    before = step.params["meta_before"]
    ctx.add(
        Action(
            "fix-permissions",
            path,
            f"{f.code}: {f.message}",
            [f.code],
            [f.path],
            [step],
            [
                Change(
                    path,
                    None,
                    None,
                    None,
                    f"owner {before['uid']}:{before['gid']} mode {before['mode']:o} -> "
                    f"owner {uid}:{gid} mode {mode:o}",
                )
            ],
        )
    )
