"""The census prints each finding's fix command, and notes "not a command of this logdoctor yet" for one
that names no command. Commands register on the app only when their module is imported (cli/registry.py),
so the check must ask the registry's list: asked of the app, in a process that ran only `census`,
`move-partition` and `repair` were announced as missing commands."""

from __future__ import annotations

import json
import subprocess
import sys

from logdoctor.cli.registry import COMMANDS


def _in_a_census_process(lines: list[str]) -> list[bool]:
    """command_exists for each line, asked in a fresh interpreter that imported only the census command."""
    code = (
        "import json, sys\n"
        "from logdoctor.cli.census import command_exists\n"
        "print(json.dumps([command_exists(line) for line in json.loads(sys.argv[1])]))\n"
        "assert 'logdoctor.cli.move_partition' not in sys.modules\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(lines)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_every_command_of_the_registry_exists_for_the_census():
    lines = [f"logdoctor {entry.name} /var/lib/kafka/logs" for entry in COMMANDS]
    assert len(lines) >= 10
    assert _in_a_census_process(lines) == [True] * len(lines)


def test_what_is_no_command_is_said_to_be_none():
    lines = ["logdoctor frobnicate x", "kafka-topics.sh --describe", "logdoctor", ""]
    assert _in_a_census_process(lines) == [False] * len(lines)
