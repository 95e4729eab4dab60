"""`kill -USR1` of a running logdoctor: every thread's Python stack on its stderr, and the command goes on
(a command that seems stuck says where it waits; the Ctrl-C tests print it when a CLI outlives its Ctrl-C)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

PROGRAM = """
import sys, time
import logdoctor.cli.app as cli_app
import logdoctor.cli.main as cli_main

def waiting(*_args):
    print("ready", flush=True)
    time.sleep(30)
    print("went on", flush=True)

# the command a stand-in that waits, run by main() as any command is (with the framework or without)
cli_app.app = cli_main._without_the_framework = waiting
sys.argv = ["logdoctor", "scan", "."]
cli_main.main()
"""


def test_sigusr1_prints_every_threads_stack_and_the_command_goes_on() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", PROGRAM], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
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
