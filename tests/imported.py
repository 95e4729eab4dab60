"""What a fresh interpreter has imported after running the real command line (a start-up guard by listing
modules, not by timing: BENCHMARKS.md, "CLI start")."""

from __future__ import annotations

import json
import subprocess
import sys


def imported_by(*argv: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter has imported after running `logdoctor ARGV` (its exit code left
    aside: a refusal or a finding still counts), in ``env`` when given."""
    code = (
        "import json, sys\n"
        f"sys.argv = ['logdoctor', *{list(argv)!r}]\n"
        "from logdoctor.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))
