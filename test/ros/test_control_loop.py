"""itasc_ros.ros.control_loop: the loop's thread ticks on its grid, and ends when told or when
its context goes down (in this process: no node, no other process)."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import pytest
import rclpy
from rclpy.context import Context

from itasc_ros.ros.control_loop import MAX_WAIT, OK_CHECK_PERIOD, ControlLoop

pytestmark = pytest.mark.serial  # the loop's own timing: starved under SCHED_IDLE, it is late


@pytest.fixture
def context() -> Iterator[Context]:
    ctx = Context()
    rclpy.init(context=ctx)
    yield ctx
    ctx.try_shutdown()


def _wait_until_stopped(loop: ControlLoop, within: float) -> float:
    """Seconds until ``loop``'s thread ended (inf: still running after ``within`` [s])."""
    t0 = time.monotonic()
    while loop.running:
        if time.monotonic() - t0 > within:
            return float("inf")
        time.sleep(0.002)
    return time.monotonic() - t0


def test_the_timer_loop_ticks_on_its_period_and_not_after_stop(context: Context) -> None:
    ticks: list[float] = []
    loop = ControlLoop(context, lambda: ticks.append(time.monotonic()), 0.01)
    loop.start()
    time.sleep(0.5)
    loop.stop()
    assert not loop.running
    n = len(ticks)
    assert 30 <= n <= 52  # 50 ticks of 10 ms in 0.5 s; a loaded machine misses some
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert sorted(gaps)[len(gaps) // 2] == pytest.approx(0.01, abs=0.002)  # the grid's period
    time.sleep(0.05)
    assert len(ticks) == n  # no tick after stop()


@pytest.mark.parametrize("busy", [False, True])
def test_the_loop_ends_at_once_when_its_context_goes_down(
    context: Context, busy: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Waiting (a 1 s period) or ticking at 1 kHz: the shutdown stops it, no error, no tick after.

    The loop looks at ``Context.ok()`` only every :data:`OK_CHECK_PERIOD`; the context's
    shutdown tells it at once, and its thread ends without an exception (a wait on a context
    that is down raises).
    """
    ticks: list[float] = []
    errors: list[Exception] = []
    died: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
    loop = ControlLoop(
        context, lambda: ticks.append(time.monotonic()), 0.001 if busy else 1.0,
        on_error=errors.append,
    )  # fmt: skip
    loop.start()
    time.sleep(0.2)
    assert loop.running and ticks
    context.shutdown()
    t_down = time.monotonic()  # no tick starts after the shutdown returned
    took = _wait_until_stopped(loop, OK_CHECK_PERIOD + MAX_WAIT + 2.0)
    assert took < 0.05  # told, not found out at its next look (up to 0.1 s of waiting)
    assert errors == [] and died == []
    assert all(t <= t_down for t in ticks)
