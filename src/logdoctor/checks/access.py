"""Could the broker's user read and write a file? (PERMISSION_DENIED)

The scan usually runs as root, which reads everything, so "we could read it" proves nothing
about the broker. We model the broker's user instead: by default the owner of the log dir (the
broker created it), or the user named with ``--broker-user``. A file passes when that user's
uid/gids and the mode bits allow what the broker does with it: LogLoader opens segment files and
indexes read-write and refuses a file it cannot read ("Could not read file",
K:storage/.../log/LogLoader.java), the index files are mmapped read-write (AbstractIndex).
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from logdoctor.checks.findings import Finding
    from logdoctor.formats.folders import FolderStat


@dataclass(frozen=True, slots=True)
class BrokerUser:
    uid: int
    gids: frozenset[int]
    name: str

    @classmethod
    def of_uid(cls, uid: int) -> BrokerUser:
        try:
            pw = pwd.getpwuid(uid)
        except KeyError:
            return cls(uid, frozenset(), str(uid))
        gids = {pw.pw_gid}
        with contextlib.suppress(OSError):
            gids.update(g.gr_gid for g in grp.getgrall() if pw.pw_name in g.gr_mem)
        return cls(uid, frozenset(gids), pw.pw_name)

    @classmethod
    def named(cls, name: str) -> BrokerUser:
        if name.isdigit():
            return cls.of_uid(int(name))
        return cls.of_uid(pwd.getpwnam(name).pw_uid)

    @classmethod
    def owner_of(cls, path: str | os.PathLike[str]) -> BrokerUser:
        return cls.of_uid(os.stat(path).st_uid)


def missing_access(st: os.stat_result | FolderStat, user: BrokerUser, need: str) -> str:
    """The letters of ``need`` ("r", "w", "x") the user lacks on a file with this stat ('' = none)."""
    if user.uid == 0:
        # root bypasses r/w checks; x on a regular file needs at least one x bit (irrelevant here)
        return ""
    mode = st.st_mode
    if st.st_uid == user.uid:
        bits = {"r": stat.S_IRUSR, "w": stat.S_IWUSR, "x": stat.S_IXUSR}
    elif st.st_gid in user.gids:
        bits = {"r": stat.S_IRGRP, "w": stat.S_IWGRP, "x": stat.S_IXGRP}
    else:
        bits = {"r": stat.S_IROTH, "w": stat.S_IWOTH, "x": stat.S_IXOTH}
    return "".join(c for c in need if not mode & bits[c])


def describe(st: os.stat_result) -> str:
    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = str(st.st_uid)
    return f"owner {owner}, mode {stat.filemode(st.st_mode)}"


def permission_denied(
    path: str, logdir: str, user: BrokerUser, lacking: str, why: str, consequence: str, need: str = ""
) -> Finding:
    """PERMISSION_DENIED of ``path``: ``user`` lacks the letters ``lacking`` of "rwx" on it (``need``: the
    words for them, by default each letter's), ``why`` (owner and mode, or the error), ``consequence``:
    what the broker then does."""
    from logdoctor.checks import catalog  # on a finding only: a partition's check imports this module

    words = {"r": "readable", "w": "writable", "x": "searchable"}
    return catalog.make(
        "PERMISSION_DENIED",
        path,
        logdir=logdir,
        need=need or " and ".join(words[c] for c in lacking),
        user=user.name,
        why=why,
        consequence=f"; {consequence}",
        mode_fix=lacking,
    )
