"""Avro's schema resolution (the specification's "Schema Resolution") on decoded Arrow values: a value
decoded with its writer schema (:mod:`.avro`) is made the value a reader of the reader schema gets.

The rules are those of Java's ``ResolvingGrammarGenerator`` and ``SchemaCompatibility``
(github:apache/avro, lang/java/avro/src/main/java/org/apache/avro/io/parsing/ResolvingGrammarGenerator.java
and .../SchemaCompatibility.java):

- records by field name (a reader field's aliases name the writer's field too): a reader field the writer
  lacks takes its default (no default: incompatible); a writer field the reader lacks is dropped;
- named types (record, enum, fixed) match by unqualified name, or a reader alias naming the writer;
- promotions: int to long, float or double; long to float or double; float to double; string to bytes and
  bytes to string (bytes that are not UTF-8 read with U+FFFD, as Java's ``Utf8.toString`` does);
- an enum symbol the reader lacks takes the reader's enum default (no default: incompatible);
- a writer union's branch resolves as a value of that branch's type; a writer value against a reader
  union goes to the reader's branch Java's ``bestBranch`` picks (same type and name, then same type, then
  a promotion). A writer union resolves only where every branch does (``SchemaCompatibility``).

:func:`incompatibility` says why a writer schema does not resolve to a reader schema (None where it
does): the typed survey keeps such a topic's table a union of its writers (:mod:`.arrow_union`). Beyond
the specification, a change of logical type (a long becoming a timestamp-millis, a decimal's scale) and a
recursive record whose shape changed are not resolved here: they count as incompatible too.
:func:`resolve` converts a writer's decoded array into the reader's Arrow type.
"""

from __future__ import annotations

import decimal
import json
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from logdoctor.formats.registry.arrow_union import null_mask, rebased_offsets
from logdoctor.formats.registry.avro_schema import Node

_NAMED = ("record", "enum", "fixed", "json")
#: writer kind -> the reader kinds it is promoted to, in no particular order
_PROMOTIONS = {
    "int": ("long", "float", "double"),
    "long": ("float", "double"),
    "float": ("double",),
    "string": ("bytes",),
    "bytes": ("string",),
}


def incompatibility(writer: Node, reader: Node) -> str | None:
    """Why values of ``writer`` do not resolve to ``reader``; None where every one of them does."""
    return _check(writer, reader, "", set())


def _short(name: str | None) -> str:
    return (name or "").rsplit(".", 1)[-1]


def _names_match(writer: Node, reader: Node) -> bool:
    """``SchemaCompatibility.schemaNameEquals``: the unqualified names, or a reader alias of the writer."""
    if _short(writer.name) == _short(reader.name):
        return True
    target = reader.target if reader.kind == "json" else reader
    aliases = target.aliases if target is not None else ()
    return writer.name in aliases or _short(writer.name) in (_short(a) for a in aliases)


def _kind(node: Node) -> str:
    return "record" if node.kind == "json" else node.kind


def best_branch(writer: Node, branches: tuple[Node, ...]) -> int:
    """The reader union's branch a value of ``writer`` (not a union) goes to, as Java's ``bestBranch``
    picks it: the same type (and name, for a named type), then the same named type, then a promotion;
    -1 for none."""
    kind = _kind(writer)
    for j, b in enumerate(branches):
        if _kind(b) == kind and (kind not in _NAMED or _names_match(writer, b)):
            return j
    if kind in _NAMED:
        for j, b in enumerate(branches):
            if _kind(b) == kind:
                return j
    for j, b in enumerate(branches):
        if b.kind in _PROMOTIONS.get(kind, ()):
            return j
    return -1


def _plain(node: Node) -> bool:
    return node.logical is None


def _check(w: Node, r: Node, where: str, seen: set[tuple[int, int]]) -> str | None:
    at = where or "the value"
    if r.kind == "union":
        for b in w.branches if w.kind == "union" else (w,):
            j = best_branch(b, r.branches)
            if j < 0:
                return f"{at}: the writer's {_label(b)} is no branch of the reader's union"
            why = _check(b, r.branches[j], where, seen)
            if why:
                return why
        return None
    if w.kind == "union":
        for b in w.branches:
            why = _check(b, r, where, seen)
            if why:
                return why
        return None
    if w.kind == "json" or r.kind == "json":
        if w.kind == "json" and r.kind == "json" and _same(w.target, r.target, set()):
            return None
        return f"{at}: a recursive record that changed is not resolved here"
    if w.kind != r.kind:
        if r.kind in _PROMOTIONS.get(w.kind, ()):
            if _plain(w) and _plain(r):
                return None
            return f"{at}: a promotion with a logical type is not resolved here"
        return f"{at}: the writer's {_label(w)} does not resolve to the reader's {_label(r)}"
    if w.kind in _NAMED and not _names_match(w, r):
        return f"{at}: the writer's {w.kind} {w.name} is not the reader's {r.name}"
    if (w.logical, w.precision, w.scale) != (r.logical, r.precision, r.scale) or (
        w.arrow != r.arrow and (w.kind not in ("record", "array", "map"))
    ):
        return f"{at}: a change of logical type ({w.logical} -> {r.logical}) is not resolved here"
    if w.kind == "fixed" and w.size != r.size:
        return f"{at}: fixed {w.name} of {w.size} bytes is not {r.size} bytes in the reader"
    if w.kind == "enum":
        missing = [s for s in w.symbols if s not in r.symbols]
        if missing and (r.enum_default is None or r.enum_default not in r.symbols):
            return f"{at}: the reader's enum {r.name} lacks {', '.join(missing[:3])} and has no default"
        return None
    if w.kind in ("array", "map"):
        assert w.items is not None and r.items is not None
        return _check(w.items, r.items, f"{where}[]", seen)
    if w.kind == "record":
        pair = (id(w), id(r))
        if pair in seen:
            return None
        seen.add(pair)
        for i, (name, rf) in enumerate(r.fields):
            found = _writer_field(w, r, i)
            sub = f"{where}.{name}" if where else name
            if found is None:
                has, default = r.defaults[i]
                if not has:
                    return f"{sub}: the writer has no such field and the reader's has no default"
                try:
                    _default_array(rf, default, 1)
                except Exception as e:
                    return f"{sub}: the default {default!r} does not fit its type ({type(e).__name__})"
                continue
            why = _check(w.fields[found][1], rf, sub, seen)
            if why:
                return why
    return None


def _same(a: Node | None, b: Node | None, seen: set[tuple[int, int]]) -> bool:
    """Whether two type trees are the same (a recursive record compared once)."""
    if a is None or b is None:
        return a is b
    if (id(a), id(b)) in seen:
        return True
    seen.add((id(a), id(b)))
    if any(getattr(a, x) != getattr(b, x) for x in ("kind", "name", "logical", "arrow", "symbols", "size")):
        return False
    if [n for n, _ in a.fields] != [n for n, _ in b.fields] or len(a.branches) != len(b.branches):
        return False
    pairs = [(x, y) for (_, x), (_, y) in zip(a.fields, b.fields, strict=True)]
    pairs += list(zip(a.branches, b.branches, strict=True))
    pairs += [(a.items, b.items), (a.target, b.target)] if a.kind == "json" else [(a.items, b.items)]
    return all(_same(x, y, seen) for x, y in pairs)


def _label(node: Node) -> str:
    return f"{node.kind} {node.name}" if node.name else node.kind


def _writer_field(w: Node, r: Node, i: int) -> int | None:
    """The index of the writer's field that the reader's field ``i`` reads (by name, then its aliases)."""
    names = [n for n, _ in w.fields]
    aliases = r.field_aliases[i] if r.field_aliases else ()
    return next((names.index(n) for n in (r.fields[i][0], *aliases) if n in names), None)


# -- defaults --------------------------------------------------------------------------------------------


def default_value(node: Node, default: Any) -> Any:
    """A field's default (its JSON value, as the schema gives it) as ``pa.array`` takes it for
    ``node.arrow`` (the decoder's Arrow values: bytes from the default's ISO-8859-1 text, a union's
    default of its first branch, a timestamp as microseconds...)."""
    kind = node.kind
    if kind == "union":
        first = node.branches[0]
        if first.kind == "null":
            if default is not None:
                raise ValueError("a union's default is of its first branch, null")
            return None
        value = default_value(first, default)
        if node.nullable_branch >= 0:
            return value
        return {f.name: (value if i == 0 else None) for i, f in enumerate(node.arrow)}
    if kind == "null":
        if default is not None:
            raise ValueError("null's default is null")
        return None
    if kind == "boolean":
        if not isinstance(default, bool):
            raise TypeError("not a boolean")
        return default
    if kind in ("int", "long"):
        if isinstance(default, bool) or not isinstance(default, int):
            raise TypeError("not an integer")
        if node.logical in ("timestamp-millis", "local-timestamp-millis"):
            return default * 1000
        return default
    if kind in ("float", "double"):
        if isinstance(default, str) and default in ("NaN", "Infinity", "-Infinity"):
            return float(default)
        if isinstance(default, bool) or not isinstance(default, (int, float)):
            raise TypeError("not a number")
        return float(default)
    if kind in ("string", "enum"):
        if not isinstance(default, str) or (kind == "enum" and default not in node.symbols):
            raise TypeError("not a string" if kind == "string" else "not a symbol")
        return default
    if kind in ("bytes", "fixed"):
        raw = default.encode("latin-1")
        if kind == "fixed" and len(raw) != node.size:
            raise ValueError("not the fixed's size")
        if node.logical == "decimal":
            unscaled = int.from_bytes(raw, "big", signed=True)
            return decimal.Decimal(f"{unscaled}E-{node.scale}")
        if node.logical == "uuid":
            return str(uuid.UUID(bytes=raw))
        return raw
    if kind == "array":
        assert node.items is not None
        return [default_value(node.items, v) for v in default]
    if kind == "map":
        assert node.items is not None
        return [(str(k), default_value(node.items, v)) for k, v in default.items()]
    if kind == "json":
        return json.dumps(default, separators=(",", ":"), ensure_ascii=False)
    if kind == "record":
        out = {}
        for (name, f), (has, fd) in zip(node.fields, node.defaults, strict=True):
            if name in default:
                out[name] = default_value(f, default[name])
            elif has:
                out[name] = default_value(f, fd)
            else:
                raise ValueError(f"no value for field {name}")
        return out
    raise TypeError(f"no default for {kind}")


def _default_array(node: Node, default: Any, n: int) -> pa.Array:
    one = pa.array([default_value(node, default)], node.arrow)
    return one.take(pa.array(np.zeros(n, np.int64)))


# -- values ----------------------------------------------------------------------------------------------


def resolve(values: pa.Array, writer: Node, reader: Node) -> pa.Array:
    """``values`` (decoded with ``writer``: of ``writer.arrow``) as the reader of ``reader`` reads them
    (of ``reader.arrow``); only for a pair :func:`incompatibility` accepts. A null stays null."""
    if writer is reader:
        return values
    if reader.kind == "union" or writer.kind == "union":
        return _union(values, writer, reader)
    return _plain_value(values, writer, reader)


def _plain_value(values: pa.Array, w: Node, r: Node) -> pa.Array:
    kind = w.kind
    if kind != r.kind:  # a promotion
        if kind == "bytes":
            return _utf8(values)
        return pc.cast(values, r.arrow, safe=False)  # a long's double may round, as in Avro
    if kind == "enum":
        if all(s in r.symbols for s in w.symbols):
            return values
        known = pc.is_in(values, value_set=pa.array(r.symbols, pa.string()))
        return pc.if_else(pc.or_(known, pc.is_null(values)), values, pa.scalar(r.enum_default, pa.string()))
    if kind in ("array", "map"):
        assert w.items is not None and r.items is not None
        rebased, start, stop = rebased_offsets(values)
        mask = null_mask(values)
        if kind == "array":
            items = resolve(values.values.slice(start, stop - start), w.items, r.items)
            return pa.ListArray.from_arrays(rebased, items, type=r.arrow, mask=mask)
        keys = values.keys.slice(start, stop - start)
        items = resolve(values.items.slice(start, stop - start), w.items, r.items)
        return pa.MapArray.from_arrays(rebased, keys, items, type=r.arrow, mask=mask)
    if kind == "record":
        n = len(values)
        children = []
        for i, (_, rf) in enumerate(r.fields):
            found = _writer_field(w, r, i)
            if found is None:
                children.append(_default_array(rf, r.defaults[i][1], n))
            else:
                children.append(resolve(values.field(found), w.fields[found][1], rf))
        mask = null_mask(values)
        if not children:  # a record of no fields: only whether each value is null
            validity = None if mask is None else pa.compute.invert(mask).buffers()[1]
            return pa.Array.from_buffers(r.arrow, n, [validity], null_count=values.null_count)
        return pa.StructArray.from_arrays(children, fields=list(r.arrow), mask=mask)
    return values if values.type == r.arrow else values.cast(r.arrow)


def _utf8(values: pa.Array) -> pa.Array:
    """Bytes read as a string: UTF-8, or with U+FFFD where they are not (Java's ``Utf8.toString``)."""
    try:
        return values.cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array(
            [None if v is None else v.decode("utf-8", "replace") for v in values.to_pylist()], pa.string()
        )


def _writer_branches(values: pa.Array, w: Node) -> list[tuple[Node, pa.Array | None]]:
    """Each branch of the writer's value: (branch, its values: null where another branch is), None for
    the null branch's; a value that is not a union is its one branch."""
    if w.kind != "union":
        return [(w, values)]
    if w.nullable_branch >= 0:
        return [(b, None if b.kind == "null" else values) for b in w.branches]
    out: list[tuple[Node, pa.Array | None]] = []
    k = 0
    for b in w.branches:
        if b.kind == "null":
            out.append((b, None))
        else:
            child = values.field(k)
            if values.null_count:
                child = pc.if_else(values.is_null(), pa.nulls(len(values), child.type), child)
            out.append((b, child))
            k += 1
    return out


def _pick(arrays: list[pa.Array], n: int, arrow: pa.DataType) -> pa.Array:
    """One array of the rows where each of ``arrays`` (same type, null where another one has the row)
    has a value: the first non-null one of each row."""
    if not arrays:
        return pa.nulls(n, arrow)
    if len(arrays) == 1:
        return arrays[0]
    choice = np.full(n, -1, np.int64)
    for k, a in enumerate(arrays):
        valid = ~np.asarray(a.is_null().to_numpy(zero_copy_only=False), bool)
        choice[(choice < 0) & valid] = k
    index = np.where(choice < 0, 0, choice) * n + np.arange(n)
    return pa.concat_arrays(arrays).take(pa.array(index, mask=choice < 0))


def _union(values: pa.Array, w: Node, r: Node) -> pa.Array:
    n = len(values)
    branches = _writer_branches(values, w)
    if r.kind != "union":
        parts = [resolve(a, b, r) for b, a in branches if a is not None]
        return _pick(parts, n, r.arrow)
    per_branch: dict[int, list[pa.Array]] = {}
    for b, a in branches:
        j = best_branch(b, r.branches)
        if a is not None and r.branches[j].kind != "null":
            per_branch.setdefault(j, []).append(resolve(a, b, r.branches[j]))
    if r.nullable_branch >= 0:
        return _pick(per_branch.get(r.nullable_branch, []), n, r.branches[r.nullable_branch].arrow)
    columns = []
    present = np.zeros(n, bool)
    fields = list(r.arrow)
    k = 0
    for j, b in enumerate(r.branches):
        if b.kind == "null":
            continue
        col = _pick(per_branch.get(j, []), n, fields[k].type)
        present |= ~np.asarray(col.is_null().to_numpy(zero_copy_only=False), bool)
        columns.append(col)
        k += 1
    if not columns:
        return pa.nulls(n, r.arrow)
    return pa.StructArray.from_arrays(columns, fields=fields, mask=pa.array(~present))
