"""What every format's decoder gives back: :class:`Decoded`, the side-table reasons (:data:`REASONS`), and
:class:`SchemaError` for a schema that does not parse. (:mod:`.decoder` names them too; a format's module
imports them from here, as :mod:`.decoder` imports the format modules.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

# the side-table reasons: one module of their own (reasons.py), which the store and the framing name too
from logdoctor.formats.registry.reasons import (  # noqa: F401
    DECODE_ERROR_SCHEMA_MISMATCH,
    DECODE_ERROR_TRUNCATED,
    NO_MAGIC_BYTE,
    REASONS,
    SCHEMA_HARD_DELETED,
    UNKNOWN_SCHEMA_GUID,
    UNKNOWN_SCHEMA_ID,
)


class SchemaError(ValueError):
    """A registered schema that cannot be parsed or compiled (its id and the library's words)."""


@dataclass(slots=True)
class Decoded:
    """What a decoder made of a batch of payloads: ``values`` (an array of the decoder's ``arrow_type``,
    one element per payload, null where it did not decode) and ``reasons`` (None where it decoded, else one
    of :data:`REASONS`)."""

    values: pa.Array
    reasons: list[str | None]
