"""A package's public names loaded on first use (PEP 562 module ``__getattr__``), so that importing one of
its modules does not import every other one (:mod:`logdoctor.checks`, :mod:`logdoctor.logdir`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each name of ``exports`` (name -> module) taken from its module
    when first asked for; any other name an AttributeError, as for any module."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        return getattr(importlib.import_module(module), name)

    return __getattr__
