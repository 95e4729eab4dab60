"""The catalog's machinery: the entry type (:class:`Entry`, its :class:`Case` wordings), the severity
shorthands the entry modules use, and the rendering of fix texts into the text people read and the
argvs a script runs (:class:`CommandText`, the ``{repair}`` hint, :func:`render_fix`).

Invariants: an entry is immutable (frozen dataclasses); every command a fix text names is rendered from
its argv (``shlex.join``), so the text and ``fix_argv`` never drift apart; the repair a fix names is
always a dry run (``--apply`` is the user's to add). Holds no entries: those live in the modules named
for their subject, assembled by :mod:`logdoctor.checks.catalog`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from logdoctor.checks.findings import Severity


@dataclass(frozen=True, slots=True)
class Case:
    """One condition of a code with its own wording: message and fix templates over named fields
    (``fix`` None: the entry's fix). A check names the case and passes the facts; the words are here."""

    message: str
    fix: str | None = None


@dataclass(frozen=True, slots=True)
class Entry:
    code: str
    severity: Severity
    title: str
    message: str  # template
    fix: str  # template
    source: str  # where in Kafka (or the field) the rule comes from
    scope: str = "scan"  # scan | fleet | dump (see the module docstring)
    cases: Mapping[str, Case] = field(default_factory=dict)


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO

#: where a fix text without a log dir would put one (never in a real finding: every check passes logdir)
LOGDIR_PLACEHOLDER = "LOGDIR"


class CommandText(str):
    """A fix text (or a part of one) that names commands a script can run: the text as people read it,
    each command in it rendered from its argv (``shlex.join``), and the argvs themselves (``argvs``), so
    that the two never drift apart. A template field given one contributes its argvs to the finding's
    ``fix_argv`` (:func:`make`)."""

    argvs: tuple[tuple[str, ...], ...]

    def __new__(cls, text: str, argvs: Sequence[Sequence[str]] = ()) -> CommandText:
        self = super().__new__(cls, text)
        self.argvs = tuple(tuple(a) for a in argvs)
        return self


def command(argv: Sequence[str]) -> CommandText:
    """One command: its argv, quoted for the shell (``shlex.join``)."""
    return CommandText(shlex.join(argv), [argv])


def command_phrase(template: str, argv: Sequence[str]) -> CommandText:
    """``template`` with ``{command}`` the command of ``argv`` (quoted, in backticks)."""
    return CommandText(template.format(command=f"`{shlex.join(argv)}`"), [argv])


def repair_argv(code: str, logdir: str, *extra: str) -> list[str]:
    """The dry-run repair of ``code`` findings in ``logdir`` (add --apply to make the changes)."""
    return ["logdoctor", "repair", logdir, "--only", code, *extra]


def repair_command(code: str, logdir: str) -> str:
    """:func:`repair_argv`, quoted for the shell."""
    return shlex.join(repair_argv(code, logdir))


def repair_hint(code: str, logdir: str, *extra: str) -> CommandText:
    """A fix phrase around :func:`repair_argv` (the ``{repair}`` template field)."""
    argv = repair_argv(code, logdir, *extra)
    return command_phrase("{command} prints the plan, add --apply to make it", argv)


_FIELD = re.compile(r"\{(\w+)\}")


def render_fix(template: str, values: Mapping[str, Any]) -> tuple[str, tuple[tuple[str, ...], ...]]:
    """A fix template's text and the argvs of the commands in it, in the order the text names them.

    A backticked ``logdoctor ...`` span of the template with fields in it is a command: each of its
    words is formatted alone (a path with a space stays one argument) and the span is the argv quoted
    (``shlex.join``). A field whose value is a :class:`CommandText` brings its argvs. Other spans (a log
    line to look for, another tool's command with placeholders such as ``HOST:PORT``, a shell glob) are
    prose."""
    text: list[str] = []
    argvs: list[tuple[str, ...]] = []
    for i, part in enumerate(template.split("`")):
        if i % 2 and part.startswith("logdoctor ") and _FIELD.search(part) and "*" not in part:
            argv = tuple(word.format_map(values) for word in part.split())
            argvs.append(argv)
            text.append(shlex.join(argv))
            continue
        for name in _FIELD.findall(part):
            value = values.get(name)
            argvs.extend(value.argvs if isinstance(value, CommandText) else ())
        text.append(part.format_map(values))
    return "`".join(text), tuple(argvs)
