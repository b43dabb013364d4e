"""daqp's hierarchical QP: a strict-priority velocity solve, beside our saturation (SNS).

`daqp <https://github.com/darnstrom/daqp>`_ is a dual active-set QP solver in C whose
``daqp.solve(None, None, A, bupper, blower, sense, break_points=...)`` solves a hierarchical
(lexicographic) least-squares problem: the simple bounds and the rows of ``A`` are cut into
levels at ``break_points`` (cumulative row counts, the simple bounds first), and each level
minimizes its rows' violation of ``blower <= A x <= bupper`` without raising any level above
it. :class:`DaqpHierarchy` writes the velocity IK tick that way:

* level 0: the joint box ``lo <= q' <= hi`` (what the caller's limits allow this tick);
* level 1: the task ``J q' = v``, either as is (``scaled=False``: an infeasible task comes out
  as daqp's least-squares point, each row's residual measured on the row divided by its norm,
  so not along ``v``'s direction), or as Drake's differential IK does (``scaled=True``: the
  decision vector is ``[q'; s]``, ``J q' - s v = 0`` and ``0 <= s <= 1`` join level 0, level 1
  is ``s = 1``, i.e. the largest ``s`` the box allows, the direction kept);
* level 2 (optional): the posture ``q' = v_posture`` (``n`` rows, the identity), least squares
  in what the levels above leave.

Installed by ``make limit-peers`` (the ``daqp`` wheel, in the venv).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .contract import FloatArray, import_peer

#: The wheel ``make limit-peers`` installs.
DAQP_REQUIREMENT = "daqp==0.11.0"

#: daqp's settings for the solve (keyword arguments of ``daqp.solve``): its defaults (primal
#: tolerance 1e-6, dual 1e-12, zero 1e-11, pivot 1e-8, automatic proximal regularization).
#: None of them tightens the result on this problem: over the case's closed loop the box holds
#: to 2.6e-9 rad/s and ``J q' - s v = 0`` to 1.5e-9 m/s with the defaults, the same with
#: ``zero_tol``, ``pivot_tol``, ``sing_tol``, ``dual_tol`` or ``progress_tol`` lowered, and
#: ``primal_tol`` <= 1e-9 makes the box worse (8.1e-9 with the posture level); the residual
#: comes from daqp's elimination of the levels, whose tolerances it does not expose.
DAQP_SETTINGS: dict[str, float] = {}


def import_daqp() -> Any:
    """The ``daqp`` module.

    Raises:
        PeerUnavailable: If it is not importable; the message has the install hint.
    """
    hint = f"install it with 'make limit-peers' (pip install {DAQP_REQUIREMENT})"
    return import_peer("daqp", hint)


def daqp_version() -> str:
    """The installed daqp's version (from its distribution's metadata), or ``"unknown"``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("daqp")
    except PackageNotFoundError:
        return "unknown"


class DaqpHierarchy:
    """A box, a task below it and optionally a posture below that, solved by daqp in one call.

    The problem's arrays are allocated once; :meth:`solve` writes the tick's box, Jacobian and
    velocities into them and calls ``daqp.solve`` (which sets up its workspace on every call).

    Attributes:
        n: Number of joints.
        m: Rows of the task (level 1).
        scaled: Level 1 as a scale on the task velocity (``[q'; s]``), not as least squares.
        posture: Whether level 2 (the posture, ``n`` rows) is there.
        scale: ``s`` of the last solve (``scaled`` only; None otherwise or with no solution).
        exitflag: daqp's exit flag of the last solve (1 optimal, 2 optimal with some level's
            rows not met; negative: no solution).
        iterations: daqp's iterations of the last solve.
    """

    def __init__(
        self,
        n: int,
        m: int,
        scaled: bool,
        posture: bool,
        settings: dict[str, float] | None = None,
    ) -> None:
        """Allocate the problem's arrays.

        Args:
            n: Number of joints.
            m: Rows of the task.
            scaled: Level 1 as ``J q' = s v`` with ``s`` in [0, 1] maximized (True), or as
                ``J q' = v`` in the least-squares sense (False).
            posture: Add level 2, ``q' = v_posture``.
            settings: daqp's settings (keyword arguments of ``daqp.solve``); default
                :data:`DAQP_SETTINGS`.

        Raises:
            PeerUnavailable: If daqp is not importable.
        """
        self._daqp = import_daqp()
        self.n, self.m, self.scaled, self.posture = n, m, scaled, posture
        self.settings = dict(DAQP_SETTINGS if settings is None else settings)
        nx = n + 1 if scaled else n  # decision vector: q' (n,) [rad/s], and s if scaled
        rows = [m] + ([1] if scaled else []) + ([n] if posture else [])
        a = np.zeros((sum(rows), nx))
        if scaled:
            a[m, n] = 1.0  # level 1: s = 1
        if posture:
            a[sum(rows) - n :, :n] = np.eye(n)
        self._a = a
        self._lower = np.zeros(nx + a.shape[0])  # simple bounds first, then the rows of A
        self._upper = np.zeros(nx + a.shape[0])
        self._sense = np.zeros(nx + a.shape[0], dtype=np.int32)  # all two-sided inequalities
        if scaled:  # level 0: the box, 0 <= s <= 1, J q' - s v = 0; then s = 1; then posture
            self._lower[n], self._upper[n] = 0.0, 1.0
            self._lower[nx + m] = self._upper[nx + m] = 1.0
            levels = [nx + m, nx + m + 1] + ([nx + m + 1 + n] if posture else [])
        else:  # level 0: the box; level 1: J q' = v; level 2: posture
            levels = [nx, nx + m] + ([nx + m + n] if posture else [])
        self._break_points = np.array(levels, dtype=np.int32)
        self.scale: float | None = None
        self.exitflag = 0
        self.iterations = 0

    def solve(
        self,
        lo: FloatArray,
        hi: FloatArray,
        jacobian: FloatArray,
        velocity: FloatArray,
        posture_velocity: FloatArray | None = None,
    ) -> FloatArray | None:
        """One tick: the joint velocities of the hierarchy.

        Args:
            lo: Lower bounds of ``q'`` [rad/s], (n,).
            hi: Upper bounds of ``q'`` [rad/s], (n,).
            jacobian: The task's Jacobian, (m, n).
            velocity: The task velocity asked, ``v`` [m/s or rad/s], (m,).
            posture_velocity: Level 2's joint velocities asked [rad/s], (n,); needed (and only
                used) when the hierarchy has a posture.

        Returns:
            ``q'`` [rad/s], (n,); None when daqp finds no solution (negative exit flag).
        """
        n, m = self.n, self.m
        nx = n + 1 if self.scaled else n
        self._lower[:n], self._upper[:n] = lo, hi
        self._a[:m, :n] = jacobian
        if self.scaled:
            self._a[:m, n] = -np.asarray(velocity)
            self._lower[nx : nx + m] = self._upper[nx : nx + m] = 0.0
        else:
            self._lower[nx : nx + m] = self._upper[nx : nx + m] = velocity
        if self.posture:
            if posture_velocity is None:
                raise ValueError("this hierarchy has a posture level: posture_velocity needed")
            self._lower[-n:] = self._upper[-n:] = posture_velocity
        x, _fval, flag, info = self._daqp.solve(
            None,
            None,
            self._a,
            self._upper,
            self._lower,
            self._sense,
            break_points=self._break_points,
            **self.settings,
        )
        self.exitflag, self.iterations = int(flag), int(info["iterations"])
        if flag < 0:
            self.scale = None
            return None
        x = np.asarray(x, dtype=np.float64)
        self.scale = float(x[n]) if self.scaled else None
        return x[:n].copy()


__all__ = ["DAQP_REQUIREMENT", "DAQP_SETTINGS", "DaqpHierarchy", "daqp_version", "import_daqp"]
