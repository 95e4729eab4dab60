"""A JSON payload parsed, or why not: ``decode_error_truncated`` when the text ends early (it is the start of
some valid JSON text: an open string, object or array, a cut literal or number, a cut UTF-8 character),
``decode_error_schema_mismatch`` for any other invalid JSON.

With ``decimals``, numbers with a fraction or exponent are read as :class:`decimal.Decimal` (no float
rounding on the way: a decimal keeps its digits, as Kafka Connect's ``JsonConverter`` reads with
``USE_BIG_DECIMAL_FOR_FLOATS``); the converters make floats of them where the type is a float.

Valid JSON that no value here can hold is ``decode_error_schema_mismatch`` too, never an exception:

- an integer of more digits than Python converts (4,300: ``sys.get_int_max_str_digits``; Jackson, which
  Schema Registry's deserializers and Connect's ``JsonConverter`` read with, refuses numbers of more than
  1,000 characters already: ``StreamReadConstraints.DEFAULT_MAX_NUM_LEN``), and with ``decimals`` a number
  whose exponent no decimal holds (``1e99999999999999999999``: Java's ``BigDecimal`` refuses it too, its
  scale is an int);
- a string holding a lone UTF-16 surrogate (``"\\ud800"``, as JavaScript's ``JSON.stringify`` writes a
  string cut inside an emoji). Jackson reads it into a Java String (UTF-16 holds it), but it has no UTF-8
  form: Java's encoder writes ``?`` in its place and Arrow's strings must be UTF-8. Rather than alter a value
  silently, the record goes to the side table with its bytes (a surrogate pair, an emoji escaped, is one
  character and decodes);
- nesting deeper than Python's parser goes (about 1,000 levels; Jackson's limit is 1,000 too:
  ``StreamReadConstraints.DEFAULT_MAX_DEPTH``).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH, DECODE_ERROR_TRUNCATED

_decoder = json.JSONDecoder()
_decimal_decoder = json.JSONDecoder(parse_float=Decimal)
_PARTIAL_UNICODE_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{0,3}\Z")
# a \u escape of a surrogate in the text (the only way a surrogate gets into a string decoded from UTF-8)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
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
        value = (_decimal_decoder if decimals else _decoder).decode(text)
    except json.JSONDecodeError as e:
        reason = DECODE_ERROR_TRUNCATED if ends_early(text) else DECODE_ERROR_SCHEMA_MISMATCH
        raise NotJson(reason, str(e)) from None
    except RecursionError:
        raise NotJson(DECODE_ERROR_SCHEMA_MISMATCH, "nested too deeply") from None
    except (ValueError, ArithmeticError) as e:  # int()'s digit limit; Decimal's InvalidOperation
        raise NotJson(DECODE_ERROR_SCHEMA_MISMATCH, f"a number no value holds: {str(e)[:80]}") from None
    if "\\u" in text and _SURROGATE_ESCAPE.search(text) and _lone_surrogate(value):
        raise NotJson(DECODE_ERROR_SCHEMA_MISMATCH, "a lone UTF-16 surrogate in a string: no Unicode text")
    return value


def _lone_surrogate(value: Any) -> bool:
    """Whether a decoded JSON value holds a surrogate in a string or a member name (a pair decodes to one
    character: what is left is lone). Iterative: the value may be nested as deep as the parser went."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if _SURROGATE.search(v):
                return True
        elif isinstance(v, dict):
            stack.extend(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def _is_json(text: str) -> bool:
    try:
        _decoder.decode(text)
    except (ValueError, ArithmeticError, RecursionError):  # JSONDecodeError, int()'s digit limit
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
