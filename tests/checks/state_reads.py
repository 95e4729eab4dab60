"""A file read as the scan reads it (``checks.state.file_records.read_buffer``), for the tests of the kept
mappings and of `repair`'s early mappings; and walked as the scan walks a mapped file (the oracle of the
chunked read walk's tests)."""

from __future__ import annotations

from pathlib import Path

from logdoctor.checks.state import file_records, segment_walk
from logdoctor.checks.undecodable import undecodable_batches


def read_through_state(path: Path) -> tuple[bytes, bool]:
    """The file's bytes as ``read_buffer`` gives them, and whether they came from a kept mapping (no handle
    to close: :func:`logdoctor.checks.state.kept_mappings.mappings_kept` keeps it)."""
    view, handle, _ = file_records.read_buffer(path)
    try:
        return bytes(view), handle is None
    finally:
        file_records.release(view, handle)


def mapped_walk(path: str, verify_crc: bool, with_positions: bool) -> segment_walk.WalkResult:
    """The walk of the mapped file (``read_buffer`` + ``walk`` + the records check: ``walk_file`` without
    the chunked read)."""
    view, handle, extents = file_records.read_buffer(path)
    try:
        res = segment_walk.walk(
            view, verify_crc=verify_crc, with_positions=with_positions, data_extents=extents
        )
        if with_positions and res.positions is not None:
            res.undecodable = undecodable_batches(view, res.positions, res.valid_bytes, path)
        return res
    finally:
        file_records.release(view, handle)
