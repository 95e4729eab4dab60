"""A JSON payload parsed, or why not: ``decode_error_truncated`` when the text ends early (it is the start of
some valid JSON text: an open string, object or array, a cut literal or number, a cut UTF-8 character),
``decode_error_schema_mismatch`` for any other invalid JSON.

With ``decimals``, numbers with a fraction or exponent are read as :class:`decimal.Decimal` (no float
rounding on the way: a decimal keeps its digits, as Kafka Connect's ``JsonConverter`` reads with
``USE_BIG_DECIMAL_FOR_FLOATS``); the converters make floats of them where the type is a float.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from logdoctor.formats.registry.results import DECODE_ERROR_SCHEMA_MISMATCH, DECODE_ERROR_TRUNCATED

_decoder = json.JSONDecoder()
_decimal_decoder = json.JSONDecoder(parse_float=Decimal)
_PARTIAL_UNICODE_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{0,3}\Z")
# what may complete a text cut after its last character (with the open string closed and the open
# containers closed after it): nothing, a value, an object member, a colon and value, a cut literal's rest
_COMPLETIONS = ("", "0", '"":0', ":0", "rue", "ue", "e", "alse", "lse", "se", "ull", "ll", "l")


class NotJson(ValueError):
    """A payload that is not JSON; ``reason`` is the side table's reason."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


def loads(payload: bytes | memoryview, decimals: bool = False) -> Any:
    """The JSON value of ``payload`` (UTF-8); raises :class:`NotJson`."""
    data = bytes(payload)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.end == len(data) and e.reason == "unexpected end of data":
            text = data[: e.start].decode("utf-8", errors="replace")
            if ends_early(text) or _is_json(text):  # cut inside the last character
                raise NotJson(DECODE_ERROR_TRUNCATED, f"ends inside a UTF-8 character: {e}") from None
        raise NotJson(DECODE_ERROR_SCHEMA_MISMATCH, f"not UTF-8: {e}") from None
    try:
        return (_decimal_decoder if decimals else _decoder).decode(text)
    except json.JSONDecodeError as e:
        reason = DECODE_ERROR_TRUNCATED if ends_early(text) else DECODE_ERROR_SCHEMA_MISMATCH
        raise NotJson(reason, str(e)) from None
    except RecursionError:
        raise NotJson(DECODE_ERROR_SCHEMA_MISMATCH, "nested too deeply") from None


def _is_json(text: str) -> bool:
    try:
        _decoder.decode(text)
    except (json.JSONDecodeError, RecursionError):
        return False
    return True


def ends_early(text: str) -> bool:
    """Whether ``text``, invalid JSON, is the start of a valid JSON text (some ending completes it)."""
    if not text.strip():
        return True
    closers: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            closers.append("]" if ch == "[" else "}")
        elif ch in "]}" and (not closers or closers.pop() != ch):
            return False
    head = text.rstrip() if not in_string else text
    if in_string:
        partial = _PARTIAL_UNICODE_ESCAPE.search(head)
        if partial:
            head += "0" * (6 - len(partial.group()))
        elif escaped:
            head += "n"
        head += '"'
    tail = "".join(reversed(closers))
    return any(_is_json(head + middle + tail) for middle in _COMPLETIONS)
