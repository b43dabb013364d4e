"""The simulated joints: velocity commands integrated within the URDF limits, without ROS.

:class:`SimulatedJoints` is what ``itasc_sim_robot`` simulates: a velocity command in force
(clipped to the velocity limits), explicit-Euler integration over the measured time step, and
positions stopped at the position limits. The demo and the tests use it offline. ROS-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from itasc_ros.core import ConfigurationError, ItascError, KinematicTree
from itasc_ros.core.kinematics.home_poses import home_pose


class CommandRejectedError(ItascError, ValueError):
    """A velocity command that the simulated controller drops (wrong length, NaN/Inf, names)."""


@dataclass
class SimStats:
    """Counters of a :class:`SimulatedJoints` and its node (all since start)."""

    commands_received: int = 0  # command messages that arrived (accepted or not)
    commands_rejected: int = 0  # dropped: wrong length, non-finite, unknown joint names
    commands_applied: int = 0  # accepted commands that took effect
    velocity_clamps: int = 0  # joint components of applied commands clipped to the limit
    position_clamps: int = 0  # joint-steps stopped at a position limit
    command_timeouts: int = 0  # times the command was zeroed after command_timeout
    steps: int = 0  # integration steps


class Joints(Protocol):
    """What the simulator's node drives: :class:`SimulatedJoints` or the physics robot."""

    names: list[str]
    index: dict[str, int]
    stats: SimStats

    @property
    def n(self) -> int:
        """Number of commanded joints."""

    @property
    def q(self) -> np.ndarray:
        """(n,) the positions [rad or m]."""

    @property
    def velocity(self) -> np.ndarray:
        """(n,) the velocities [rad/s or m/s]."""

    def validate(self, qdot: Sequence[float] | np.ndarray) -> np.ndarray:
        """(n,) ``qdot`` checked (raises :class:`CommandRejectedError`)."""

    def apply(self, qdot: Sequence[float] | np.ndarray) -> None:
        """Make ``qdot`` (n,) the command in force."""

    def stop(self) -> None:
        """Command zero velocity."""

    def advance(self, dt: float) -> None:
        """Move on by ``dt`` [s] with the command in force."""

    def step(self, dt: float) -> np.ndarray:
        """Move on by ``dt`` [s]; (n,) the new positions."""


class SimulatedJoints:
    """Velocity-controlled joints integrated within URDF position and velocity limits.

    Not thread-safe; the node serialises access with a lock.

    Args:
        tree: the robot; limits come from its URDF.
        joints: simulated joints in command order; ``None`` or empty = ``tree.joint_names``.
        q0: (n,) initial positions [rad or m] in ``joints`` order; ``None`` = the robot's home
            pose (:data:`~itasc_ros.core.kinematics.home_poses.HOME_POSES`) or the tree's
            neutral pose.

    Raises:
        UnknownJointError: a name in ``joints`` is not an active joint of the tree.
        ConfigurationError: repeated joints, or ``q0`` of the wrong length, non-finite or
            outside the position limits.
    """

    def __init__(
        self,
        tree: KinematicTree,
        joints: Sequence[str] | None = None,
        q0: Sequence[float] | np.ndarray | None = None,
    ) -> None:
        names = list(joints) if joints else list(tree.joint_names)
        if len(set(names)) != len(names):
            raise ConfigurationError(f"joint names repeat in {names}")
        idx = np.array([tree.joint_index(n) for n in names], dtype=np.int64)  # raises Unknown...
        self.names: list[str] = names
        self.index: dict[str, int] = {n: i for i, n in enumerate(names)}
        self.lower = tree.lower[idx]  # (n,)
        self.upper = tree.upper[idx]  # (n,)
        self.velocity_limits = tree.velocity_limits[idx]  # (n,)
        n = len(names)
        if q0 is None:
            q = home_pose(tree)[idx]
        else:
            q = np.array(q0, dtype=float).reshape(-1)
            if q.shape != (n,):
                raise ConfigurationError(
                    f"initial positions have {q.size} values; expected {n} for joints {names}"
                )
            if not np.all(np.isfinite(q)):
                raise ConfigurationError(f"initial positions must be finite, got {q.tolist()}")
            outside = [
                f"{names[i]}={q[i]:g} not in [{self.lower[i]:g}, {self.upper[i]:g}]"
                for i in range(n)
                if not self.lower[i] <= q[i] <= self.upper[i]
            ]
            if outside:
                raise ConfigurationError(
                    "initial positions outside the URDF limits: " + ", ".join(outside)
                )
        self._q = q.copy()  # (n,) [rad or m]
        self._command = np.zeros(n)  # (n,) [rad/s or m/s] within velocity limits
        self._velocity = np.zeros(n)  # (n,) effective velocity of the last step
        self._clipped = np.zeros(n, dtype=bool)
        self.stats = SimStats()

    @property
    def n(self) -> int:
        """Number of simulated joints."""
        return len(self.names)

    @property
    def q(self) -> np.ndarray:
        """(n,) a copy of the current positions [rad or m]."""
        return self._q.copy()

    @property
    def velocity(self) -> np.ndarray:
        """(n,) velocity of the last step [rad/s]: the command, zero where a limit stopped it."""
        return self._velocity.copy()

    @property
    def command(self) -> np.ndarray:
        """(n,) the velocity command in force [rad/s], already within the velocity limits."""
        return self._command.copy()

    def validate(self, qdot: Sequence[float] | np.ndarray) -> np.ndarray:
        """(n,) ``qdot`` as a float array, or raise like ros2_control would drop it.

        Raises:
            CommandRejectedError: wrong length or a non-finite value.
        """
        v = np.asarray(qdot, dtype=float).reshape(-1)
        if v.shape != (self.n,):
            raise CommandRejectedError(
                f"command has {v.size} values; expected {self.n} for joints {self.names}"
            )
        if not np.all(np.isfinite(v)):
            raise CommandRejectedError(f"command has non-finite values: {v.tolist()}")
        return v

    def apply(self, qdot: Sequence[float] | np.ndarray) -> None:
        """Make ``qdot`` (n,) [rad/s] the command in force, clipped to the velocity limits.

        Raises:
            CommandRejectedError: wrong length or non-finite; the previous command stays.
        """
        v = self.validate(qdot)
        clipped = np.clip(v, -self.velocity_limits, self.velocity_limits)
        self.stats.velocity_clamps += int(np.count_nonzero(clipped != v))
        self.stats.commands_applied += 1
        self._command[:] = clipped

    def stop(self) -> None:
        """Command zero velocity (as after a command timeout)."""
        self._command[:] = 0.0

    def advance(self, dt: float) -> None:
        """Integrate the command over ``dt`` [s] within a step (a command changes after it).

        Raises:
            ConfigurationError: ``dt`` negative or non-finite.
        """
        if not (math.isfinite(dt) and dt >= 0.0):
            raise ConfigurationError(f"time step must be finite and >= 0 s, got {dt}")
        q_new = self._q + self._command * dt
        np.clip(q_new, self.lower, self.upper, out=self._q)
        np.not_equal(q_new, self._q, out=self._clipped)
        self.stats.position_clamps += int(np.count_nonzero(self._clipped))

    def step(self, dt: float) -> np.ndarray:
        """Integrate the command over ``dt`` [s] (explicit Euler), clamp into position limits.

        Returns:
            (n,) a copy of the new positions [rad or m].

        Raises:
            ConfigurationError: ``dt`` negative or non-finite.
        """
        self.advance(dt)
        self.stats.steps += 1
        np.copyto(self._velocity, self._command)
        self._velocity[self._clipped] = 0.0
        return self._q.copy()


__all__ = ["CommandRejectedError", "Joints", "SimStats", "SimulatedJoints"]
