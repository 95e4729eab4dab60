"""The errors of a read's inputs and options, shown to the user as is: a bad path (found by
:mod:`logdoctor.logdir.discovery`) or a bad read option (found by
:meth:`logdoctor.logdir.read_options.ReadOptions.from_options`), one kind for both (the data sources'
``PlanningError``)."""

from __future__ import annotations

__all__ = ["DiscoveryError", "InputNotFoundError", "InputPermissionError"]


class DiscoveryError(ValueError):
    """A bad path or read option given to a reader of log dirs (shown to the user as is)."""


class InputNotFoundError(DiscoveryError):
    """A path given does not exist (the CLI exits 66 for it, as for a local path)."""


class InputPermissionError(DiscoveryError):
    """A path given cannot be read by this user (the CLI exits 77 for it)."""
