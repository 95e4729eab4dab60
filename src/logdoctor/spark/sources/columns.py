"""Column values the rows of both sources share: a segment's ``log_dir``, and the rows that name a batch left
out (one whose records do not decode, one left out alone for its CRC), as ``kafka-log-segments`` and
``export`` report them.
"""

from __future__ import annotations

import os
from typing import Any


def undecodable_batch(batch: Any, path: str, error: BaseException | str) -> dict[str, Any]:
    """One batch whose records cannot be read, as export reports it (file positions and offsets)."""
    return {
        "path": path,
        "position": int(batch.position),
        "size": int(batch.size),
        "base_offset": int(batch.base_offset) if batch.base_offset is not None else None,
        "last_offset": int(batch.last_offset),
        "error": str(error),
    }


def row_log_dir(seg: Any) -> str:
    """The ``log_dir`` column of a segment's rows: the log dir, absolute for a local one whatever path it
    was given by (as the remote tier's root is), so rows read from different folders compare; a remote-tier
    segment's store root."""
    if seg.remote is not None:
        return str(seg.remote.root)
    return os.path.abspath(seg.log_dir) if seg.storage.is_local else str(seg.log_dir)


def crc_skip_row(skip: Any, path: str) -> dict[str, Any]:
    """One batch left out alone for its CRC (:class:`logdoctor.formats.records.CrcSkip`), in the shape of
    :func:`undecodable_batch` plus the two CRCs, as export reports it."""
    return {
        "path": path,
        "position": skip.position,
        "size": skip.size,
        "base_offset": skip.base_offset,
        "last_offset": skip.last_offset,
        "stored_crc": skip.stored_crc,
        "computed_crc": skip.computed_crc,
        "error": skip.describe(),
    }
