"""Which .log files a `logdoctor scan --deep` of a few big partitions walks before its checks' modules
have loaded (:func:`logdoctor.checks.walk_ahead.start`): on a quiet machine one core is idle while the
interpreter imports the scan (~60 ms), and the deep walk of 1 GiB takes ~0.1 s on both.

Only what the scan itself will walk first, and only what it may read: log dirs that
:func:`logdoctor.logdir.recognize.recognize` takes as log dirs (the scan refuses any other path), at
most :data:`EARLY_PARTITIONS` partition folders in all (the scan checks that many in its own process
before it may hand partitions to a pool of processes, which would walk them again), the regular
``NNN.log`` files of those folders from :data:`~logdoctor.checks.walk_ahead.MMAP_THRESHOLD` bytes (the ones
walked in chunks), and only those the broker's user can read (the log dir's owner, as the scan takes it
without ``--broker-user``: :func:`logdoctor.checks.access.missing_access`, the rule of the scan's
permission check, so that a file the broker cannot read is never read early either). What the walk
finds is used only when it is the scan's own walk of the same bytes (``file_records._take_early``). This
module imports none of checks.state: the walks start before it loads.

The same files are those a ``logdoctor repair LOGDIR...`` maps early (:func:`start_mappings`,
:func:`logdoctor.checks.state.early_mappings.map_early`): mapped and populated while its modules load, then
adopted by its planning scan's kept mappings."""

from __future__ import annotations

import os
from collections.abc import Sequence

from logdoctor.checks import walk_ahead
from logdoctor.checks.access import BrokerUser, missing_access
from logdoctor.checks.walk_ahead import MMAP_THRESHOLD
from logdoctor.logdir.names import parse_partition_dir, parse_segment_file
from logdoctor.logdir.recognize import recognize

__all__ = ["EARLY_PARTITIONS", "early_logs", "start", "start_mappings"]

#: partition folders the scan always checks in its own process (checks.scanner: jobs 1, one partition,
#: or the first ``_PROBE`` of them before it decides on a pool)
EARLY_PARTITIONS = 4

#: bytes of .log walked early at most: what the walks find (16 bytes of positions and last offsets a
#: batch) waits until the scan takes it, while the scan itself holds one partition's walks at a time
EARLY_BYTES = 8 << 30


def early_logs(log_dirs: Sequence[str]) -> list[str]:
    """The .log files of ``log_dirs`` walked early (see the module's doc), in the scan's order: log dirs
    as given, partition folders and segments by name, up to :data:`EARLY_BYTES` in all; [] when the log
    dirs hold more than :data:`EARLY_PARTITIONS` partition folders."""
    folders: list[tuple[str, BrokerUser]] = []
    seen: set[str] = set()
    for d in log_dirs:
        p = os.path.abspath(d)
        if p in seen or not recognize(p).is_log_dir:
            continue
        seen.add(p)
        try:
            user = BrokerUser.owner_of(p)
            with os.scandir(p) as it:
                names = sorted(
                    e.name for e in it if e.is_dir(follow_symlinks=False) and parse_partition_dir(e.name)
                )
        except OSError:
            continue
        folders.extend((os.path.join(p, n), user) for n in names)
        if len(folders) > EARLY_PARTITIONS:
            return []
    logs: list[str] = []
    total = 0
    for folder, user in folders:
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
            for e in entries:
                seg = parse_segment_file(e.name)
                if seg is None or seg.suffix != ".log" or not e.is_file(follow_symlinks=False):
                    continue
                st = e.stat(follow_symlinks=False)
                if st.st_size >= MMAP_THRESHOLD and not missing_access(st, user, "r"):
                    if total + st.st_size > EARLY_BYTES:
                        return logs  # the rest in the scan's turn
                    logs.append(e.path)
                    total += st.st_size
        except OSError:
            continue
    return logs


def start(log_dirs: Sequence[str]) -> int:
    """Start the early walks of :func:`early_logs` (nothing when there are none, or one core); how many."""
    return walk_ahead.start(early_logs(log_dirs))


def start_mappings(log_dirs: Sequence[str]) -> int:
    """Start the early mappings (a ``repair``'s: :func:`logdoctor.checks.state.early_mappings.map_early`) of
    :func:`early_logs`; how many files (0: none, or no C extension)."""
    from logdoctor.checks.state.early_mappings import map_early

    return map_early(early_logs(log_dirs))
