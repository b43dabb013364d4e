"""PlaCo (Rhoban's QP solver): the velocity IK tick with joint and velocity limits in its QP.

PlaCo's wheel pins Pinocchio 3.8, and with it numpy < 2.4, which the project's venv cannot hold
beside Pinocchio 4.1 and numpy 2.4: ``make limit-peers`` installs PlaCo into a venv of its own,
``placo/`` inside the project's venv. :class:`PlacoPeer` runs PlaCo's tick there, in a worker
process (:mod:`~itasc_bench.peers.placo_worker`), and times it there: the benchmark asks
for a block of ticks at a time (:meth:`PlacoPeer.time_ticks`), so its blocks interleave with
the other peers' as theirs do, and the process boundary is crossed once per block, not per
tick.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from .contract import FloatArray, PeerUnavailable, check_q

#: The wheel ``make limit-peers`` installs (into :func:`placo_python`'s venv).
PLACO_REQUIREMENT = "placo==0.10.2"

#: The worker script, run by path under PlaCo's Python.
WORKER = Path(__file__).with_name("placo_worker.py")

_HINT = f"install it with 'make limit-peers' (pip install {PLACO_REQUIREMENT} into .venv/placo)"


def placo_python() -> Path:
    """The Python that runs PlaCo: ``<venv>/placo/bin/python``, else this process's own.

    ``<venv>/placo`` is the venv ``make limit-peers`` makes for PlaCo inside the project's venv
    (``sys.prefix``).
    """
    side = Path(sys.prefix) / "placo" / "bin" / "python"
    return side if side.is_file() else Path(sys.executable)


class _WorkerEnded(RuntimeError):
    """The worker process ended before it replied."""


def _stop(proc: subprocess.Popen[str], log: IO[bytes]) -> None:
    """End the worker: the end of its input, then a kill if it has not left within 5 s."""
    if proc.stdin is not None:
        with contextlib.suppress(OSError):  # a worker that has died: nothing to tell it
            proc.stdin.close()
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
    log.close()


class PlacoPeer:
    """PlaCo's kinematics solver with a frame task on the tip, run in a worker process.

    Attributes:
        joint_names: The joints of ``q`` and of the returned velocities, in that order.
        n: Number of joints.
        version: PlaCo's version as the worker reports it.
    """

    def __init__(
        self,
        urdf: Path,
        tip: str,
        joint_names: Sequence[str],
        limits: tuple[FloatArray, FloatArray, FloatArray],
        period: float,
        *,
        python: Path | None = None,
    ) -> None:
        """Start the worker and load the robot there (the URDF's root link fixed to the world).

        Args:
            urdf: The URDF file (PlaCo reads files).
            tip: The frame of the frame task (position and orientation, equal weights).
            joint_names: The joints in the order of ``q``, shape (n,).
            limits: ``(lower, upper, velocity)`` in the order of ``joint_names``: position
                limits [rad | m] and velocity limits [rad/s | m/s], shape (n,) each.
            period: The tick's period, PlaCo's ``solver.dt`` [s].
            python: The interpreter with PlaCo; default :func:`placo_python`.

        Raises:
            PeerUnavailable: If that interpreter cannot run or cannot import PlaCo.
            RuntimeError: If PlaCo refuses the robot or the task (e.g. an unknown ``tip``).
        """
        self.joint_names = list(joint_names)
        self.n = len(self.joint_names)
        exe = python if python is not None else placo_python()
        self._log = tempfile.TemporaryFile()  # the worker's stderr, for the error messages
        try:
            self._proc = subprocess.Popen(
                [str(exe), str(WORKER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                text=True,
            )
        except OSError as exc:
            self._log.close()
            raise PeerUnavailable(f"PlaCo cannot run here: {exc}; {_HINT}") from exc
        self._finalizer = weakref.finalize(self, _stop, self._proc, self._log)
        lower, upper, velocity = (np.asarray(a, dtype=np.float64).tolist() for a in limits)
        setup = {"urdf": str(urdf), "tip": tip, "joints": self.joint_names, "lower": lower}
        setup.update(upper=upper, velocity=velocity, period=float(period))
        try:
            self.version = str(self._ask(setup)["version"])
        except (_WorkerEnded, PeerUnavailable) as exc:
            self.close()
            raise PeerUnavailable(f"PlaCo cannot run here: {exc}; {_HINT}") from exc
        except RuntimeError:
            self.close()
            raise

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request to the worker and return its reply."""
        proc = self._proc
        if proc.stdin is None or proc.stdout is None:
            raise _WorkerEnded(f"the PlaCo worker has ended{self._stderr_tail()}")
        # A worker that has ended may have replied first (one without PlaCo says so at once,
        # then leaves): its reply is read, whether or not the request reached it.
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            proc.wait()
            raise _WorkerEnded(
                f"the PlaCo worker ended with status {proc.returncode}{self._stderr_tail()}"
            )
        reply: dict[str, Any] = json.loads(line)
        if "unavailable" in reply:
            raise PeerUnavailable(reply["unavailable"])
        if "error" in reply:
            raise RuntimeError(f"PlaCo: {reply['error']}")
        return reply

    def _stderr_tail(self) -> str:
        """``: <the last line the worker wrote to stderr>``, or nothing."""
        self._log.seek(0)
        lines = self._log.read().decode(errors="replace").strip().splitlines()
        return f": {lines[-1]}" if lines else ""

    def set_target(self, pose: FloatArray) -> None:
        """Set the frame task's target.

        Args:
            pose: Target tip pose in the root frame, shape (4, 4).
        """
        target = np.asarray(pose, dtype=np.float64)
        if target.shape != (4, 4):
            raise ValueError(f"pose must have shape (4, 4), got {target.shape}")
        self._ask({"op": "target", "pose": target.tolist()})

    def tick(self, q: FloatArray) -> FloatArray:
        """One tick: the joint velocities toward the target from ``q``, within the limits.

        Args:
            q: Joint positions [rad | m] in the order of ``joint_names``, shape (n,).

        Returns:
            PlaCo's joint step over the period, divided by the period [rad/s | m/s], in the
            order of ``joint_names``, shape (n,).
        """
        q = check_q(q, self.n)
        return np.array(self._ask({"op": "tick", "q": q.tolist()})["qdot"])

    def time_ticks(self, q: FloatArray, number: int) -> float:
        """Run ``number`` ticks from ``q`` in the worker, timed there.

        Args:
            q: Joint positions [rad | m] in the order of ``joint_names``, shape (n,).
            number: Ticks to run.

        Returns:
            Their time [s] (``time.perf_counter`` around the loop in the worker).
        """
        q = check_q(q, self.n)
        return float(self._ask({"op": "time", "q": q.tolist(), "number": number})["seconds"])

    def hierarchy(
        self,
        q: FloatArray,
        target: FloatArray,
        posture: FloatArray,
        gain: float,
        ticks: int,
        mode: str,
    ) -> dict[str, Any]:
        """A closed loop of the tip's position above a soft posture, in PlaCo's QP.

        The tip's position task at PlaCo's priority ``mode``, the posture ``soft``, with the
        joint and velocity limits on; an ideal robot (``q += q' dt``), ``ticks`` ticks.

        Args:
            q: Start joint positions [rad | m] in the order of ``joint_names``, shape (n,).
            target: The tip's target position in the root frame [m], shape (3,).
            posture: The posture's joint positions [rad | m], shape (n,).
            gain: Gain of both tasks [1/s].
            ticks: Ticks to run.
            mode: ``"hard"`` or ``"scaled"`` (or ``"soft"``).

        Returns:
            ``qdots`` (per tick, joint velocities [rad/s | m/s], lists of n), ``scales``
            (PlaCo's scale per tick) and ``failed`` (PlaCo's error where it stopped, else "").
        """
        q = check_q(q, self.n)
        request = {"op": "hierarchy", "q": q.tolist(), "gain": float(gain), "mode": mode}
        request.update(
            target=np.asarray(target, dtype=np.float64).tolist(),
            posture=np.asarray(posture, dtype=np.float64).tolist(),
            ticks=int(ticks),
        )
        return self._ask(request)

    def close(self) -> None:
        """End the worker (also done when the peer is garbage-collected)."""
        self._finalizer()


__all__ = ["PLACO_REQUIREMENT", "WORKER", "PlacoPeer", "placo_python"]
