"""pink on an arm among obstacles: a hand pose kept clear of the collision pairs by a barrier.

The peer of ``itasc-bench ik``'s ``panda_obstacles`` row (:mod:`~itasc_bench.ik_obstacles`):
pink's differential IK with a ``FrameTask`` on the hand and a ``SelfCollisionBarrier`` on every
pair of the collision constraint (Pinocchio + coal's geometry of the same pairs and obstacles,
:func:`~itasc_bench.peers.pinocchio_collision.pinocchio_reference`), its configuration
limits in the QP (``daqp``), integrated until the pose is within the tolerance or the budget
ends. The barrier keeps each pair's distance above ``d_min`` (the constraint's margin) as long
as the start is clear of it.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .contract import PeerUnavailable
from .pinocchio_collision import PinocchioReference

Array = NDArray[np.float64]


def import_pink() -> Any:
    """The ``pink`` module, with ``daqp`` as its QP solver.

    Raises:
        PeerUnavailable: pink (``pin-pink``) or ``daqp`` is not installed.
    """
    try:
        import pink
        import qpsolvers
    except ImportError as exc:
        raise PeerUnavailable(
            "pink is not importable: install it with 'pip install pin-pink' "
            "(or the 'bench' extra of itasc_ros)"
        ) from exc
    if "daqp" not in qpsolvers.available_solvers:
        raise PeerUnavailable("pink's QP solver daqp is not installed: pip install daqp")
    return pink


class PinkArm:
    """pink placing one frame on a pose with the reference's pairs kept ``margin`` apart.

    Args:
        ref: Pinocchio's model and geometry with the collision constraint's pairs.
        frame: the link placed on the target.
        margin: the pairs' smallest distance (the barrier's ``d_min``) [m].
        eps: the largest pose error component at a solution [m or rad].
        timeout: the time budget [s].
        dt: the integration step of one differential IK [s] (task gain 1).
        lm_damping: the frame task's Levenberg-Marquardt damping.

    Raises:
        PeerUnavailable: pink or daqp is not installed, or no such frame.
    """

    def __init__(
        self,
        ref: PinocchioReference,
        frame: str,
        margin: float,
        eps: float,
        timeout: float,
        dt: float = 1.0,
        lm_damping: float = 1e-3,
    ) -> None:
        self.pink = import_pink()
        from pink.barriers import SelfCollisionBarrier
        from pink.tasks import FrameTask

        if not ref.model.existFrame(frame):
            raise PeerUnavailable(f"Pinocchio's model has no frame {frame!r}")
        self.ref, self.frame = ref, frame
        self.task = FrameTask(
            frame, position_cost=1.0, orientation_cost=1.0, lm_damping=lm_damping
        )
        n_pairs = len(ref.geom_model.collisionPairs)
        # no safe-displacement term: pink's default (1.0) pulls each step back toward where the
        # arm is, 1 of 15 targets within 50 ms instead of 11-14 (15 targets, dt 1 or 0.5)
        self.barrier = SelfCollisionBarrier(n_pairs, safe_displacement_gain=0.0, d_min=margin)
        self.eps, self.timeout, self.dt = eps, timeout, dt
        self.lower, self.upper = ref.model.lowerPositionLimit, ref.model.upperPositionLimit

    def solve(self, seed: Array, target: Array) -> Array | None:
        """The tree's joint positions (n,) placing the frame on ``target`` (4, 4), or None."""
        import pinocchio as pin

        ref, pink = self.ref, self.pink
        goal = pin.SE3(target[:3, :3].copy(), target[:3, 3].copy())
        self.task.set_target(goal)
        conf = pink.Configuration(
            ref.model, ref.data, ref.q_of(seed),
            collision_model=ref.geom_model, collision_data=ref.geom_data,
        )  # fmt: skip
        deadline = time.perf_counter() + self.timeout
        while time.perf_counter() < deadline:
            e = pin.log6(conf.get_transform_frame_to_world(self.frame).actInv(goal)).vector
            if np.all(np.abs(e) <= self.eps):
                return np.asarray(conf.q)[ref.q_index].copy()
            try:
                v = pink.solve_ik(
                    conf, [self.task], self.dt, solver="daqp", barriers=[self.barrier],
                    safety_break=False,
                )  # fmt: skip
            except pink.exceptions.NoSolutionFound:  # an infeasible QP (a start in collision)
                return None
            q = pin.integrate(ref.model, conf.q, v * self.dt)
            conf.update(np.clip(q, self.lower, self.upper))
        return None


__all__ = ["PinkArm", "import_pink"]
