"""What a format's decoder gives: :class:`Decoded` (values and reasons), the side-table reasons
(:data:`REASONS`), and :class:`SchemaError`. Apart from :mod:`.decoder` so that the format decoders can import
them while :func:`~.decoder.decoder_for` imports the format decoders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

UNKNOWN_SCHEMA_ID = "unknown_schema_id"
UNKNOWN_SCHEMA_GUID = "unknown_schema_guid"
NO_MAGIC_BYTE = "no_magic_byte"  # also: shorter than a frame
DECODE_ERROR_TRUNCATED = "decode_error_truncated"  # the payload ends early
DECODE_ERROR_SCHEMA_MISMATCH = "decode_error_schema_mismatch"  # bad enum / union index, bytes left over...
SCHEMA_HARD_DELETED = "schema_hard_deleted"

#: why a record went to the side table ``OUT/_undecoded``, in the order the summary lists them
REASONS = (
    UNKNOWN_SCHEMA_ID,
    UNKNOWN_SCHEMA_GUID,
    NO_MAGIC_BYTE,
    DECODE_ERROR_TRUNCATED,
    DECODE_ERROR_SCHEMA_MISMATCH,
    SCHEMA_HARD_DELETED,
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
