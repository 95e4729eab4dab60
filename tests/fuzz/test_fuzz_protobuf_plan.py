"""Mutation fuzzing of the C decoder of Protobuf payloads (``_speedups.pb_decode``, issue 76), here so that
`make asan-check` runs it under ASan + UBSan. The payloads: random messages of the every-kind schema
(tests/typed/protobuf_every_kind.py, written by protobuf's own classes) mutated by tests/fuzz/harness.py's
mutations, random bytes, and hostile shapes (deep nesting, lengths near 2^32, 10-byte varints, long packed
runs). Every batch must come back whole (a row per payload, every column the right length, Arrow arrays
that validate); and the C decoder never reads a payload protobuf's own parser refuses (it refuses it too,
and the Python reader gives the reason). A short run here; `make fuzz` runs FUZZ_EXAMPLES batches.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest
from google.protobuf.message import DecodeError
from harness import mutate

import tiers
from logdoctor.formats import extension
from logdoctor.formats.registry.protobuf_plan import plan_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "typed"))
import protobuf_every_kind as every

BATCHES = int(os.environ["FUZZ_EXAMPLES"]) if "FUZZ_EXAMPLES" in os.environ else tiers.examples(60)

pytestmark = pytest.mark.skipif(
    extension.load() is None or not hasattr(extension.load(), "pb_decode"),
    reason="the C extension is not built",
)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _hostile(rng: random.Random, fields: dict[str, int]) -> bytes:
    inner, deep = fields["inner"], fields["c_inner"]
    kind = rng.randrange(6)
    if kind == 0:  # nested messages deeper than the schema: the inner levels are unknown fields
        payload = b""
        for _ in range(rng.randint(1, 200)):
            payload = _varint(inner << 3 | 2) + _varint(len(payload)) + payload
        return payload
    if kind == 1:  # a length near 2^32 or 2^64
        return _varint(fields["p_bytes"] << 3 | 2) + _varint(rng.choice([2**32 - 1, 2**31, 2**63, 2**64 - 1]))
    if kind == 2:  # 10- and 11-byte varints
        return (
            _varint(fields["p_int64"] << 3) + b"\xff" * rng.choice([9, 10]) + rng.choice([b"\x01", b"\x7f"])
        )
    if kind == 3:  # a long packed run, cut or not
        body = b"\x80\x01" * rng.randint(0, 3000)
        return _varint(fields["r_int32"] << 3 | 2) + _varint(len(body) + rng.choice([0, 1])) + body
    if kind == 4:  # oneof members one after the other, in a message
        parts = [_varint(deep << 3 | 2) + b"\x00", _varint(fields["c_str"] << 3 | 2) + b"\x01a"]
        return b"".join(rng.choice(parts) for _ in range(rng.randint(1, 20)))
    # map entries with their fields twice, out of order, or unknown ones
    entry = rng.choice(
        [b"\x12\x01b\x0a\x01a", b"\x0a\x01a\x0a\x01b\x10\x01", b"\x18\x05\x0a\x00", b"\x0a\x02\xc3"]
    )
    return (_varint(fields["m_string"] << 3 | 2) + _varint(len(entry)) + entry) * rng.randint(1, 5)


def test_the_c_protobuf_decoder_on_mutated_and_hostile_payloads() -> None:
    _, message_class = every.decoder_and_class()
    compiled, struct_type, build = plan_of(message_class.DESCRIPTOR)
    decode = extension.load().pb_decode
    fields = {f.name: f.number for f in message_class.DESCRIPTOR.fields}
    rng = random.Random(76)
    valid = every.messages(message_class, 76, 40, invalid=0.2)
    for _ in range(BATCHES):
        batch = []
        for _ in range(rng.randint(1, 12)):
            pick = rng.randrange(4)
            if pick == 0:
                batch.append(rng.choice(valid))
            elif pick == 1:
                batch.append(mutate(rng.choice(valid), rng, rng.randint(1, 4)))
            elif pick == 2:
                batch.append(rng.randbytes(rng.randint(0, 64)))
            else:
                batch.append(_hostile(rng, fields))
        buffers, refused = decode(compiled, batch)
        values = build(buffers, len(batch), None)
        assert len(values) == len(batch) and values.type == struct_type
        values.validate(full=True)
        for payload, no in zip(batch, refused, strict=True):
            if not no:
                try:
                    message_class.FromString(payload)
                except DecodeError:
                    pytest.fail(f"the C decoder read a payload protobuf refuses: {payload.hex()}")
