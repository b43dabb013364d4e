"""Orocos KDL's position IK, ``ChainIkSolverPos_NR_JL``, with a time budget (``itasc-bench ik``).

The peer of TRAC-IK and of the solver in :mod:`itasc_bench.ik`.
"""

from __future__ import annotations

import time

import numpy as np

from .contract import FloatArray, check_q
from .kdl_chain import KdlChainPeer
from .urdf_chain import solver_limits, urdf_chain


class KdlNrJlPeer(KdlChainPeer):
    """Orocos KDL's position IK ``ChainIkSolverPos_NR_JL`` with a time budget.

    As TRAC-IK's own benchmark runs it: Newton-Raphson on ``ChainIkSolverVel_pinv`` with the
    joints clipped into their limits, called repeatedly from its last result until it reports
    success or the budget is spent (``iterations_per_call`` iterations per call, so that the
    clock is read between calls; no random restarts).

    Attributes:
        joint_names: Movable chain joints, root to tip.
        n: Number of chain joints.
        lower: Lower joint limits [rad | m], shape (n,).
        upper: Upper joint limits [rad | m], shape (n,).
        timeout: Time budget per IK call [s].
        eps: Convergence tolerance of every component of KDL's pose difference.
    """

    def __init__(
        self,
        urdf_xml: str,
        root: str,
        tip: str,
        *,
        timeout: float = 0.005,
        eps: float = 1e-5,
        iterations_per_call: int = 10,
    ) -> None:
        """Build the chain and the solvers.

        Args:
            urdf_xml: URDF document.
            root: Base link of the chain.
            tip: Tip link of the chain.
            timeout: Time budget per IK call [s] (TRAC-IK protocol: 5 ms).
            eps: Convergence tolerance (TRAC-IK protocol: 1e-5).
            iterations_per_call: Newton iterations of one ``CartToJnt`` call.

        Raises:
            PeerUnavailable: If PyKDL is not importable.
        """
        super().__init__(urdf_xml, root, tip)
        kdl = self.kdl
        movable = [j for j in urdf_chain(urdf_xml, root, tip) if j.movable]
        self.lower, self.upper = solver_limits(movable)
        self.timeout = float(timeout)
        self.eps = float(eps)
        q_min, q_max = kdl.JntArray(self.n), kdl.JntArray(self.n)
        for i in range(self.n):
            q_min[i], q_max[i] = float(self.lower[i]), float(self.upper[i])
        self._fk = kdl.ChainFkSolverPos_recursive(self.chain)
        self._vel = kdl.ChainIkSolverVel_pinv(self.chain)
        self._solver = kdl.ChainIkSolverPos_NR_JL(
            self.chain, q_min, q_max, self._fk, self._vel, int(iterations_per_call), self.eps
        )
        self._q_in = kdl.JntArray(self.n)
        self._q_out = kdl.JntArray(self.n)

    def ik(self, seed: FloatArray, pose: FloatArray) -> FloatArray | None:
        """Solve the position IK within the time budget.

        Args:
            seed: Initial joint positions [rad | m], shape (n,).
            pose: Target tip pose in the root frame, shape (4, 4).

        Returns:
            Joint positions, shape (n,), or None if no solution was found in time.
        """
        kdl = self.kdl
        deadline = time.perf_counter() + self.timeout
        seed = check_q(seed, self.n)
        r = pose[:3, :3].ravel().tolist()
        p = pose[:3, 3].tolist()
        target = kdl.Frame(kdl.Rotation(*r), kdl.Vector(p[0], p[1], p[2]))
        q_in, q_out = self._q_in, self._q_out
        for i, v in enumerate(seed.tolist()):
            q_in[i] = v
        while True:
            rc = self._solver.CartToJnt(q_in, target, q_out)
            if rc >= 0:
                return np.array([q_out[i] for i in range(self.n)])
            if time.perf_counter() >= deadline:
                return None
            q_in, q_out = q_out, q_in  # go on from the last iterate


__all__ = ["KdlNrJlPeer"]
