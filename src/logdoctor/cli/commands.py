"""Imports every command module so each registers itself on the Typer app."""

from __future__ import annotations
