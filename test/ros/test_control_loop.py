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

from itasc_ros.ros.control_loop import ControlLoop

# Behaviour, not timing: each test waits for a count of ticks (not a fixed sleep), and what it
# checks holds on a starved process too (an idle loop is slower, never faster, than its grid).
# The loop's wall-clock figures (period error, missed ticks) are itasc-bench loop's.
GENEROUS = 30.0  # [s] the longest a wait for the loop's thread may take on a loaded machine


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


def _wait_for_ticks(ticks: list[float], count: int) -> None:
    """Until ``ticks`` has ``count`` entries (AssertionError after :data:`GENEROUS` s)."""
    deadline = time.monotonic() + GENEROUS
    while len(ticks) < count:
        assert time.monotonic() < deadline, f"{len(ticks)} ticks of {count} in {GENEROUS} s"
        time.sleep(0.005)


def test_the_timer_loop_ticks_on_its_period_and_not_after_stop(context: Context) -> None:
    period = 0.01
    ticks: list[float] = []
    loop = ControlLoop(context, lambda: ticks.append(time.monotonic()), period)
    loop.start()
    _wait_for_ticks(ticks, 60)
    loop.stop(timeout=GENEROUS)
    assert not loop.running
    n = len(ticks)
    # On a grid, never faster: tick k is due at (grid start + k periods) and runs at or after
    # that; a tick runs at most two periods after its grid point (later, the grid restarts
    # from then: no burst of catch-up ticks). So any n ticks span at least n - 3 periods,
    # however starved the process was (a loop that ticked freely, or burst after a stall,
    # would not).
    assert ticks[-1] - ticks[0] >= (n - 3) * period
    # The grid's period: the median gap, within 40 %. A late tick is followed by an early one
    # (the grid does not move), so the median stays on the period on a loaded machine too;
    # a loop on the wrong period (a 1 s or a 1 ms one) is far outside. (Its jitter and missed
    # ticks are wall-clock figures: itasc-bench loop.)
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert sorted(gaps)[len(gaps) // 2] == pytest.approx(period, rel=0.4)
    time.sleep(5 * period)
    assert len(ticks) == n  # no tick after stop()


@pytest.mark.parametrize("busy", [False, True])
def test_the_loop_ends_at_once_when_its_context_goes_down(
    context: Context, busy: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Waiting (a 1 s period) or ticking at 1 kHz: the shutdown stops it, no error, no tick after.

    The loop looks at ``Context.ok()`` only every :data:`OK_CHECK_PERIOD` and waits at most
    :data:`MAX_WAIT`; the context's shutdown tells it at once, and its thread ends without an
    exception (a wait on a context that is down raises). Both are made a minute here, so
    that a loop that was not told would still be waiting long after the generous bound below:
    ending within it is the behaviour (told), not a wall-clock budget.
    """
    from itasc_ros.ros import control_loop

    monkeypatch.setattr(control_loop, "MAX_WAIT", 60.0)
    monkeypatch.setattr(control_loop, "OK_CHECK_PERIOD", 60.0)
    ticks: list[float] = []
    errors: list[Exception] = []
    died: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
    loop = ControlLoop(
        context, lambda: ticks.append(time.monotonic()), 0.001 if busy else 1.0,
        on_error=errors.append,
    )  # fmt: skip
    loop.start()
    _wait_for_ticks(ticks, 5 if busy else 1)  # the first tick is due at once
    assert loop.running
    context.shutdown()
    t_down = time.monotonic()  # no tick starts after the shutdown returned...
    took = _wait_until_stopped(loop, 20.0)
    assert took < 20.0  # told (not found out at its next look, a minute away)
    assert errors == [] and died == []
    # ... but the one whose stop check passed just before the shutdown set the flag (its
    # thread descheduled in between): the shutdown does not wait for a tick that runs.
    assert sum(t > t_down for t in ticks) <= 1, [t - t_down for t in ticks if t > t_down]


@pytest.mark.parametrize("priority", [-1, 100])
def test_a_priority_out_of_range_is_refused_before_the_thread_starts(
    context: Context, priority: int
) -> None:
    """Refused by the constructor: the loop's thread would otherwise die at its start."""
    with pytest.raises(ValueError, match=r"is not 0 \(off\) or 1-99"):
        ControlLoop(context, lambda: None, 0.01, priority=priority)
