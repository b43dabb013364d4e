"""Orocos KDL through PyKDL: the tip's FK and Jacobian, and the velocity IK tick (WDLS).

The kinematics unit (:meth:`KdlPeer.fk_jac`) and the control tick (:meth:`KdlPeer.tick`: FK,
error twist, ``ChainIkSolverVel_wdls``) that ``itasc-bench kinematics`` and ``itasc-bench tick``
time beside the solver's, on a chain built by
:func:`~itasc_bench.peers.kdl_chain.kdl_chain_from_urdf`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .contract import FloatArray, check_q
from .kdl_chain import KdlChainPeer


class KdlPeer(KdlChainPeer):
    """Orocos KDL on one chain, with all KDL objects allocated once.

    Attributes:
        chain: The ``PyKDL.Chain``.
        joint_names: Movable joints in chain order.
        n: Number of movable joints.
    """

    def __init__(self, urdf_xml: str, root: str, tip: str, *, lam: float = 0.0) -> None:
        """Build the chain and the solvers.

        Args:
            urdf_xml: URDF document.
            root: Base link of the chain.
            tip: Tip link of the chain.
            lam: Damping ``lambda`` of ``ChainIkSolverVel_wdls`` (KDL's default is 0); see
                :meth:`set_lambda` for when KDL applies it.

        Raises:
            PeerUnavailable: If PyKDL is not importable.
        """
        super().__init__(urdf_xml, root, tip)
        kdl = self.kdl
        n = self.n
        self._q = kdl.JntArray(n)
        self._qdot = kdl.JntArray(n)
        self._frame = kdl.Frame()
        self._jac = kdl.Jacobian(n)
        self._fk_solver = kdl.ChainFkSolverPos_recursive(self.chain)
        self._jac_solver = kdl.ChainJntToJacSolver(self.chain)
        self._wdls = kdl.ChainIkSolverVel_wdls(self.chain)
        self._wdls.setLambda(float(lam))
        self._target: Any = kdl.Frame()
        self._target_key = b""
        self._zero_twist = kdl.Twist()
        self._twist = kdl.Twist()
        self._rng6 = range(6)
        self._rngn = range(n)

    def set_lambda(self, lam: float, eps: float | None = None) -> None:
        """Set the damping of the WDLS velocity solver.

        KDL (1.5) applies the damping only near a singularity: ``lambda_scaled =
        lambda * sqrt(1 - (sigma_min / eps)^2)`` when more than ``n - 6`` singular values are
        below ``eps`` (default 1e-5), else 0 -- i.e. away from singularities the solver is the
        plain pseudo-inverse whatever ``lambda`` is. Raise ``eps`` to widen the damped region.

        Args:
            lam: Damping ``lambda`` (>= 0) of ``ChainIkSolverVel_wdls``.
            eps: Singular-value threshold (> 0) below which damping applies; None keeps it.
        """
        if not lam >= 0.0:
            raise ValueError(f"lambda must be >= 0, got {lam}")
        if eps is not None:
            if not eps > 0.0:
                raise ValueError(f"eps must be > 0, got {eps}")
            self._wdls.setEps(float(eps))
        self._wdls.setLambda(float(lam))

    def _load_q(self, q: Any) -> None:
        arr = self._q
        for i, v in enumerate(np.asarray(q, dtype=np.float64).tolist()):
            arr[i] = v

    def _frame_to_np(self) -> FloatArray:
        rot, pos = self._frame.M, self._frame.p
        out = np.eye(4)  # (4, 4)
        for i in range(3):
            out[i, 0], out[i, 1], out[i, 2], out[i, 3] = rot[i, 0], rot[i, 1], rot[i, 2], pos[i]
        return out

    def _jac_to_np(self) -> FloatArray:
        jac = self._jac
        return np.array([[jac[r, c] for c in self._rngn] for r in self._rng6])  # (6, n)

    def fk_jac(self, q: FloatArray) -> None:
        """Tip pose and tip Jacobian into KDL's preallocated objects (the kinematics unit).

        Args:
            q: Joint positions [rad | m], shape (n,).
        """
        self._load_q(q)
        self._fk_solver.JntToCart(self._q, self._frame)
        self._jac_solver.JntToJac(self._q, self._jac)

    def fk(self, q: FloatArray) -> FloatArray:
        """Tip pose in the root frame.

        Args:
            q: Joint positions [rad | m], shape (n,).

        Returns:
            Homogeneous transform, shape (4, 4).
        """
        check_q(q, self.n)
        self._load_q(q)
        self._fk_solver.JntToCart(self._q, self._frame)
        return self._frame_to_np()

    def jacobian(self, q: FloatArray) -> FloatArray:
        """Tip Jacobian, reference point at the tip origin, expressed in the root frame.

        Args:
            q: Joint positions [rad | m], shape (n,).

        Returns:
            Rows 0-2 linear [m/s], rows 3-5 angular [rad/s] per unit joint velocity, shape (6, n).
        """
        check_q(q, self.n)
        self._load_q(q)
        self._jac_solver.JntToJac(self._q, self._jac)
        return self._jac_to_np()

    def _solve(self, twist: Any) -> FloatArray:
        self._wdls.CartToJnt(self._q, twist, self._qdot)
        qdot = self._qdot
        return np.array([qdot[i] for i in self._rngn])

    def wdls_step(self, q: FloatArray, twist6: FloatArray) -> FloatArray:
        """Joint velocities for a tip twist with ``ChainIkSolverVel_wdls``.

        Args:
            q: Joint positions [rad | m], shape (n,).
            twist6: Tip twist in the root frame, (vx, vy, vz) [m/s] then (wx, wy, wz) [rad/s],
                shape (6,).

        Returns:
            Joint velocities [rad/s | m/s], shape (n,).
        """
        twist = self._twist
        tw = np.asarray(twist6, dtype=np.float64)
        if tw.shape != (6,):
            raise ValueError(f"twist6 must have shape (6,), got {tw.shape}")
        for i, v in enumerate(tw.tolist()):
            twist[i] = v
        self._load_q(q)
        return self._solve(twist)

    def tick(self, q: FloatArray, target_pose: FloatArray, gain: float) -> FloatArray:
        """One proportional pose-control tick done with KDL (the unit of the tick benchmark).

        FK of the tip (``ChainFkSolverPos_recursive``), error twist ``KDL.diff(current,
        target)`` (position difference and rotation vector in the root frame) times ``gain``,
        then ``ChainIkSolverVel_wdls.CartToJnt``, which computes the tip Jacobian itself with its
        internal ``ChainJntToJacSolver`` and solves it by SVD. So one tick = one FK + one
        Jacobian + one damped least-squares solve, like one iTaSC control tick.

        Args:
            q: Joint positions [rad | m], shape (n,).
            target_pose: Target tip pose in the root frame, shape (4, 4).
            gain: Proportional gain [1/s].

        Returns:
            Joint velocities [rad/s | m/s], shape (n,).
        """
        kdl = self.kdl
        t = np.asarray(target_pose, dtype=np.float64)
        key = t.tobytes()
        if key != self._target_key:  # a new target: convert it once, as a KDL node would
            r = t[:3, :3].ravel().tolist()
            p = t[:3, 3].tolist()
            self._target = kdl.Frame(kdl.Rotation(*r), kdl.Vector(p[0], p[1], p[2]))
            self._target_key = key
        self._load_q(q)
        self._fk_solver.JntToCart(self._q, self._frame)
        if gain == 0.0:
            return self._solve(self._zero_twist)
        # diff(a, b, dt) = (b - a) / dt, so dt = 1 / gain scales the error by the gain. (Passing
        # dt explicitly also avoids PyKDL's slow default-argument overload resolution.)
        return self._solve(kdl.diff(self._frame, self._target, 1.0 / float(gain)))


__all__ = ["KdlPeer"]
