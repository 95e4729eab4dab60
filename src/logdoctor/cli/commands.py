"""Imports every command module so each registers itself on the Typer app."""

from __future__ import annotations
from logdoctor.cli import dump  # noqa: F401
from logdoctor.cli import scan, retention  # noqa: F401
from logdoctor.cli import repair  # noqa: F401
from logdoctor.cli import export, census, demo  # noqa: F401
from logdoctor.cli import move_partition, sync_replica  # noqa: F401
