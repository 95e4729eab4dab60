"""Where a command may write its output: never at, inside or above one of its inputs.

A census written into a log dir is a stray folder the next scan flags; an export that replaces its
``--out`` would delete a log dir that lies under it. Every command that writes output (``census``,
``export``, ``inventory``, ``scan --html``, ``dump`` to a file, the report) calls
:func:`check_output_location` before it writes or deletes anything.

Paths are compared after resolving symlinks (for the parts that exist), so ``out -> logdir`` is caught.
URIs (``s3://bucket/prefix``) are compared by scheme, authority and path components; a local path
and ``file://`` URI are the same thing; a local path never overlaps a remote URI.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from urllib.parse import urlsplit

from logdoctor.errors import OutputOverlapsInputError


def _key(location: str) -> tuple[str, tuple[str, ...]]:
    """(scheme + authority, path components) of a local path or URI, for containment tests."""
    s = str(location)
    parts = urlsplit(s)
    if parts.scheme and parts.scheme != "file" and len(parts.scheme) > 1:  # "C:" is not a scheme
        path = parts.path.strip("/")
        comps = tuple(c for c in path.split("/") if c and c != ".")
        return f"{parts.scheme.lower()}://{parts.netloc}", comps
    if parts.scheme == "file":
        s = parts.path
    real = os.path.realpath(os.path.abspath(os.path.expanduser(s)))
    return "file://", tuple(c for c in real.split(os.sep) if c)


def overlap(output: str, input_: str) -> str | None:
    """``"is"``, ``"inside"`` or ``"contains"`` when ``output`` overlaps ``input_``, else None."""
    (ofs, opath), (ifs, ipath) = _key(output), _key(input_)
    if ofs != ifs:
        return None
    if opath == ipath:
        return "is"
    if opath[: len(ipath)] == ipath:
        return "inside"
    if ipath[: len(opath)] == opath:
        return "contains"
    return None


def check_output_location(output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Raise :class:`OutputOverlapsInputError` when ``output`` is, lies inside, or contains an input."""
    out = os.fspath(output)
    for item in inputs:
        inp = os.fspath(item)
        relation = overlap(out, inp)
        if relation is not None:
            raise OutputOverlapsInputError(out, inp, relation)


def absolute_location(location: str | os.PathLike[str]) -> str:
    """A local output path made absolute (``~`` expanded; a ``file:`` URI and any other URI as given):
    what an export writes into tables and prints must not depend on the folder it ran in (issue 31)."""
    s = os.fspath(location)
    parts = urlsplit(s)
    if parts.scheme and len(parts.scheme) > 1:  # a URI ("C:" is a drive, not a scheme)
        return s
    return os.path.abspath(os.path.expanduser(s))


__all__ = ["absolute_location", "check_output_location", "overlap"]
