"""Why a record went to the side table ``OUT/_undecoded``: the reasons every module of the package names.

A module of its own so that :mod:`.store` (which :mod:`.decoder` imports), :mod:`.framing` and the decoders
name the same strings.
"""

from __future__ import annotations

UNKNOWN_SCHEMA_ID = "unknown_schema_id"
UNKNOWN_SCHEMA_GUID = "unknown_schema_guid"
NO_MAGIC_BYTE = "no_magic_byte"  # also: shorter than a frame
DECODE_ERROR_TRUNCATED = "decode_error_truncated"  # the payload ends early
DECODE_ERROR_SCHEMA_MISMATCH = "decode_error_schema_mismatch"  # bad enum / union index, bytes left over...
SCHEMA_HARD_DELETED = "schema_hard_deleted"
#: a Protobuf message-index path naming different messages as Java's and confluent-kafka-python's serializers
#: count nested messages (protobuf_schema.py)
AMBIGUOUS_MESSAGE_INDEXES = "ambiguous_message_indexes"
#: the payload is ciphertext: the writer schema's data contract has an ENCRYPT_PAYLOAD rule (data_contract.py)
ENCRYPTED_PAYLOAD = "encrypted_payload"

#: why a record went to the side table ``OUT/_undecoded``, in the order the summary lists them
REASONS = (
    UNKNOWN_SCHEMA_ID,
    UNKNOWN_SCHEMA_GUID,
    NO_MAGIC_BYTE,
    DECODE_ERROR_TRUNCATED,
    DECODE_ERROR_SCHEMA_MISMATCH,
    SCHEMA_HARD_DELETED,
    AMBIGUOUS_MESSAGE_INDEXES,
    ENCRYPTED_PAYLOAD,
)
