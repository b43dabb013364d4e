"""PoseDemand: what a pose task asks for: its feedback clamped, its change per tick limited.

The feedback ``K (y_d - y)`` of a far target asks for a speed the joints cannot give and, near
a singularity or an unreachable target, for joint velocities that swing from one limit to the
other: its norm is kept at most a linear speed [m/s] (position rows) and an angular one
[rad/s] (orientation rows), direction kept, never below the target's own twist (the feedback
can always pull back against what is fed forward); the feed-forward is not clamped.

With joint acceleration limits, a pose task (``Constraint.pose_feedback``) whose demanded
velocity ``y'_d`` (feedback and feed-forward) is far from what the joints can reach in one
tick is met only by saturating joints at their acceleration bounds, and which joints saturate
can flip from one tick to the next: the arm chatters at the limits (seen stretched toward an
unreachable target). So at each solve the demand differs from ``A u`` (what the last
published command ``u`` gives the task at this tick's configuration) by at most
``linear x period`` [m/s] over its position rows and ``angular x period`` [rad/s] over its
orientation rows, direction kept, beyond the change of the target's twist since the last
solve (the target's own acceleration passes whole, fed forward or followed by the feedback):
a Cartesian acceleration limit of the task's feedback. The feedback's speed clamp then also
keeps it below the braking curve ``sqrt(acc |e|)`` of the pose error ``e``
(:attr:`PoseDemand.braking`), so that it slows down in time: a far target is approached at
these accelerations and reached without overshoot. ROS-free.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..constraints._features import clamp_pose_feedback, limit_pose_demand_seen
from ..errors import SolverError

Array = NDArray[np.float64]


class PoseDemand:
    """The demand limit of a scene's pose tasks (off until :meth:`set`).

    Args:
        n: number of joints of the scene.
        store: (12,) where the values go for the compiled solve (the scene's workspace:
            :data:`~itasc_ros.core.solve.workspace.DEMAND_SIZE`): speeds, braking, steps (2
            each), then the work array :attr:`dtw` (6,); None: an array of its own.

    Attributes:
        clamps: a pose task's feedback is clamped (a speed or a braking curve is set).
        limits: the limit is on: a last command to read, and an acceleration set. The scene's
            solve then limits each pose task's right-hand side in the same compiled call that
            makes it (:func:`task_rhs`, with
            :attr:`last_command`, :attr:`steps` and the work array :attr:`dtw`).
    """

    def __init__(self, n: int, store: Array | None = None) -> None:
        self.n = n
        self.values = np.zeros(12) if store is None else store
        self.last_command: Array | None = None  # (n,) read at each solve
        self.clamps = False
        self.limits = False
        self._speeds = self._steps = self._braking = (math.inf, math.inf)
        self.period = 0.0  # [s] the nominal control period
        self.dtw = self.values[6:12]  # (6,) work: a target twist's change since the last solve
        self.speeds = (math.inf, math.inf)  # [m/s], [rad/s] of the feedback's clamp
        self.steps = (math.inf, math.inf)  # [m/s], [rad/s] per tick
        self.braking = (math.inf, math.inf)  # [m/s^2], [rad/s^2] of the feedback's clamp

    @property
    def speeds(self) -> tuple[float, float]:
        """(linear [m/s], angular [rad/s]) the feedback's speed clamp (inf: none)."""
        return self._speeds

    @speeds.setter
    def speeds(self, value: tuple[float, float]) -> None:
        self._speeds = value
        self._refresh()
        self.values[0:2] = value

    @property
    def braking(self) -> tuple[float, float]:
        """(linear [m/s^2], angular [rad/s^2]) the braking curve's accelerations (inf: none)."""
        return self._braking

    @braking.setter
    def braking(self, value: tuple[float, float]) -> None:
        self._braking = value
        self._refresh()
        self.values[2:4] = value

    @property
    def steps(self) -> tuple[float, float]:
        """(linear [m/s], angular [rad/s]) the demand's largest change per tick (inf: none)."""
        return self._steps

    @steps.setter
    def steps(self, value: tuple[float, float]) -> None:
        self._steps = value
        self._refresh()
        self.values[4:6] = value

    def _refresh(self) -> None:
        """:attr:`clamps` and :attr:`limits` from the values just set (read at each solve)."""
        self.clamps = min(self.speeds + self.braking) < math.inf
        lin, ang = self.steps
        self.limits = self.last_command is not None and (lin < math.inf or ang < math.inf)

    def set_speeds(self, linear: float, angular: float) -> None:
        """The feedback's speed clamp [m/s], [rad/s] (0 or inf: none).

        Raises:
            SolverError: a negative speed.
        """
        for name, v in (("linear", linear), ("angular", angular)):
            if not (v >= 0.0):
                raise SolverError(f"the {name} feedback limit must be >= 0, got {v!r}")
        self.speeds = (
            float(linear) if linear > 0.0 else math.inf,
            float(angular) if angular > 0.0 else math.inf,
        )

    def set(
        self, linear: float, angular: float, last_command: Array | None, period: float
    ) -> None:
        """Switch the limit on (see the module docstring); 0 for both: off.

        Args:
            linear: Cartesian acceleration [m/s^2] (0: no limit).
            angular: angular acceleration [rad/s^2] (0: no limit).
            last_command: (n,) the last published command [rad/s], an array its owner updates
                in place, read at each solve (None: off).
            period: the nominal control period [s].

        Raises:
            SolverError: a negative or non-finite value, or a command of the wrong length.
        """
        for name, v in (("linear", linear), ("angular", angular), ("period", period)):
            if not (v >= 0.0 and math.isfinite(v)):
                raise SolverError(f"the {name} demand limit must be finite and >= 0, got {v!r}")
        if last_command is not None and last_command.shape != (self.n,):
            raise SolverError(
                f"the last command has shape {last_command.shape}; expected ({self.n},)"
            )
        self.last_command = last_command
        self.period = period
        self.braking = (
            linear if linear > 0.0 else math.inf,
            angular if angular > 0.0 else math.inf,
        )
        self.steps = (
            linear * period if linear > 0.0 else math.inf,
            angular * period if angular > 0.0 else math.inf,
        )

    def set_accelerations(self, linear: float, angular: float) -> None:
        """New accelerations for a limit that is on (:meth:`set`); nothing when it is off.

        Raises:
            SolverError: as :meth:`set`.
        """
        if self.last_command is not None:
            self.set(linear, angular, self.last_command, self.period)


@njit(cache=True, nogil=True)
def task_rhs(
    b,
    twist,
    ydot,
    rhs,
    asked,
    ff,
    fed,
    has_target,
    wy,
    clamp,
    orient,
    speeds,
    braking,
    gain,
    limit,
    a,
    u,
    seen,
    dtw,
    steps,
):  # pragma: no cover - compiled
    """A task's right-hand side ``rhs = y'_d + B Xu'`` (m,) after its update, in place.

    With ``clamp``, first the pose feedback's clamp (:func:`~itasc_ros.core.constraints.
    _features.clamp_pose_feedback`; ``orient`` (m,) its rotation rows, ``speeds`` and
    ``braking`` (linear, angular) pairs). Without a target the rows' weights ``wy`` are zeroed;
    without feed-forward (``fed`` False) ``rhs`` is ``y'_d`` and ``ff`` (m,) is left as it is.
    ``asked`` (m,): ``rhs`` as it is then, the task's asked velocity.
    With ``limit``, last the pose demand's limit (:func:`~itasc_ros.core.constraints._features.
    limit_pose_demand_seen`: ``rhs`` within ``steps`` (linear, angular) [per tick] of what the
    last command ``u`` (n,) gives the rows ``a`` (m, n), beyond the change of ``twist`` since
    ``seen`` (6,), which then becomes ``twist``; ``dtw`` (6,) work), as
    :class:`~itasc_ros.core.solve.pose_demand.PoseDemand` sets it. A scene calls it for each
    of its tasks in one compiled call (:func:`~itasc_ros.core.solve.workspace.scene_rows`).
    """
    if clamp:
        clamp_pose_feedback(
            ydot, orient, speeds[0], speeds[1], twist, gain, braking[0], braking[1], fed
        )
    if not has_target:
        wy[:] = 0.0
    if fed:
        for r in range(ydot.shape[0]):
            s = 0.0
            for t in range(6):
                s += b[r, t] * twist[t]
            ff[r] = s
            rhs[r] = ydot[r] + s
    else:
        rhs[:] = ydot
    asked[:] = rhs
    if limit:
        limit_pose_demand_seen(rhs, a, u, b, twist, seen, dtw, orient, steps[0], steps[1])


__all__ = ["PoseDemand", "task_rhs"]
