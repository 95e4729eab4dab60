"""The records of an internal topic's partition folder (``__consumer_offsets``, ``__transaction_state``,
``__share_group_state``) as their coordinators load them: in log order from the log start, stopping at the
first bad batch (a coordinator's load stops there too)."""

from __future__ import annotations

import os
from collections.abc import Iterable

from logdoctor.errors import FormatError

__all__ = ["records_of"]

_Row = tuple[int, int, bool, bytes | None, bytes | None, int]


def records_of(path: str, log_start: int) -> Iterable[_Row]:
    """``(offset, producer id (-1 outside a transaction), is control, key, value, control type)`` of every
    record of a partition folder from ``log_start``, in log order, stopping at the first bad batch."""
    from logdoctor.logdir.model import Partition
    from logdoctor.logdir.names import parse_partition_dir

    name = parse_partition_dir(os.path.basename(path))
    if name is None:
        return
    for seg in Partition(None, path, name).segments:
        try:
            for b in seg.batches():
                if b.last_offset < log_start:
                    continue
                pid = b.producer_id if b.magic >= 2 else -1
                control = b.magic >= 2 and b.is_control
                for r in b.records():
                    if r.offset < log_start:
                        continue
                    if control:
                        # the control records' module (~5 ms of dataclasses) only where a log has one
                        from logdoctor.formats.control import parse_control_key

                        try:
                            _v, ctype = parse_control_key(r.key)
                        except FormatError:
                            continue
                        yield r.offset, pid, True, None, None, ctype
                    else:
                        yield (
                            r.offset,
                            pid if b.is_transactional else -1,
                            False,
                            None if r.key is None else bytes(r.key),
                            None if r.value is None else bytes(r.value),
                            -1,
                        )
        except (FormatError, OSError):
            return  # the coordinator's load stops at bad bytes too (LOG_CORRUPT says where)
