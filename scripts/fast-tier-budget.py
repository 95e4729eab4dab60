"""Measure `make test-fast`'s tests with no time budget and write tests/fast_tier_budget.txt: the tests whose
own run (the call, not the fixtures it shares) took at least tests/tiers.py's BUDGET_SECONDS, each module's
cheapest kept in the tier (tiers.choose_over_budget). Run it on a quiet machine, from the repository:

    .venv/bin/python scripts/fast-tier-budget.py             # runs the tier (about 5 minutes on 2 cores)
    .venv/bin/python scripts/fast-tier-budget.py --junit F   # from a run's JUnit XML written with
                                                             # -o junit_duration_report=call

`make test` (CI) never reads the file; test-fast marks its tests ``slow`` (tests/conftest.py)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import tiers  # noqa: E402


def node_id(classname: str, name: str) -> str:
    """A JUnit testcase's pytest node id: the longest dotted prefix of ``classname`` that is a module
    file under the repository, then the classes left, then the test."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        module = Path(*parts[:cut]).with_suffix(".py")
        if (ROOT / module).is_file():
            return "::".join([module.as_posix(), *parts[cut:], name])
    raise ValueError(f"no module file for the JUnit class {classname!r}")


def call_seconds(junit: Path) -> dict[str, float]:
    """Each passed test's call time from a JUnit XML file (skipped and failed tests are left out)."""
    out: dict[str, float] = {}
    for case in ET.parse(junit).iter("testcase"):
        if any(child.tag in ("skipped", "failure", "error") for child in case):
            continue
        out[node_id(case.get("classname", ""), case.get("name", ""))] = float(case.get("time", "0"))
    return out


def measure(junit: Path) -> None:
    env = {**os.environ, "LOGDOCTOR_TEST_TIER": "fast", "LOGDOCTOR_TIER_BUDGET": "off"}
    argv = [sys.executable, "-m", "pytest", "-q", "-n", os.environ.get("PYTEST_WORKERS", "2"), "--dist",
            "loadfile", *tiers.fast_tier_selection(), "-p", "no:randomly", "-o", "junit_duration_report=call",
            f"--junitxml={junit}"]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, env=env)
    if done.returncode != 0:
        raise SystemExit(f"the tier failed (exit {done.returncode}): measure a tree whose tests pass")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--junit", type=Path, help="a test-fast run's JUnit XML (call durations)")
    parser.add_argument("--budget", type=float, default=tiers.BUDGET_SECONDS)
    parser.add_argument("--out", type=Path, default=tiers.BUDGET_FILE)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        junit = args.junit or Path(tmp) / "test-fast.xml"
        if args.junit is None:
            measure(junit)
        seconds = call_seconds(junit)
    over = tiers.choose_over_budget(seconds, args.budget)
    lines = [
        "# make test-fast's time budget (tests/tiers.py): the tests whose call took at least "
        f"{args.budget:g} s in a",
        "# test-fast run with no budget; test-fast marks them slow, make test (CI) runs them. Written by",
        "# scripts/fast-tier-budget.py (docs/tests.md); node id, a tab, the seconds measured.",
        f"# {len(over)} of {len(seconds)} tests, {sum(over.values()):.0f} s of {sum(seconds.values()):.0f} s "
        "of call time.",
        *(f"{node}\t{s:.2f}" for node, s in over.items()),
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{args.out}: {len(over)} tests over {args.budget:g} s ({sum(over.values()):.0f} s of call time)")


if __name__ == "__main__":
    main()
