"""The exit deadline ends a process whose main thread is stuck in a native call holding the GIL."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from itasc_ros.ros.exit_deadline import ExitDeadline

#: A process that arms the deadline, then keeps the GIL in a native call for 60 s (``PyDLL``
#: does not release it: as rclpy's teardown of a node in a DDS deadlock).
STUCK = """
import ctypes, sys
from itasc_ros.ros.exit_deadline import ExitDeadline
d = ExitDeadline()
d.arm(float(sys.argv[1]), int(sys.argv[2]), "test: stuck; exiting without it")
print("armed", flush=True)
libc = ctypes.PyDLL(None)
libc.sleep.argtypes = [ctypes.c_uint]
libc.sleep(60)
print("not reached", flush=True)
"""

#: A process that arms a long deadline and exits before it, with its own status.
EXITS_FIRST = """
import sys
from itasc_ros.ros.exit_deadline import ExitDeadline
d = ExitDeadline()
d.arm(30.0, 0, "test: the deadline")
sys.exit(5)
"""

TIMEOUT = 60.0  # [s] a hang's bound (imports and the compiled thread's loading included)


def _run(code: str, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=TIMEOUT
    )
    return proc, time.monotonic() - t0


@pytest.mark.parametrize("status", [0, 3])
def test_a_process_stuck_holding_the_gil_ends_at_the_deadline_with_its_status(
    status: int,
) -> None:
    proc, took = _run(STUCK, "0.5", str(status))
    assert proc.returncode == status, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.splitlines() == ["armed"], proc.stdout  # never got past the native call
    assert "test: stuck; exiting without it" in proc.stderr, proc.stderr
    assert took < 30.0, took  # the 60 s call did not end it


def test_a_process_that_exits_first_keeps_its_own_status_and_says_nothing() -> None:
    proc, took = _run(EXITS_FIRST)
    assert proc.returncode == 5, proc.stderr[-2000:]
    assert "the deadline" not in proc.stderr, proc.stderr
    assert took < 25.0, took  # not held until the 30 s deadline


def test_an_exit_deadline_is_armed_once_with_a_finite_delay_and_a_status_of_a_byte() -> None:
    d = ExitDeadline()
    for seconds in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite and > 0"):
            d.arm(seconds, 0, "never")
    for status in (-1, 256):
        with pytest.raises(ValueError, match="0-255"):
            d.arm(1.0, status, "never")
    assert not d.armed
