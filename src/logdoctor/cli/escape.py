"""Control characters of names and data shown as escapes (``\\x1b``, ``\\r``, ``\\n``, ...; an
undecodable byte of a name as ``\\xNN``): the escape every text output applies (:mod:`logdoctor.cli.output`
re-exports it for rich consoles). No rich here, so that what prints without rich imports none of it."""

from __future__ import annotations

import re

__all__ = ["printable"]

# C0 controls, DEL, C1 controls, and lone surrogates (a name's undecodable bytes, os.fsdecode)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    if c in _NAMED:
        return _NAMED[c]
    n = ord(c)
    if 0xDC80 <= n <= 0xDCFF:  # surrogateescape: the byte the name held
        return f"\\x{n - 0xDC00:02x}"
    return f"\\x{n:02x}" if n <= 0xFF else f"\\u{n:04x}"


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with each control character as an escape; ``keep_newlines`` for multi-line text."""
    pattern = _CONTROL_BUT_NEWLINE if keep_newlines else _CONTROL
    return pattern.sub(_escape, text) if pattern.search(text) else text
