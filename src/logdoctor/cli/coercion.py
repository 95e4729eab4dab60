"""Typer's parameter coercion without its start-up cost, for the values whose result is certain.

typer (0.29) coerces every option and argument through a pydantic ``TypeAdapter`` that it builds on the
parameter's first value (``_TyperParameter.get_runtime_param``), even when that value is ``None`` and
the coercion returns ``None`` without it. Its first build imports pydantic (``typer._adapters``), about
as costly as importing numpy: 45 ms of each `logdoctor scan` or `repair`, before any work.

:func:`install` gives each parameter of a command a :class:`LazyRuntimeParam` instead. It answers itself
only where typer's answer is known without pydantic (``None``; a canonical decimal for ``int``; a str
for ``str``; a str or path for ``Path``, through typer's own path checks; lists of these) and hands
everything else (bad values and their error messages, enums, files, parsers, clamps) to the runtime
param typer would have built, built then. ``tests/cli/test_coercion.py`` checks both give the same
value for every parameter of every command. If typer's internals change, :func:`install` does nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args, get_origin

#: the ints pydantic's lax int parsing surely reads as Python's int() does (no sign, spaces, _, 0-prefix)
_CANONICAL_INT = re.compile(r"(?:0|[1-9][0-9]{0,17})")

_NO = object()  # "not certain": ask typer's own runtime param


def install(params: list[Any]) -> None:
    """Give each typer parameter that has not coerced a value yet a :class:`LazyRuntimeParam`."""
    for param in params:
        if getattr(param, "_runtime_param", _NO) is None and hasattr(param, "type_descriptor"):
            param._runtime_param = LazyRuntimeParam()


def _utf8(value: str) -> bool:
    """pydantic refuses a str it cannot encode (lone surrogates: a non-UTF-8 argv), with its message."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _leaf(annotation: Any, info: Any, value: Any, param: Any, ctx: Any) -> Any:
    """typer's coercion of one value of a plain annotation (``_adapters.build_leaf_adapter``), or _NO."""
    if info.parser is not None:
        return _NO
    if annotation is int:
        if info.clamp:
            return _NO
        if type(value) is str and _CANONICAL_INT.fullmatch(value):
            value = int(value)
        if type(value) is not int:
            return _NO
        if (info.min is not None and value < info.min) or (info.max is not None and value > info.max):
            return _NO  # typer's "Input should be greater than or equal to 1"
        return value
    if annotation is str:
        return value if type(value) is str and _utf8(value) else _NO
    if annotation is Path and info.path_type is None:
        if type(value) is str and _utf8(value):
            value = Path(value)  # pydantic's Path(str), without importing pydantic
        if not isinstance(value, Path):
            return _NO
        from typer._param_types import coerce_cli_path

        try:  # typer's own checks (exists, dir_okay, ...); given a Path it needs no pydantic
            return coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)
        except Exception:  # typer's path raises the same error with its own message
            return _NO
    return _NO


def _fast(descriptor: Any, value: Any, param: Any, ctx: Any) -> Any:
    if descriptor.file_annotation is not None:
        return _NO
    annotation, info = descriptor.annotation, descriptor.parameter_info
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        if get_origin(item) is not None or not isinstance(value, (list, tuple)):
            return _NO
        out = [_leaf(item, info, v, param, ctx) for v in value]
        return _NO if any(v is _NO for v in out) else out
    if get_origin(annotation) is not None:
        return _NO
    return _leaf(annotation, info, value, param, ctx)


class LazyRuntimeParam:
    """Stands in for typer's ``RuntimeParam`` of one parameter until a value needs pydantic."""

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multi = param.multiple or param.nargs == -1
        if value is None:  # typer's RuntimeParam.coerce, before it looks at its adapter
            return () if multi else None
        if not (multi and isinstance(value, str)):
            done = _fast(param.type_descriptor, value, param, ctx)
            if done is not _NO:
                return done
        return _real(param).coerce(value, param=param, ctx=ctx)


def _real(param: Any) -> Any:
    """The runtime param typer would have built (and keeps, for the parameter's next values)."""
    from typer._coercion import build_runtime_param

    param._runtime_param = build_runtime_param(param.type_descriptor)
    return param._runtime_param
