"""TRAC-IK through the ``pytracik`` wheel (a pybind11 module): position IK and its benchmark.

``pytracik`` (0.0.3) takes the URDF as a string (``pytracik.TRAC_IK(base, tip, urdf_xml,
timeout, eps, solve_type)``), so no temporary file is needed. Its bundled URDF reader reads the
joint limits wrongly (e.g. every Panda joint gets ``[0, 0]``), which would make every IK call
fail; :class:`TracIkPeer` therefore sets the limits from the URDF ``<limit>`` (and
``<safety_controller>`` soft limits, as the ROS TRAC-IK does) with ``pytracik.set_joint_limits``.
Its ``fk``/``ik`` functions are module-level functions taking the solver object.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .contract import FloatArray, PeerUnavailable, check_q
from .poses import pose_error, rotation_to_quaternion
from .urdf_chain import ChainJoint, solver_limits, urdf_chain


def import_pytracik() -> Any:
    """The ``pytracik`` module.

    Raises:
        PeerUnavailable: If TRAC-IK is not importable; the message has the install hint.
    """
    try:
        import pytracik
    except ImportError as exc:
        raise PeerUnavailable(
            "TRAC-IK is not importable: install it with 'pip install pytracik' "
            "(or the 'bench' extra of itasc_ros)"
        ) from exc
    return pytracik


@contextlib.contextmanager
def _native_stdout_silenced() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null, for C++ code that prints to ``std::cout``."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        libc.fflush(None)  # whatever the C/C++ runtime buffered goes to /dev/null too
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


@dataclass(frozen=True)
class IkBenchResult:
    """Outcome of :meth:`TracIkPeer.benchmark_ik`.

    Attributes:
        n: Number of targets.
        success_rate: Fraction of targets solved, in [0, 1].
        mean_time_s: Mean time per target [s]; a failure counts at least the full timeout.
        mean_success_time_s: Mean time of the solved targets [s] (nan if none).
        max_pose_error: Largest error norm (position [m] + rotation [rad], KDL ``diff``) of a
            returned solution, checked with TRAC-IK's own FK.
    """

    n: int
    success_rate: float
    mean_time_s: float
    mean_success_time_s: float
    max_pose_error: float


class TracIkPeer:
    """TRAC-IK (``pytracik``) on the chain ``root -> tip``.

    Attributes:
        joint_names: Movable chain joints, root to tip.
        n: Number of chain joints.
        lower: Lower joint limits used by the solver [rad | m], shape (n,).
        upper: Upper joint limits used by the solver [rad | m], shape (n,).
        timeout: Time budget per IK call [s].
        eps: Convergence tolerance.
    """

    SOLVE_TYPES = ("Speed", "Distance", "Manip1", "Manip2")

    def __init__(
        self,
        urdf_xml: str,
        root: str,
        tip: str,
        *,
        timeout: float = 0.005,
        eps: float = 1e-5,
        solve_type: str = "Speed",
    ) -> None:
        """Create the TRAC-IK solver.

        Args:
            urdf_xml: URDF document (passed to TRAC-IK as a string).
            root: Base link of the chain.
            tip: Tip link of the chain.
            timeout: Time budget per IK call [s] (TRAC-IK protocol: 5 ms).
            eps: Convergence tolerance (TRAC-IK protocol: 1e-5).
            solve_type: One of 'Speed', 'Distance', 'Manip1', 'Manip2'.

        Raises:
            PeerUnavailable: If pytracik is not importable or cannot build the chain.
            ValueError: For an unknown ``solve_type``.
        """
        tracik = import_pytracik()
        self._tracik = tracik
        if solve_type not in self.SOLVE_TYPES:
            raise ValueError(
                f"unknown solve_type {solve_type!r}; valid choices: {', '.join(self.SOLVE_TYPES)}"
            )
        chain = [j for j in urdf_chain(urdf_xml, root, tip) if j.movable]
        self.joint_names = [j.name for j in chain]
        self.n = len(chain)
        self.timeout = float(timeout)
        self.eps = float(eps)
        self._solver = self._make_solver(urdf_xml, root, tip, solve_type)
        self._set_limits(chain)

    def _make_solver(self, urdf_xml: str, root: str, tip: str, solve_type: str) -> Any:
        """TRAC-IK's solver object on ``root -> tip``, checked to have the chain's joints."""
        tracik = self._tracik
        # TRAC-IK prints a warning about the root link's inertia to std::cout: silence it.
        with _native_stdout_silenced():
            solver = tracik.TRAC_IK(
                root, tip, urdf_xml, self.timeout, self.eps, getattr(tracik.SolveType, solve_type)
            )
        n_trac = int(tracik.get_num_joints(solver))
        if n_trac != self.n:
            raise PeerUnavailable(
                f"pytracik built a chain of {n_trac} joints from {root!r} to {tip!r}, the URDF "
                f"has {self.n}; the chain cannot be benchmarked"
            )
        return solver

    def _set_limits(self, chain: list[ChainJoint]) -> None:
        """The solver's limits and the sampling ranges from the URDF's (soft) limits."""
        # pytracik's URDF reader gets the limits wrong: set them from the URDF.
        self.lower, self.upper = solver_limits(chain)
        self._tracik.set_joint_limits(self._solver, self.lower.tolist(), self.upper.tolist())
        finite = (
            np.isfinite(self.lower) & np.isfinite(self.upper) & (self.upper - self.lower < 1e6)
        )
        self._sample_lo = np.where(finite, self.lower, -math.pi)
        self._sample_hi = np.where(finite, self.upper, math.pi)

    def mid_range(self) -> FloatArray:
        """Middle of the joint limits (0 for continuous joints), shape (n,)."""
        return 0.5 * (self._sample_lo + self._sample_hi)

    def random_q(self, rng: np.random.Generator) -> FloatArray:
        """A uniformly random joint vector within the limits ([-pi, pi] if unlimited), (n,)."""
        return rng.uniform(self._sample_lo, self._sample_hi)

    def fk(self, q: FloatArray) -> FloatArray:
        """Tip pose in the root frame with TRAC-IK's own KDL chain.

        Args:
            q: Joint positions [rad | m], shape (n,).

        Returns:
            Homogeneous transform, shape (4, 4).
        """
        q = check_q(q, self.n)
        return np.array(self._tracik.fk(self._solver, q))

    def ik(self, seed: FloatArray, pose: FloatArray) -> FloatArray | None:
        """Solve the position IK.

        Args:
            seed: Initial joint positions [rad | m], shape (n,).
            pose: Target tip pose in the root frame, shape (4, 4).

        Returns:
            Joint positions, shape (n,), or None if TRAC-IK found no solution in time.
        """
        seed = check_q(seed, self.n)
        x, y, z = (float(v) for v in pose[:3, 3])
        qx, qy, qz, qw = rotation_to_quaternion(pose[:3, :3])
        r = self._tracik.ik(self._solver, seed, x, y, z, qx, qy, qz, qw)
        if r[0] < 0:
            return None
        return np.array(r[1:])

    def benchmark_ik(self, n: int = 10_000, seed: int = 0) -> IkBenchResult:
        """TRAC-IK benchmark protocol on this chain.

        ``n`` random reachable targets (FK of uniformly random joint vectors within the limits),
        each solved from the mid-range seed with the solver's tolerance and timeout (5 ms and
        1e-5 by default). A failure counts at least the full timeout in the mean time.

        Args:
            n: Number of targets.
            seed: Seed of the random generator of the targets.

        Returns:
            Success rate, mean times and the largest pose error of a returned solution.
        """
        rng = np.random.default_rng(seed)
        q_seed = self.mid_range()
        targets = [self.fk(self.random_q(rng)) for _ in range(n)]
        times = np.empty(n)
        ok = np.zeros(n, dtype=bool)
        max_err = 0.0
        clock = time.perf_counter
        for k, target in enumerate(targets):
            t0 = clock()
            sol = self.ik(q_seed, target)
            dt = clock() - t0
            if sol is None:
                times[k] = max(dt, self.timeout)
            else:
                times[k] = dt
                ok[k] = True
                max_err = max(max_err, float(np.linalg.norm(pose_error(self.fk(sol), target))))
        return IkBenchResult(
            n=n,
            success_rate=float(ok.mean()) if n else math.nan,
            mean_time_s=float(times.mean()) if n else math.nan,
            mean_success_time_s=float(times[ok].mean()) if ok.any() else math.nan,
            max_pose_error=max_err,
        )


__all__ = ["IkBenchResult", "TracIkPeer", "import_pytracik"]
