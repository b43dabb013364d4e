"""The robots of one solve: whose joint states are stale, and which robots stop with them.

Several robots (``robots``) are solved as one tree whose joints are ``<robot>_<joint>``. Each
robot's joint states arrive on their own: :class:`RobotGroups` keeps each one's reception
time and judges each one's freshness once a tick. A robot whose joint states are older than
``input_timeout`` is stopped, and so is every robot a constraint links to it, and every robot
linked to those, and so on: their joints are held on the open-loop stop ramp of their last
command (the same ramp as a whole stop), while the other robots go on being solved.

A constraint links the robots whose joints move its rows: the non-zero columns of its rows of
``A`` at this tick's joint positions. A loop closure between two hands links the two arms; a
pose task of one hand links nothing; a collision pair between two robots links them while the
pair is within the distance where its rows act (a far pair does not: the moving robot avoids
the stopped one where it was last measured, and the stop ramp moves that one at most its
braking distance).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InputError, ItascError
from ..kinematics.robots import SEPARATOR
from .streams import fresh

if TYPE_CHECKING:
    from ..solve.scene import Scene
    from .model_fit import FittedModel

Array = NDArray[np.float64]


def robot_of(name: str, robots: Sequence[str]) -> int:
    """Index of the robot whose prefix ``<robot>_`` ``name`` carries (the longest), or -1."""
    best, length = -1, -1
    for i, r in enumerate(robots):
        if name.startswith(r + SEPARATOR) and len(r) > length:
            best, length = i, len(r)
    return best


class RobotGroups:
    """Each robot's commanded joints, its joint states' reception time and freshness.

    Args:
        robots: the robots' names (``robots``; empty: one robot, nothing to judge).
        joints: the commanded joints (n,), in command order.

    Attributes:
        names: the robots' names.
        stamp: (g,) reception time [s] of each robot's last joint state (-inf before it).
        stale: (g,) this tick's look: the robot's joint states are older than the timeout.
        held: (n,) the joints held on the stop ramp this tick (see :meth:`hold`).
    """

    def __init__(self, robots: Sequence[str], joints: Sequence[str]) -> None:
        self.names = list(robots)
        self._of_joint = np.array([robot_of(j, self.names) for j in joints], dtype=np.int64)
        self._columns = [np.flatnonzero(self._of_joint == g) for g in range(len(self.names))]
        self.stamp = np.full(len(self.names), -math.inf)
        self.stale = np.zeros(len(self.names), dtype=bool)
        self.held = np.zeros(len(joints), dtype=bool)
        self._stopped = np.zeros(len(self.names), dtype=bool)
        self.any_stale = False

    @property
    def size(self) -> int:
        """How many robots (0: one robot, not grouped)."""
        return len(self.names)

    def check(
        self,
        received: float,
        robot_received: ArrayLike | None,
        reject: Callable[[str], InputError],
    ) -> Array | None:
        """Each robot's reception time of a joint state received at ``received`` [s].

        Args:
            received: the state's reception time [s] (each robot's, when not given).
            robot_received: (g,) each robot's own reception time [s], or None.
            reject: reason -> the :class:`InputError` to raise (the caller counts them).

        Returns:
            The (g,) times to :meth:`accept`, or None without robots.

        Raises:
            InputError: not one finite time per robot, or one after ``received``.
        """
        if not self.names:
            return None
        if robot_received is None:
            return np.full(len(self.names), float(received))
        t = np.asarray(robot_received, dtype=float)
        if t.shape != (len(self.names),) or not np.all(np.isfinite(t)):
            raise reject(
                f"joint state: robot_received must be one finite reception time per robot "
                f"{self.names}, got {t.tolist()}"
            )
        if np.any(t > received):
            raise reject(
                f"joint state: a robot's reception time {t.max()} is after the state's "
                f"({received})"
            )
        return t

    def accept(self, times: Array | None) -> None:
        """Keep each robot's reception time ``times`` (g,) (checked by :meth:`check`)."""
        if times is not None:
            self.stamp[:] = times

    def joint_stamps(self, out: Array) -> None:
        """Each commanded joint's reception time: its robot's :attr:`stamp` into ``out`` (n,)."""
        for g, cols in enumerate(self._columns):
            out[cols] = self.stamp[g]

    def look(self, now: float, timeout: float) -> bool:
        """This tick's look at each robot: stale when its joint states are older than ``timeout``.

        Returns:
            True when some robot is stale (:attr:`any_stale`).
        """
        any_stale = False
        for g in range(self.stamp.shape[0]):
            s = not fresh(now - self.stamp[g], timeout)
            self.stale[g] = s
            any_stale = any_stale or s
        self.any_stale = any_stale
        return any_stale

    def hold(self, a: Array, rows: Sequence[slice]) -> list[str]:
        """The robots to stop: the stale ones and those linked to them through ``rows`` of ``a``.

        Args:
            a: (m, n) this tick's task Jacobian ``A``.
            rows: each enabled constraint's rows of ``a``.

        Returns:
            The stopped robots' names; :attr:`held` marks their joints.
        """
        stopped = self._stopped
        stopped[:] = self.stale
        links = [self._linked(a[r]) for r in rows]
        grew = True
        while grew:
            grew = False
            for linked in links:
                if np.any(stopped[linked]) and not np.all(stopped[linked]):
                    stopped[linked] = True
                    grew = True
        self.held[:] = False
        for g in np.flatnonzero(stopped):
            self.held[self._columns[g]] = True
        return [self.names[g] for g in np.flatnonzero(stopped)]

    def _linked(self, a_rows: Array) -> NDArray[np.bool_]:
        """(g,) the robots whose joints move these rows (a non-zero column)."""
        moving = np.any(a_rows != 0.0, axis=0)
        out = np.zeros(len(self.names), dtype=bool)
        for g, cols in enumerate(self._columns):
            out[g] = bool(np.any(moving[cols]))
        return out

    def release(self) -> None:
        """No joint held (every robot fresh again)."""
        self.held[:] = False
        self.any_stale = False


def hold_stopped_robots(
    model: FittedModel, robots: RobotGroups, q: Array, ramp: Array, now: float
) -> tuple[str, tuple[str, ...]] | None:
    """Hold the stale robots of ``robots``, and the robots linked to them, on their stop ramp.

    Their joints get this tick's step of the open-loop ramp of their last command (``ramp``
    (n,), work), every joint slowed by one common fraction (the robots linked by a constraint
    keep the link through the stop; a zero without motion limits) as a box ``lo = hi``, the
    scene's last limit (``model.held_limit``); the other robots are solved as before. ``q``
    (n,): the joint positions; ``now``: the tick's time [s].

    Returns:
        Why, for the tick's reason, and the robots held; None when the rows could not be
        computed (the solve then fails, and the whole command ramps down).
    """
    scene = model.scene
    try:
        a = scene.matrices(q)["A"]
    except ItascError:
        return None
    rows = [scene.rows(c.name) for c in model.constraints if c.enabled]
    stopped = robots.hold(a, rows)
    # in step (one common fraction): robots held together keep their link through the stop
    model.limiter.stop_ramp(model.dt, ramp, sync=True)
    model.held_limit.hold(robots.held, ramp)
    timeout = model.config.input_timeout
    stale = [
        f"{r} ({now - robots.stamp[g]:.3f} s old)"
        for g, r in enumerate(robots.names)
        if robots.stale[g]
    ]
    linked = [r for r in stopped if not robots.stale[robots.names.index(r)]]
    it = "it" if len(stale) == 1 else "they"
    why = (
        f"joint states of robot {', '.join(stale)} stale (input_timeout {timeout} s): "
        + (f"{it} and {', '.join(linked)} (linked by constraints)" if linked else it)
        + " decelerating to zero within the joint limits; the others go on"
    )
    return why, tuple(stopped)


def held_causes(scene: Scene, held: tuple[str, ...]) -> Callable[[Array], list[str]]:
    """The causes of a shortfall of ``scene``'s solve while the robots ``held`` stop.

    The held robots first, then the limits of the others' joints (a held robot's joints are
    on their stop ramp, not at a limit of their own).
    """
    prefixes = tuple(r + SEPARATOR for r in held)
    first = f"robot {', '.join(held)} held (stopping: joint states stale)"

    def causes(qdot: Array) -> list[str]:
        rest = [c for c in scene.limiting(qdot) if not c.startswith(prefixes)]
        return [first, *rest]

    return causes


__all__ = ["RobotGroups", "held_causes", "hold_stopped_robots", "robot_of"]
