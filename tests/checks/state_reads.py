"""A file read as the scan reads it (``checks.state.read_buffer``), for the tests of the kept mappings and of
`repair`'s early mappings."""

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
