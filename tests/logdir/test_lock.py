"""The broker's lock on <log dir>/.lock, held by real child processes.

Kafka's FileLock calls FileChannel.tryLock(), which the JDK implements on Linux as
fcntl(F_SETLK, F_WRLCK, whole file). The children here lock the same way: a Python child with
fcntl.lockf (the same F_SETLK call), and, when a JDK is installed, a JVM running that exact
FileChannel code.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import textwrap

import pytest

from logdoctor.errors import BrokerRunningError
from logdoctor.logdir.lock import hold_lock, is_locked, lock_holder
from patience import patience

PY_HOLDER = textwrap.dedent(
    """
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fcntl(F_SETLK, F_WRLCK, start 0, len 0)
    print("LOCKED", flush=True)
    sys.stdin.read()  # hold until the parent closes our stdin
    """
)

JAVA_HOLDER = textwrap.dedent(
    """
    import java.io.File;
    import java.nio.channels.FileChannel;
    import java.nio.file.StandardOpenOption;
    public class Holder {
      public static void main(String[] a) throws Exception {
        // as org.apache.kafka.server.util.FileLock
        FileChannel ch = FileChannel.open(new File(a[0]).toPath(), StandardOpenOption.CREATE,
            StandardOpenOption.READ, StandardOpenOption.WRITE);
        java.nio.channels.FileLock l = ch.tryLock();
        System.out.println(l != null ? "LOCKED" : "BUSY");
        System.out.flush();
        if (a.length > 1) System.in.read();
      }
    }
    """
)


def _start(cmd):
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    return proc, line


def _stop(proc):
    proc.stdin.close()
    proc.wait(timeout=60)


def test_no_lock_file_is_not_locked(tmp_path):
    assert not is_locked(tmp_path)
    assert not (tmp_path / ".lock").exists()  # probing never creates it


def test_unlocked_lock_file(tmp_path):
    (tmp_path / ".lock").write_bytes(b"")
    assert not is_locked(tmp_path)


def test_python_child_holding_lock_is_detected(tmp_path):
    proc, line = _start([sys.executable, "-c", PY_HOLDER, str(tmp_path / ".lock")])
    try:
        assert line == "LOCKED"
        assert is_locked(tmp_path)
        holder = lock_holder(tmp_path)
        assert holder is not None and holder.pid == proc.pid and holder.exclusive
        # probing twice (open/close of our own fds) must not drop the child's lock
        assert is_locked(tmp_path)
        with pytest.raises(BrokerRunningError, match=str(proc.pid)), hold_lock(tmp_path):
            pass
        assert is_locked(tmp_path)
    finally:
        _stop(proc)
    assert not is_locked(tmp_path)


def test_hold_lock_blocks_a_broker_style_locker(tmp_path):
    with hold_lock(tmp_path) as path:
        assert path == tmp_path / ".lock" and path.exists()
        assert is_locked(tmp_path)  # visible to a probe from this same process too
        assert is_locked(tmp_path)  # and the probe did not release it
        out = subprocess.run([sys.executable, "-c", PY_HOLDER, str(path)], input="", capture_output=True,
                             text=True, timeout=60)
        assert out.returncode != 0 and "LOCKED" not in out.stdout
        assert "BlockingIOError" in out.stderr or "PermissionError" in out.stderr  # EAGAIN / EACCES
    assert not is_locked(tmp_path)
    # and after release a broker-style locker gets it
    proc, line = _start([sys.executable, "-c", PY_HOLDER, str(path)])
    try:
        assert line == "LOCKED"
    finally:
        _stop(proc)


FLOCK_HOLDER = textwrap.dedent(
    """
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, getattr(fcntl, sys.argv[2]) | fcntl.LOCK_NB)  # flock(2), not an fcntl record lock
    print("LOCKED", flush=True)
    sys.stdin.read()
    """
)


@pytest.mark.parametrize("kind", ["LOCK_EX", "LOCK_SH"])
def test_a_flock_held_by_another_process_is_detected(tmp_path, kind):
    """Issue 24 (audit): a .lock held with flock(2) was not seen (flock and fcntl locks do not see each
    other on Linux) and every writing command wrote. Before this, the test asserted the opposite."""
    path = tmp_path / ".lock"
    proc, line = _start([sys.executable, "-c", FLOCK_HOLDER, str(path), kind])
    try:
        assert line == "LOCKED"
        assert is_locked(tmp_path)
        holder = lock_holder(tmp_path)
        assert holder is not None and holder.pid in (proc.pid, -1)
        assert holder.exclusive == (kind == "LOCK_EX")
        with pytest.raises(BrokerRunningError, match="flock"), hold_lock(tmp_path):
            pass
        assert is_locked(tmp_path)  # probing and the refused hold did not take or drop the child's lock
    finally:
        _stop(proc)
    assert not is_locked(tmp_path)


def test_hold_lock_blocks_a_flock_locker(tmp_path):
    with hold_lock(tmp_path) as path:
        out = subprocess.run([sys.executable, "-c", FLOCK_HOLDER, str(path), "LOCK_SH"], input="",
                             capture_output=True, text=True, timeout=60)
        assert out.returncode != 0 and "BlockingIOError" in out.stderr
    proc, line = _start([sys.executable, "-c", FLOCK_HOLDER, str(path), "LOCK_EX"])
    try:
        assert line == "LOCKED"
    finally:
        _stop(proc)


def test_a_flock_in_this_process_is_seen_and_not_released_by_the_probe(tmp_path):
    path = tmp_path / ".lock"
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        assert is_locked(tmp_path)
        assert is_locked(tmp_path)
        out = subprocess.run([sys.executable, "-c", FLOCK_HOLDER, str(path), "LOCK_EX"], input="",
                             capture_output=True, text=True, timeout=60)
        assert out.returncode != 0  # still ours


PROBE_LOOP = textwrap.dedent(
    """
    import os, sys, time
    from logdoctor.logdir.lock import hold_lock, is_locked
    log_dir, what, flag = sys.argv[1], sys.argv[2], sys.argv[4]
    n, seconds = int(sys.argv[3]), float(sys.argv[5])
    print("READY", flush=True)
    runs = seen = 0
    end = time.monotonic() + seconds  # a hang guard only
    while (runs < n or not os.path.exists(flag)) and time.monotonic() < end:
        runs += 1
        if what == "probe":
            seen += is_locked(log_dir)
        else:
            try:
                with hold_lock(log_dir):
                    pass
            except Exception:
                seen += 1
    print(runs, seen, flush=True)
    """
)


def _loop_beside(tmp_path, what: str, n: int):
    """Run PROBE_LOOP's ``what`` in a child while this process probes the same log dir as fast as it can,
    each at least ``n`` times and each until the other has (the child goes on until this process flags
    its ``n`` probes done; this process until the child ends): they overlap by iterations, not for a
    fixed time, which a loaded machine filled with a few hundred of them. (the child's runs, the child's
    locked/refused count, this process's probes and how many saw a lock)."""
    flag = tmp_path.parent / f"{tmp_path.name}.probed"
    argv = [sys.executable, "-c", PROBE_LOOP, str(tmp_path), what, str(n), str(flag), str(patience(120))]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "READY"
    probes = seen = 0
    while proc.poll() is None:
        probes += 1
        seen += is_locked(tmp_path)
        if probes == n:
            flag.touch()
    runs, child_seen = map(int, proc.stdout.read().split())
    return runs, child_seen, probes, seen


def test_two_runs_probing_at_once_do_not_see_each_other(tmp_path):
    """CI failed once: two scans of the same real log dir at once, one said `locked: true` (exit 2).
    The flock probe takes flock(LOCK_EX|LOCK_NB) for a moment, and the other's probe saw that moment
    as a holder: 1.5-5% of probes did, two processes probing in a loop."""
    (tmp_path / ".lock").write_bytes(b"")
    runs, child_seen, probes, seen = _loop_beside(tmp_path, "probe", 1000)
    assert runs >= 1000 and probes >= 1000  # enough overlap for the old probe to fail by hundreds
    assert (child_seen, seen) == (0, 0)


def test_hold_lock_is_not_refused_because_a_scan_probes_at_that_moment(tmp_path):
    runs, refused, probes, _seen = _loop_beside(tmp_path, "hold", 200)
    assert runs >= 200 and probes >= 200
    assert refused == 0
    assert not is_locked(tmp_path)


@pytest.fixture(scope="module")
def java_holder(tmp_path_factory):
    if shutil.which("java") is None:
        pytest.skip("required: no JDK installed: the JVM cross-check needs `java` (Java 17 is required)")
    src = tmp_path_factory.mktemp("java") / "Holder.java"
    src.write_text(JAVA_HOLDER)
    return src


def test_jvm_filechannel_trylock_is_detected(tmp_path, java_holder):
    proc, line = _start(["java", str(java_holder), str(tmp_path / ".lock"), "hold"])
    try:
        assert line == "LOCKED"
        assert is_locked(tmp_path)
        assert lock_holder(tmp_path).pid == proc.pid
        with pytest.raises(BrokerRunningError), hold_lock(tmp_path):
            pass
    finally:
        _stop(proc)
    assert not is_locked(tmp_path)


def test_jvm_trylock_fails_while_we_hold(tmp_path, java_holder):
    with hold_lock(tmp_path):
        out = subprocess.run(["java", str(java_holder), str(tmp_path / ".lock")], capture_output=True,
                             text=True, timeout=120)
        assert out.stdout.strip() == "BUSY"
    out = subprocess.run(["java", str(java_holder), str(tmp_path / ".lock")], capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.strip() == "LOCKED"
