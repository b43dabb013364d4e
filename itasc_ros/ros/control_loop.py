"""The control loop's own thread: it waits for its next tick, nothing else runs on it.

The node's executor serves everything that is not the tick (parameter and service calls, the
URDF topic, IK requests, the RViz markers, the status timer) on the main thread; the ticks run
on this one. It waits on one ``rcl`` wait set: with ``control_trigger: timer``, for the next tick
on a grid of control periods (after a stall the grid restarts: no burst of catch-up ticks); with
``joint_states``, for a joint state (ticking at most ``control_rate``, see
:class:`~itasc_ros.ros.tick_spacing.TickSpacing`) or for the watchdog's deadline when they stop.
A guard condition wakes it to stop or to re-read its period.

Python runs one thread at a time: a thread that wants to run waits until the running one gives
way, at most the interpreter's switch interval. :func:`shorten_switch_interval` makes that
0.2 ms, so that work on the executor (a model being built, a flood of service calls) delays a
tick by at most about that.
"""

from __future__ import annotations

import math
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from .polled_reader import PolledReader, Waiter
from .realtime import check_priority, set_thread_priority
from .tick_spacing import TickSpacing

#: The interpreter's switch interval in a node process [s] (CPython's default: 5 ms).
SWITCH_INTERVAL = 0.0002
#: Longest wait before the loop checks its stop flag and the context [s].
MAX_WAIT = 0.1
#: How often the loop checks that the context is still valid [s]: ``Context.ok()`` takes two
#: locks, too costly for every pass of a 1 kHz loop; its stop flag is checked every pass, and
#: the context's shutdown sets it.
OK_CHECK_PERIOD = 0.05


def shorten_switch_interval(interval: float = SWITCH_INTERVAL) -> None:
    """Let a waiting thread (the control loop's) run within ``interval`` [s] of asking."""
    sys.setswitchinterval(interval)


class ControlLoop:
    """Runs ``tick()`` on a thread of its own (see the module).

    Args:
        context: the rclpy context of the node.
        tick: one control tick (it takes its inputs itself).
        period: the control period [s].
        joint_states: with the ``joint_states`` trigger, the reader whose messages wake the
            loop and ``take_joint_state()`` that takes one (returns True when there was
            one); None for the timer trigger.
        watchdog: ``joint_states`` trigger: the longest time without a tick [s] before the
            loop ticks anyway (the controller then stops for stale input).
        on_error: gets an exception a tick let out (default: printed to stderr); the loop
            goes on.
        priority: the loop thread's SCHED_FIFO priority (1-99; 0: left as the thread starts,
            on the normal scheduler when a real-time thread starts it). Not permitted, the
            loop runs at the normal priority (the process's
            :func:`~itasc_ros.ros.realtime.apply_realtime` reported why).

    Raises:
        ValueError: ``priority`` not 0 or 1-99 (here, not in the loop's thread).
    """

    def __init__(
        self,
        context: Any,
        tick: Callable[[], None],
        period: float,
        joint_states: tuple[PolledReader[Any], Callable[[], bool]] | None = None,
        watchdog: float = math.inf,
        on_error: Callable[[Exception], None] | None = None,
        priority: int = 0,
    ) -> None:
        check_priority(priority)
        self._context = context
        self._priority = priority
        self._tick = tick
        self._on_error = on_error if on_error is not None else _print_error
        self.period = period
        self.watchdog = watchdog
        self._take = None if joint_states is None else joint_states[1]
        self._spacing = TickSpacing(period)
        self._waiter = Waiter(context, None if joint_states is None else joint_states[0])
        self._stop = threading.Event()
        self.last_tick = -math.inf  # [s] time.monotonic() of the last tick
        self._next_ok_check = -math.inf  # [s] time.monotonic() of the next Context.ok()
        self._thread = threading.Thread(target=self._run, name="itasc_control", daemon=True)
        context.on_shutdown(self._on_context_shutdown)  # kept as a weak reference by rclpy

    def start(self) -> None:
        """Start ticking."""
        self._thread.start()

    def set_period(self, period: float, watchdog: float) -> None:
        """A new control period [s] (and watchdog [s]), from the next wait on."""
        self.period = period
        self.watchdog = watchdog
        self._spacing.period = period
        self._waiter.wake()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop ticking; returns once the thread has ended (or after ``timeout`` [s])."""
        self._stop.set()
        self._waiter.wake()
        if self._thread.ident is not None:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def _run(self) -> None:
        set_thread_priority(self._priority)  # its failure: reported by the process's own
        with self._context.handle:
            if self._take is None:
                self._run_timer()
            else:
                self._run_joint_states(self._take)

    def _on_context_shutdown(self) -> None:
        """The context went down: stop after the tick that runs, if any (no wait)."""
        self._stop.set()
        try:
            self._waiter.wake()
        except Exception:  # a guard condition of a context already gone: the wait times out
            pass

    def _running(self, now: float) -> bool:
        """False once stopped or once the context went down (told, and checked every so often)."""
        if self._stop.is_set():
            return False
        if now >= self._next_ok_check:
            self._next_ok_check = now + OK_CHECK_PERIOD
            return bool(self._context.ok())
        return True

    def _wait(self, timeout: float) -> None:
        """Wait at most ``timeout`` [s] (capped at :data:`MAX_WAIT`; NaN waits that long)."""
        self._waiter.wait(timeout if timeout <= MAX_WAIT else MAX_WAIT)

    def _tick_safely(self) -> None:
        """One tick; an exception it lets out is reported and the loop goes on ticking."""
        self.last_tick = time.monotonic()
        try:
            self._tick()
        except Exception as exc:  # the loop must never die: the next tick may stop the robot
            self._on_error(exc)

    def _run_timer(self) -> None:
        next_t = time.monotonic()
        while self._running(now := time.monotonic()):
            wait = next_t - now
            if wait > 0.0:
                self._wait(wait)
                continue  # woken early (stop, a new period) or the wait is capped: look again
            self._tick_safely()
            next_t += self.period
            if next_t < time.monotonic() - self.period:  # a stall: restart the grid
                next_t = time.monotonic() + self.period

    def _run_joint_states(self, take: Callable[[], bool]) -> None:
        while self._running(now := time.monotonic()):
            deadline = self.last_tick + max(2.0 * self.period, self.watchdog)
            self._wait(deadline - now)
            now = time.monotonic()
            if take():
                if self._spacing.due(now):
                    self._tick_safely()
            elif now >= deadline:  # no joint state ticked for the watchdog's time
                self._tick_safely()


def _print_error(exc: Exception) -> None:
    traceback.print_exception(exc, file=sys.stderr)


__all__ = ["MAX_WAIT", "SWITCH_INTERVAL", "ControlLoop", "shorten_switch_interval"]
