"""The durable, verified copies the procedures make: :mod:`logdoctor.repair.copies` (the repair engine's
``copy-tree`` operation uses them too), also importable under this name, as the very same module."""

from __future__ import annotations

import sys

from logdoctor.repair import copies

sys.modules[__name__] = copies
