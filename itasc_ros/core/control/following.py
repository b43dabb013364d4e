"""Following: how much of each task the commands deliver, and a report when it stays short.

A solve may give a task less than it asks for: a joint on the braking curve before its
position limit, the velocity or motion limits, damping near a singularity, a collision row at
its bound. For a moment that is the limits doing their job (a start from rest, a step); when it
lasts, the task is not being followed and whoever runs the robot must be told, with the task,
how much of it is followed and why. :class:`Following` keeps, per task, the fraction of its
asked velocity the last command gave (:meth:`~itasc_ros.core.solve.Scene.following`), how long
it has stayed below :data:`FOLLOWED` and the total time it spent there; :attr:`report` is the
sentence the node's diagnostics, status and log carry while one has stayed below for
:data:`REPORT_AFTER` seconds or more.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numba import njit
from numpy.typing import NDArray

Array = NDArray[np.float64]

FOLLOWED = 0.95
"""A task whose command gives at least this fraction of its asked velocity is followed [-]."""

REPORT_AFTER = 0.25
"""A task not followed for this long in a row is reported [s]."""

REPORT_PERIOD = 0.5
"""A report's text (its figures and causes) is renewed at most this often [s]."""


@njit(cache=True)
def judge_tasks(fraction, since, short_time, now, dt):  # pragma: no cover - compiled
    """One tick's judgement of each task's ``fraction`` (k,) at time ``now`` [s].

    A task below :data:`FOLLOWED` goes short at ``now`` (``since`` (k,), NaN while followed)
    and adds ``dt`` [s] to its ``short_time`` (k,); one followed again (or not a task: NaN) is
    no longer short.

    Returns:
        The task short the longest for at least :data:`REPORT_AFTER` (-1: none), and for how
        long [s].
    """
    worst = -1
    longest = 0.0
    for i in range(fraction.shape[0]):
        f = fraction[i]
        if math.isnan(f) or f >= FOLLOWED:
            since[i] = math.nan
            continue
        if math.isnan(since[i]):
            since[i] = now
        short_time[i] += dt
        held = now - since[i]
        if held >= REPORT_AFTER and held >= longest:
            worst, longest = i, held
    return worst, longest


def warm_up() -> None:
    """Compile (or load) :func:`judge_tasks` now: a first tick must not wait for it."""
    judge_tasks(np.zeros(1), np.zeros(1), np.zeros(1), 0.0, 0.0)


class Following:
    """Per task: the fraction of its asked velocity followed, and since when it has been short.

    Args:
        names: (k,) the tasks' (constraints') names, in the scene's result order.

    Attributes:
        names: the tasks' names.
        tasks: (3, k) the packed rows below, in this order (a compiled call takes them whole).
        fraction: (k,) the last tick's fractions (NaN: not a task, or asking for nothing).
        since: (k,) when each task went short [s] (NaN: it is not).
        short_time: (k,) the total time each task spent below :data:`FOLLOWED` [s].
        report: '' while every task is followed (or short for less than
            :data:`REPORT_AFTER`), else ``task 'ee' followed at 12 % for 1.30 s: panda_joint1 at
            its upper limit`` (the task short the longest; its cause as the solve saw it).
    """

    def __init__(self, names: Sequence[str]) -> None:
        k = len(names)
        self.source = names  # the sequence given (a scene's result's, to see it replaced)
        self.names = list(names)
        self.tasks = np.full((3, k), math.nan)
        self.fraction, self.since, self.short_time = self.tasks
        self.short_time[:] = 0.0
        self._due = -math.inf  # when the report's text is renewed next [s]
        self.report = ""

    def update(
        self, now: float, dt: float, causes: Callable[[Array], list[str]], qdot: Array
    ) -> None:
        """Judge this tick's :attr:`fraction` (already filled) at time ``now`` [s].

        Args:
            now: the tick's time [s].
            dt: the time since the last tick [s] (added to a short task's :attr:`short_time`).
            causes: what held the command ``qdot`` back, in words (called only when a report's
                text is renewed: at most every :data:`REPORT_PERIOD`).
            qdot: (n,) the tick's command [rad/s or m/s].
        """
        worst, longest = judge_tasks(self.fraction, self.since, self.short_time, now, dt)
        self.report_on(worst, longest, now, causes, qdot)

    def report_on(
        self,
        worst: int,
        longest: float,
        now: float,
        causes: Callable[[Array], list[str]],
        qdot: Array,
    ) -> None:
        """The rest of :meth:`update` once :func:`judge_tasks` judged the tick.

        For a caller whose own compiled call judged it; ``worst``, ``longest``: what
        :func:`judge_tasks` returned; the other arguments as :meth:`update`'s.
        """
        if worst < 0:
            self.report = ""
            self._due = -math.inf
            return
        if self.report and now < self._due:
            return
        self._due = now + REPORT_PERIOD
        why = causes(qdot)
        pct = 100.0 * max(self.fraction[worst], 0.0)
        self.report = (
            f"task {self.names[worst]!r} followed at {pct:.0f} % for {longest:.2f} s: "
            + ("; ".join(why) if why else "cause not identified")
        )

    def idle(self) -> None:
        """No command this tick (not active): nothing is short, nothing reported."""
        self.fraction[:] = math.nan
        self.since[:] = math.nan
        self._due = -math.inf
        self.report = ""

    def least(self) -> float:
        """The smallest fraction of the last tick (NaN when no task was judged)."""
        f = self.fraction[~np.isnan(self.fraction)]
        return float(f.min()) if f.size else math.nan

    def fractions(self) -> dict[str, float]:
        """The last tick's fraction of each task that was judged (name -> fraction)."""
        pairs = zip(self.names, self.fraction, strict=True)
        return {n: float(f) for n, f in pairs if not math.isnan(f)}


__all__ = ["FOLLOWED", "REPORT_AFTER", "REPORT_PERIOD", "Following", "judge_tasks"]
