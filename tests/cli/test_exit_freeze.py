"""The `logdoctor` process freezes what is left to the garbage collector before it exits (cli.main): the
interpreter's last collection then does not walk the ~200,000 objects a scan of 50,000 partitions leaves
in cycles (~0.2 s of its exit)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# atexit runs its functions last registered first: this one runs after main() and what it registered
PROBE = (
    "import atexit, gc, sys; from logdoctor.cli.main import main; sys.argv[0] = 'logdoctor';"
    "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0, file=sys.stderr)); main()"
)


def _log_dir(path) -> None:
    """A clean log dir with no partition yet (an empty folder is no log dir: the scan refuses it, issue 59
    item 7): a ZooKeeper-era broker's meta.properties and the recovery-point checkpoint it writes at its
    first start, version 0 and no entry."""
    (path / "meta.properties").write_text("version=0\nbroker.id=0\n")
    (path / "recovery-point-offset-checkpoint").write_text("0\n0\n")


@pytest.mark.parametrize(("where", "code"), [("", 0), ("missing", 66)])
def test_a_run_ends_with_its_objects_frozen(tmp_path, where, code) -> None:
    _log_dir(tmp_path)
    argv = [sys.executable, "-c", PROBE, "scan", "--quick", str(tmp_path / where)]
    r = subprocess.run(argv, capture_output=True, text=True)
    assert r.returncode == code, r.stderr  # a failed command freezes too (main's finally)
    assert r.stderr.splitlines()[-1] == "frozen True", r.stderr


# counts the automatic collections of each generation while the command's modules load and until its work
# starts (the scan), with the freeze count and the collector's state then
COLLECTIONS = (
    "import atexit, gc, sys; counts = [0, 0, 0]\n"
    "atexit.register(lambda: print('enabled at exit', gc.isenabled(), file=sys.stderr))\n"
    "gc.callbacks.append(lambda ev, info: ev == 'start' and counts.__setitem__(info['generation'], "
    "counts[info['generation']] + 1))\n"
    "from logdoctor.cli import main as m, registry\n"
    "def counted(real_load):\n"
    "    def load(entry):\n"
    "        counts[:] = [0, 0, 0]\n"
    "        got = real_load(entry)\n"
    "        import logdoctor.cli.scan_run as cs\n"
    "        real_scan = cs.scan\n"
    "        def scan(*a, **k):\n"
    "            print('collections', counts, 'frozen', gc.get_freeze_count(), 'enabled', gc.isenabled(),"
    " file=sys.stderr)\n"
    "            return real_scan(*a, **k)\n"
    "        cs.scan = scan\n"
    "        return got\n"
    "    return load\n"
    "registry.load, registry.load_fast = counted(registry.load), counted(registry.load_fast)\n"
    "sys.argv[0] = 'logdoctor'\n"
    "m.main()\n"
)


# the typer command (an option with a value), and the same call of flags only without the framework
@pytest.mark.parametrize("jobs", [["-j", "1"], []], ids=["typer", "without the framework"])
def test_the_command_modules_load_without_collections_and_stay_frozen(tmp_path, jobs) -> None:
    """Issue 35: the modules of the command run (typer, click, the checks, ...) are imported with the
    automatic garbage collector off and frozen after, so that no collection walks them, while they
    load or later in the run (before, a `repair` of 1 GiB ran ~140 collections while it loaded and
    one full collection after, ~0.05-0.09 s); the collector is on again after them (a scan turns it off
    for its own work and output: cli.scan_run, issue 49 goal 4)."""
    _log_dir(tmp_path)
    argv = [sys.executable, "-c", COLLECTIONS, "scan", "--quick", "--json", *jobs, str(tmp_path)]
    r = subprocess.run(argv, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stderr.splitlines() if x.startswith("collections"))
    words = line.split()
    counts = [int(w.strip("[],")) for w in words[1:4]]
    assert counts[0] <= 3 and counts[1:] == [0, 0], line  # the parsing of the arguments after: a few
    assert int(words[5]) > 20_000, line  # the command's modules frozen
    # the scan and its output run without automatic collections (cli.scan_run; the scan collects by hand
    # where partitions leave cycles), the collector on again after them
    assert words[7] == "False", line
    assert r.stderr.splitlines()[-1] == "enabled at exit True", r.stderr


# counts the full collections that start after the scan returned, until the process exits
AFTER_SCAN = (
    "import atexit, gc, sys\n"
    "after = [False]; full = [0]\n"
    "gc.callbacks.append(lambda ev, info: ev == 'start' and info['generation'] == 2 and after[0]"
    " and full.__setitem__(0, full[0] + 1))\n"
    "import logdoctor.cli.scan_run as cs\n"
    "real_scan = cs.scan\n"
    "def scan(*a, **k):\n"
    "    got = real_scan(*a, **k)\n"
    "    after[0] = True\n"
    "    return got\n"
    "cs.scan = scan\n"
    "atexit.register(lambda: print('full collections after the scan', full[0], file=sys.stderr))\n"
    "from logdoctor.cli.main import main\n"
    "sys.argv[0] = 'logdoctor'\n"
    "main()\n"
)


@pytest.mark.parametrize("fmt", [[], ["--json"]], ids=["text", "json"])
def test_no_full_collection_walks_the_scan_before_the_exit(tmp_path, fmt) -> None:
    """Issue 49 goal 4: the scan's output is made with the automatic collector off and what the scan keeps is
    frozen before it is on again (cli.scan_run). Before, turning it back on after the text report started
    a full collection at once (the scan's own young collections had counted towards it), which walked
    every object of the scan for no garbage: 0.3-0.7 s of a `scan --quick` of 50,000 partitions. 400
    empty partitions are enough for it to start (more than ten young collections of the scan)."""
    (tmp_path / "meta.properties").write_text("version=0\nbroker.id=0\ncluster.id=AAAAAAAAAAAAAAAAAAAAAQ\n")
    for i in range(400):
        (tmp_path / f"orders-{i}").mkdir()
    argv = [sys.executable, "-c", AFTER_SCAN, "scan", "--quick", *fmt, str(tmp_path)]
    r = subprocess.run(argv, capture_output=True, text=True)
    assert r.returncode == 1, r.stderr  # warnings: empty partition folders, no checkpoints
    assert r.stderr.splitlines()[-1] == "full collections after the scan 0", r.stderr
