"""numpy, imported when first used: ``from logdoctor.formats.lazy_numpy import np``.

Importing numpy costs about 45 ms, as much as the rest of a `scan` of a small log dir. The checks use it
to word a finding in a damaged index, for big producer snapshots, and for the index checks when the C
extension is absent; the index checks run in C (checks.indexes.first_bad_entry, checks/deep.py) or, for a
small index, in plain Python (checks.indexes.whole_index_ok), and indexes are written without it.
Modules that use it name it ``np`` as usual: its first attribute imports numpy, and each attribute is
then kept on the stand-in, so that ``np.frombuffer`` costs what it costs on the module itself (an
attribute lookup).

numpy's OpenBLAS starts its thread pool when numpy is imported, which doubled the import on this
project's 2-core machines (120 ms against 63 ms with one thread, -X importtime, load ~1.6). logdoctor
does no linear algebra (integer columns only: frombuffer, diff, searchsorted), so numpy is imported here
with OPENBLAS_NUM_THREADS=1 unless the environment sets the BLAS threads itself; the variable is removed
again at once, so that no process started later inherits it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

__all__ = ["import_in_background", "np"]

#: the variables OpenBLAS reads for its thread count: one of them set by the user wins
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def _import_numpy() -> Any:
    ours = not any(name in os.environ for name in _BLAS_THREADS)
    if ours:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy
    finally:
        if ours:
            os.environ.pop("OPENBLAS_NUM_THREADS", None)
    return numpy


_background: threading.Thread | None = None


def import_in_background() -> None:
    """Start importing numpy on a thread of its own (once), for a caller about to spend a while in C
    without the GIL (a walk over a big segment), whose work will then need numpy (the columns of big
    indexes): the ~50 ms import overlaps that walk instead of following it. A failed import here is
    left to the first use, which raises it again."""
    global _background
    if _background is not None or "numpy" in sys.modules:
        return

    def run() -> None:
        with contextlib.suppress(Exception):  # the first real use raises it
            _import_numpy()

    _background = threading.Thread(target=run, name="logdoctor-import-numpy", daemon=True)
    _background.start()


class _Numpy:
    """Stands in for the numpy module; see the module's doc."""

    def __getattr__(self, name: str) -> Any:  # only for attributes not yet kept
        value = getattr(_import_numpy(), name)
        setattr(self, name, value)
        return value


if TYPE_CHECKING:
    import numpy as np
else:
    np = _Numpy()
