"""The PlaCo peer's worker process: PlaCo's tick run and timed in the interpreter that has PlaCo.

Run as a script (``python placo_worker.py``) by :class:`~itasc_bench.peers.placo_peer.
PlacoPeer`, under the Python of the venv ``make limit-peers`` made for PlaCo; it imports nothing of
``itasc_ros`` (that venv holds only PlaCo and its dependencies). It reads one JSON request per
line on stdin and writes one JSON reply per line; whatever PlaCo prints goes to stderr.

Requests: first the setup ``{"urdf", "tip", "joints", "lower", "upper", "velocity",
"period"}``, then ``{"op": "target", "pose"}``, ``{"op": "tick", "q"}`` (reply ``{"qdot"}``)
or ``{"op": "time", "q", "number"}`` (reply ``{"seconds"}``: ``number`` ticks from ``q``,
timed here), or ``{"op": "hierarchy", "q", ...}`` (:meth:`PlacoTick.hierarchy`). A reply
``{"unavailable": why}`` or ``{"error": why}`` reports a failure.
"""

from __future__ import annotations

import json
import os
import sys
import time
from importlib import metadata
from typing import IO, Any

import numpy as np


class PlacoTick:
    """PlaCo's kinematics solver on one frame task, with its joint and velocity limits on.

    One tick: the joint positions written into the robot's state, ``update_kinematics()``,
    ``solve(True)`` (PlaCo's QP for the joint step over ``dt``, applied to the state).
    """

    def __init__(self, placo: Any, setup: dict[str, Any]) -> None:
        """Load the robot, set the limits of ``setup`` and add the frame task.

        Args:
            placo: The ``placo`` module.
            setup: ``urdf`` (path), ``tip`` (frame), ``joints`` (names, the order of ``q``),
                ``lower``, ``upper`` [rad | m], ``velocity`` [rad/s | m/s] (per joint) and
                ``period`` [s].
        """
        robot = placo.RobotWrapper(setup["urdf"], placo.Flags.ignore_collisions)
        names = list(setup["joints"])
        for name, lo, hi, v in zip(
            names, setup["lower"], setup["upper"], setup["velocity"], strict=True
        ):
            robot.set_joint_limits(name, lo, hi)
            robot.set_velocity_limit(name, v)
        solver = placo.KinematicsSolver(robot)
        solver.mask_fbase(True)  # the root link is fixed to the world
        solver.enable_joint_limits(True)
        solver.enable_velocity_limits(True)
        solver.dt = float(setup["period"])
        self.task = solver.add_frame_task(setup["tip"], np.eye(4))
        self.task.configure("tip", "soft", 1.0, 1.0)  # position and orientation, equal weights
        self.robot, self.solver, self.dt = robot, solver, float(setup["period"])
        self.placo, self.tip, self.names = placo, str(setup["tip"]), names
        self.q_index = np.array([robot.get_joint_offset(n) for n in names], dtype=np.intp)
        self.v_index = np.array([robot.get_joint_v_offset(n) for n in names], dtype=np.intp)

    def tick(self, q: np.ndarray) -> np.ndarray:
        """One tick from ``q`` (n,) [rad | m]; PlaCo's joint step over ``dt``, whole (nv,)."""
        self.robot.state.q[self.q_index] = q
        self.robot.update_kinematics()
        return self.solver.solve(True)

    def time(self, q: np.ndarray, number: int) -> float:
        """Seconds that ``number`` ticks from ``q`` (n,) take."""
        tick = self.tick
        t0 = time.perf_counter()
        for _ in range(number):
            tick(q)
        return time.perf_counter() - t0

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """The reply to one request after the setup (see the module docstring)."""
        op = request["op"]
        if op == "target":
            self.task.T_world_frame = np.array(request["pose"], dtype=np.float64)
            return {"ok": True}
        q = np.array(request["q"], dtype=np.float64)
        if op == "tick":
            step = self.tick(q)
            return {"qdot": (step[self.v_index] / self.dt).tolist()}
        if op == "time":
            return {"seconds": self.time(q, int(request["number"]))}
        if op == "hierarchy":
            return self.hierarchy(q, request)
        return {"error": f"unknown request {op!r}"}

    def _hierarchy_solver(self, mode: str) -> tuple[Any, Any, Any]:
        """A solver of its own on the robot: a position task (``mode``), a soft posture."""
        solver = self.placo.KinematicsSolver(self.robot)
        solver.mask_fbase(True)
        solver.enable_joint_limits(True)
        solver.enable_velocity_limits(True)
        solver.dt = self.dt
        position = solver.add_position_task(self.tip, np.zeros(3))
        position.configure("level1", mode, 1.0)
        posture = solver.add_joints_task()
        posture.configure("posture", "soft", 1.0)
        return solver, position, posture

    def hierarchy(self, q: np.ndarray, request: dict[str, Any]) -> dict[str, Any]:
        """The two-level case in closed loop (``q += q' dt``) from ``q`` (n,) [rad | m].

        ``request``: ``target`` (position [m], (3,)), ``posture`` ([rad | m], (n,)), ``gain``
        [1/s], ``ticks`` and ``mode`` (level 1's PlaCo priority: ``hard`` or ``scaled``). PlaCo
        steers a task's error to zero in one step; the gain is had by targets ``K dt`` of the
        way there (the desired velocity ``K e``). Reply ``{"qdots", "scales", "failed"}``.
        """
        solver, position, posture = self._hierarchy_solver(str(request["mode"]))
        target, goal = np.array(request["target"]), np.array(request["posture"])
        frac = float(request["gain"]) * self.dt
        qdots: list[list[float]] = []
        scales: list[float] = []
        for k in range(int(request["ticks"])):
            self.robot.state.q[self.q_index] = q
            self.robot.update_kinematics()
            p = self.robot.get_T_world_frame(self.tip)[:3, 3]
            position.target_world = p + frac * (target - p)
            posture.set_joints(
                dict(zip(self.names, (q + frac * (goal - q)).tolist(), strict=True))
            )
            try:
                step = solver.solve(True)
            except Exception as exc:  # PlaCo reports an infeasible QP by raising
                return {"qdots": qdots, "scales": scales, "failed": f"tick {k}: {exc}"}
            qdot = step[self.v_index] / self.dt
            qdots.append(qdot.tolist())
            scales.append(float(solver.scale))
            q = q + qdot * self.dt
        return {"qdots": qdots, "scales": scales, "failed": ""}


def _reply(out: IO[str], message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def serve(requests: IO[str], out: IO[str]) -> None:
    """Answer the requests until the end of ``requests`` (see the module docstring).

    Args:
        requests: One JSON request per line, the setup first.
        out: Where the replies go, one JSON object per line.
    """
    try:
        import placo
    except ImportError as exc:
        _reply(out, {"unavailable": f"{sys.executable} cannot import placo ({exc})"})
        return
    peer: PlacoTick | None = None
    for line in requests:
        try:
            if peer is None:
                peer = PlacoTick(placo, json.loads(line))
                _reply(out, {"ok": True, "version": metadata.version("placo")})
            else:
                _reply(out, peer.handle(json.loads(line)))
        except Exception as exc:  # the parent raises it with the message
            _reply(out, {"error": f"{type(exc).__name__}: {exc}"})


def main() -> None:
    """Serve stdin; the replies on the original stdout, which PlaCo's own prints cannot reach."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.stdin, out)


if __name__ == "__main__":
    main()
