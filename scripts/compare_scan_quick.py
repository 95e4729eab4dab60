"""Compare `logdoctor scan --quick` (text and ``--json``) of this tree with another tree's, dir by dir.

    .venv/bin/python scripts/compare_scan_quick.py --before /tmp/before/src [--depth quick] [DIR ...]

Without DIRs: every log dir of ../shared/realworld (MANIFEST.json) and bench_disk_speed.py's
``/tmp/logdoctor-bench/empty-partitions-50000/logs`` (when it exists). Each dir is scanned by both trees
(``PYTHONPATH``) with the same interpreter; the text is compared with the elapsed time and the disk-use
cell masked (other jobs write to the disk between the two runs), the JSON without ``now_ms``, ``elapsed_s``
and ``disk``; the exit codes too. Prints one line a dir and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REALWORLD = REPO.parent / "shared" / "realworld"
BIG = Path("/tmp/logdoctor-bench/empty-partitions-50000/logs")
ENTRY = "import sys; from logdoctor.cli.main import main; sys.argv[0] = 'logdoctor'; main()"
_ELAPSED = re.compile(r" in \d+(\.\d+)? s\b")
_DISK = re.compile(r"\d+% of [\d.]+ [KMGTP]?i?B")
_RULES = re.compile(r"[━─┳┻╇┯┷┼╋]+| +")


def _dirs() -> list[Path]:
    out = []
    if (REALWORLD / "MANIFEST.json").is_file():
        manifest = json.loads((REALWORLD / "MANIFEST.json").read_text())
        out += [REALWORLD / e["name"] for e in manifest["entries"]]
    if BIG.is_dir():
        out.append(BIG)
    return out


def _run(src: str, args: list[str]) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": src, "COLUMNS": "200", "LOGDOCTOR_HELP_CACHE": "0"}
    done = subprocess.run(
        [sys.executable, "-c", ENTRY, *args], env=env, capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout, done.stderr


def _text(out: str) -> str:
    return _RULES.sub(" ", _DISK.sub("DISK", _ELAPSED.sub(" in T s", out)))


def _json(out: str) -> object:
    doc = json.loads(out)
    doc.pop("now_ms", None)
    doc.pop("elapsed_s", None)
    for d in doc.get("log_dirs", []):
        d.pop("disk", None)
    return doc


def _json_same(before: str, after: str) -> bool:
    try:
        return _json(before) == _json(after)
    except ValueError:  # no JSON (a usage error): the text
        return _text(before) == _text(after)


def compare(before: str, after: str, d: Path, depth: str) -> list[str]:
    diffs = []
    for fmt in ("text", "json"):
        args = ["scan", f"--{depth}", str(d)] + (["--json"] if fmt == "json" else [])
        rc_b, out_b, err_b = _run(before, args)
        rc_a, out_a, err_a = _run(after, args)
        if rc_b != rc_a:
            diffs.append(f"{fmt}: exit {rc_b} before, {rc_a} after")
        if err_b != err_a:
            diffs.append(f"{fmt}: stderr differs")
        same = _json_same(out_b, out_a) if fmt == "json" else _text(out_b) == _text(out_a)
        if not same:
            diffs.append(f"{fmt}: output differs")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="the other tree's src (with its built _speedups)")
    ap.add_argument("--after", default=str(REPO / "src"))
    ap.add_argument("--depth", default="quick", choices=["quick", "deep"])
    ap.add_argument("dirs", nargs="*", type=Path)
    a = ap.parse_args()
    bad = 0
    for d in a.dirs or _dirs():
        diffs = compare(a.before, a.after, d, a.depth)
        bad += bool(diffs)
        print(f"{'DIFF' if diffs else 'same'} {d}" + "".join(f"\n  {x}" for x in diffs), flush=True)
    print(f"{bad} dir(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
