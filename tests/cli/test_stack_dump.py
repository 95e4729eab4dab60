"""`kill -USR1` of a running logdoctor: every thread's Python stack on its stderr, and the command goes on
(a command that seems stuck says where it waits; the Ctrl-C tests print it when a CLI outlives its Ctrl-C)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from patience import exit_after_ctrl_c

PROGRAM = """
import sys, time
import logdoctor.cli.app as cli_app
import logdoctor.cli.main as cli_main

SECONDS = float(sys.argv[1])  # how long the command waits

def waiting(*_args):
    print("ready", flush=True)
    time.sleep(SECONDS)
    print("went on", flush=True)

# the command a stand-in that waits, run by main() as any command is (with the framework or without)
cli_app.app = cli_main._without_the_framework = waiting
sys.argv = ["logdoctor", "scan", "."]
cli_main.main()
"""


def test_sigusr1_prints_every_threads_stack_and_the_command_goes_on() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", PROGRAM, "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        assert proc.poll() is None  # not ended by the signal
    finally:
        proc.kill()
    _out, err = proc.communicate(timeout=30)
    assert "Current thread" in err and "in waiting" in err, err


@pytest.mark.parametrize("to_file", [False, True], ids=["stderr-piped", "stderr-to-a-file"])
def test_a_cli_that_outlives_its_ctrl_c_fails_its_test_with_where_it_waits(tmp_path, to_file: bool) -> None:
    """The Ctrl-C tests' wait (patience.exit_after_ctrl_c): a CLI still running after the bound is sent
    SIGUSR1 and the test fails with its stderr, every thread's stack in it, and the process gone."""
    deaf = f"import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n{PROGRAM}"
    err_file = tmp_path / "stderr.txt"
    with err_file.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", deaf, "60"],
            stdout=subprocess.PIPE,
            stderr=sink if to_file else subprocess.PIPE,
            text=True,
        )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)  # ignored: the stand-in of a hang after Ctrl-C
    with pytest.raises(AssertionError, match="after Ctrl-C") as failed:
        exit_after_ctrl_c(proc, stderr_file=err_file if to_file else None, seconds=1)
    assert "Current thread" in str(failed.value) and "in waiting" in str(failed.value)
    assert proc.poll() is not None
