"""Drake's differential IK: the velocity IK tick with joint and velocity limits in its program.

:class:`DrakePeer` calls ``DoDifferentialInverseKinematics`` once per tick on a
``MultibodyPlant`` parsed from the URDF (the root link welded to the world): Drake computes the
tip's pose and Jacobian, the desired twist (the pose error over the time step), and solves a
program with the joint position limits (reached within one time step) and the velocity limits
as constraints, keeping the twist's direction and scaling its size down as far as the limits
demand. Installed by ``make limit-peers`` (the ``drake`` wheel, in the venv).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from .contract import FloatArray, PeerUnavailable

#: The wheel ``make limit-peers`` installs.
DRAKE_REQUIREMENT = "drake==1.51.1"


def import_pydrake() -> Any:
    """The names the peer takes from ``pydrake``, as one namespace.

    Returns:
        A namespace with ``MultibodyPlant``, ``Parser``, ``RigidTransform``,
        ``DoDifferentialInverseKinematics`` and ``DifferentialInverseKinematicsParameters``.

    Raises:
        PeerUnavailable: If ``pydrake`` is not importable; the message has the install hint.
    """
    try:
        from pydrake.math import RigidTransform
        from pydrake.multibody import inverse_kinematics as ik
        from pydrake.multibody.parsing import Parser
        from pydrake.multibody.plant import MultibodyPlant
    except ImportError as exc:
        raise PeerUnavailable(
            f"Drake is not importable: install it with 'make limit-peers' (pip install "
            f"{DRAKE_REQUIREMENT})"
        ) from exc
    return SimpleNamespace(
        MultibodyPlant=MultibodyPlant,
        Parser=Parser,
        RigidTransform=RigidTransform,
        DoDifferentialInverseKinematics=ik.DoDifferentialInverseKinematics,
        DifferentialInverseKinematicsParameters=ik.DifferentialInverseKinematicsParameters,
    )


class DrakePeer:
    """Drake's ``DoDifferentialInverseKinematics`` on the tip of a URDF, with limits.

    Attributes:
        joint_names: The joints of ``q`` and of the returned velocities, in that order.
        n: Number of joints.
        status: Drake's status of the last tick (``kSolutionFound``, ``kStuck`` or
            ``kNoSolutionFound``), as its name.
    """

    def __init__(
        self,
        urdf_xml: str,
        root: str,
        tip: str,
        joint_names: Sequence[str],
        limits: tuple[FloatArray, FloatArray, FloatArray],
        period: float,
    ) -> None:
        """Parse the URDF into a plant and set the parameters of the differential IK.

        Args:
            urdf_xml: URDF document; all its movable joints must be in ``joint_names``.
            root: The link welded to Drake's world: poses are in its frame.
            tip: The link whose pose the tick steers.
            joint_names: The joints in the order of ``q``, shape (n,).
            limits: ``(lower, upper, velocity)`` in the order of ``joint_names``: position
                limits [rad | m] and velocity limits [rad/s | m/s] (symmetric), shape (n,) each.
            period: The tick's period, Drake's time step [s].

        Raises:
            PeerUnavailable: If ``pydrake`` is not importable.
        """
        drake = import_pydrake()
        self._drake = drake
        plant = drake.MultibodyPlant(0.0)
        drake.Parser(plant).AddModelsFromString(urdf_xml, "urdf")
        if root != "world":
            plant.WeldFrames(plant.world_frame(), plant.GetFrameByName(root))
        plant.Finalize()
        self._plant, self._context = plant, plant.CreateDefaultContext()
        self._frame = plant.GetFrameByName(tip)
        self.joint_names = list(joint_names)
        self.n = len(self.joint_names)
        starts = [plant.GetJointByName(name).position_start() for name in self.joint_names]
        if sorted(starts) != list(range(plant.num_positions())):
            raise ValueError(
                f"joint_names must name each of the plant's {plant.num_positions()} positions "
                f"once, got {self.joint_names}"
            )
        self._order = np.array(starts, dtype=np.intp)  # q[i] is Drake's position order[i]
        self._identity = starts == list(range(self.n))
        self._params = self._parameters(limits, period)
        self._target: Any = drake.RigidTransform()
        self._target_key = b""
        self.status = ""

    def _to_drake(self, values: FloatArray) -> FloatArray:
        """A joint vector in Drake's position order, shape (n,)."""
        if self._identity:
            return values
        out = np.empty(self.n)
        out[self._order] = values
        return out

    def _parameters(self, limits: tuple[FloatArray, FloatArray, FloatArray], period: float) -> Any:
        """``DifferentialInverseKinematicsParameters`` with the time step and the limits."""
        lower, upper, velocity = (self._to_drake(np.asarray(a, dtype=np.float64)) for a in limits)
        params = self._drake.DifferentialInverseKinematicsParameters(self.n, self.n)
        params.set_time_step(float(period))
        params.set_joint_position_limits((lower, upper))
        params.set_joint_velocity_limits((-velocity, velocity))
        return params

    def tick(self, q: FloatArray, target_pose: FloatArray) -> FloatArray:
        """One tick: the joint velocities toward ``target_pose`` from ``q``, within the limits.

        Args:
            q: Joint positions [rad | m] in the order of ``joint_names``, shape (n,).
            target_pose: Target tip pose in the root frame, shape (4, 4).

        Returns:
            Joint velocities [rad/s | m/s] in the order of ``joint_names``, shape (n,); zeros
            when Drake finds no solution (:attr:`status` says so).
        """
        t = np.asarray(target_pose, dtype=np.float64)
        key = t.tobytes()
        if key != self._target_key:  # a new target: convert it once, as a Drake node would
            self._target = self._drake.RigidTransform(t)
            self._target_key = key
        self._plant.SetPositions(self._context, self._to_drake(q))
        result = self._drake.DoDifferentialInverseKinematics(
            self._plant, self._context, self._target, self._frame, self._params
        )
        self.status = result.status.name
        v = result.joint_velocities
        if v is None:
            return np.zeros(self.n)
        return v if self._identity else v[self._order]

    def set_secondary(
        self, *, position_only: bool, centering_gain: float, nominal: FloatArray
    ) -> None:
        """Track the tip's position only (or the whole twist), and center the joints.

        Drake's secondary objective pulls ``q'`` toward ``K (nominal - q)`` in the null space
        of the tracked twist. Applies to the following ticks (:meth:`tick`, :meth:`tick_twist`).

        Args:
            position_only: Drop the angular rows of the twist (Drake's velocity flags).
            centering_gain: ``K`` of the joint centering, the same for every joint [1/s].
            nominal: The joint positions to center on [rad | m], order of ``joint_names``, (n,).
        """
        params = self._params
        params.set_end_effector_velocity_flag(np.array([not position_only] * 3 + [True] * 3))
        params.set_joint_centering_gain(float(centering_gain) * np.eye(self.n))
        params.set_nominal_joint_position(self._to_drake(np.asarray(nominal, dtype=np.float64)))

    def tick_twist(self, q: FloatArray, twist: FloatArray) -> FloatArray:
        """One tick toward a desired twist of the tip, within the limits.

        Args:
            q: Joint positions [rad | m] in the order of ``joint_names``, shape (n,).
            twist: The tip's desired spatial velocity in the world (root) frame, angular then
                linear [rad/s, m/s], shape (6,).

        Returns:
            Joint velocities [rad/s | m/s] in the order of ``joint_names``, shape (n,); zeros
            when Drake finds no solution (:attr:`status` says so).
        """
        self._plant.SetPositions(self._context, self._to_drake(q))
        result = self._drake.DoDifferentialInverseKinematics(
            self._plant,
            self._context,
            np.asarray(twist, dtype=np.float64),
            self._frame,
            self._params,
        )
        self.status = result.status.name
        v = result.joint_velocities
        if v is None:
            return np.zeros(self.n)
        return v if self._identity else v[self._order]


__all__ = ["DRAKE_REQUIREMENT", "DrakePeer", "import_pydrake"]
