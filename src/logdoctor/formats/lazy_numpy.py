"""numpy, imported when first used: ``from logdoctor.formats.lazy_numpy import np``.

Importing numpy costs about 45 ms, as much as the rest of a `scan` of a small log dir. The checks use it
for the columns of big indexes and producer snapshots; a log dir of small files (a 32-entry index is
checked in plain Python: checks.indexes._SMALL) never needs it. Modules that use it name it ``np`` as
usual: its first attribute imports numpy, and each attribute is then kept on the stand-in, so that
``np.frombuffer`` costs what it costs on the module itself (an attribute lookup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["np"]


class _Numpy:
    """Stands in for the numpy module; see the module's doc."""

    def __getattr__(self, name: str) -> Any:  # only for attributes not yet kept
        import numpy

        value = getattr(numpy, name)
        setattr(self, name, value)
        return value


if TYPE_CHECKING:
    import numpy as np
else:
    np = _Numpy()
