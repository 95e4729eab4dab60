"""A file read as the scan reads it (``checks.state.read_buffer``), for the tests of the kept mappings and of
`repair`'s early mappings; and walked as the scan walks a mapped file (the oracle of the chunked read
walk's tests)."""

from __future__ import annotations

from pathlib import Path

from logdoctor.checks import state


def read_through_state(path: Path) -> tuple[bytes, bool]:
    """The file's bytes as ``read_buffer`` gives them, and whether they came from a kept mapping (no handle
    to close: :func:`logdoctor.checks.state.mappings_kept` keeps it)."""
    view, handle, _ = state.read_buffer(path)
    try:
        return bytes(view), handle is None
    finally:
        state.release(view, handle)


def mapped_walk(path: str, verify_crc: bool, with_positions: bool) -> state.WalkResult:
    """The walk of the mapped file (``read_buffer`` + ``walk`` + the records check: ``walk_file`` without
    the chunked read)."""
    view, handle, extents = state.read_buffer(path)
    try:
        res = state.walk(view, verify_crc=verify_crc, with_positions=with_positions, data_extents=extents)
        if with_positions and res.positions is not None:
            res.undecodable = state.undecodable_batches(view, res.positions, res.valid_bytes, path)
        return res
    finally:
        state.release(view, handle)
