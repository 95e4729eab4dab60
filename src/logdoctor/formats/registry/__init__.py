"""Schema Registry's store and the formats of the records it types: bytes in, values out (no paths).

One module per concern, each citing the Schema Registry / Kafka Connect source it restates:

- :mod:`.store`: the ``_schemas`` topic (Schema Registry's ``KafkaStore``) replayed into a
  :class:`~.store.SchemaRegistry`: ids, subjects, versions, types, references, soft and hard deletes, GUIDs;
  :func:`~.store.decode_store_record` for ``dump``.
- :mod:`.framing`: where a key's or value's schema is named: Confluent's byte 0 + 4-byte id, byte 1 +
  16-byte GUID, the ``__key_schema_id`` / ``__value_schema_id`` headers, Protobuf's message-index path.
- :mod:`.decoder`: the one protocol every format's decoder follows (:class:`~.decoder.WriterDecoder`), the
  side-table reasons, and :func:`~.decoder.decoder_for` that picks the format's decoder for a schema;
  :mod:`.results`: what a decoder gives back (``Decoded``, the reasons, ``SchemaError``), which the format
  modules import (not :mod:`.decoder`, which imports them).
- :mod:`.avro`, :mod:`.protobuf`, :mod:`.json_schema`, :mod:`.connect_json`: one decoder per format, each
  from the format's own library (fastavro; protobuf with protoc from grpcio-tools; jsonschema; json),
  decoding a batch of payloads into one Arrow array of the writer schema's Arrow type. Avro's in three:
  :mod:`.avro_schema` (the schema with its references, its Arrow type), :mod:`.avro_columns` (payloads
  decoded column by column with numpy, exactly), :mod:`.avro` (the decoder);
  :mod:`.protobuf_schema` (protoc, message-index paths) and :mod:`.protobuf_columns` (parsed messages
  into Arrow columns) for Protobuf; :mod:`.json_text` (JSON parsed, truncated text told apart) for both
  JSON formats.
- :mod:`.arrow_union`: the table type of several writer types (Avro's schema resolution rules), and a
  writer type's array cast to it.

The type mapping (docs/typed-tables.md, versioned by :data:`~.decoder.TYPE_MAPPING_VERSION`) is one table
for every format.
"""
