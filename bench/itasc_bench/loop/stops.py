"""``itasc-bench stops``: is the node's last command a zero, however it is stopped?

Each run starts the node and the simulated robot in closed loop on the moving target of the
loop benchmark (:mod:`~itasc_bench.loop`), waits until the robot moves, then stops the node
one way: SIGINT, SIGTERM (the node exits after its controlled stop) or ``~/enable false`` (the
node stays up and falls silent). The run passes when the last command that reached this process
is all zeros, taken from its DDS reader (so nothing this process does delays it).
"""

from __future__ import annotations

import signal
import time
from typing import Any

import numpy as np

from .errors import BenchError
from .plan import make_plan
from .processes import local_dds
from .recorder import Recorder
from .scheduling import saved_scheduling

#: The ways a run stops the node.
STOP_KINDS = ("sigint", "sigterm", "enable")
#: How long the robot moves before it is stopped [s].
MOVING = 1.0
#: ``enable``: silence this long after the service's answer ends the run [s].
SILENCE = 0.5
#: The longest wait for the commands still in flight after the stop [s]: at least 0.2 s, and
#: on until the last one received is a zero (a starved reader thread takes them late).
IN_FLIGHT = 5.0


def run_stop(
    kind: str, robot: str = "panda", rate: float = 250.0, domain: int | None = None
) -> dict[str, Any]:
    """One run: start, move, stop the node ``kind`` way; the last command received.

    Args:
        kind: one of :data:`STOP_KINDS`.
        robot: a bundled robot with a config (as ``itasc-bench loop``).
        rate: the node's ``control_rate`` [Hz].
        domain: ROS domain id; default a private one derived from this process id.

    Returns:
        ``kind``, ``last_command_zero`` (bool), ``last_command_max_abs`` [rad/s],
        ``commands_after_stop`` (received after the signal or the service call),
        ``stop_s`` (until the node exited, or fell silent for ``enable``), ``node_exit_code``.

    Raises:
        BenchError: an unknown ``kind``, a process died early or no command arrived.
    """
    if kind not in STOP_KINDS:
        raise BenchError(f"no stop {kind!r}; valid: {', '.join(STOP_KINDS)}")
    from .session import LoopSession  # rclpy only where a run starts

    plan = make_plan(
        robot,
        rate,
        sim_rate=None,
        trigger="timer",
        realtime=False,
        domain=domain,
        log_dir=None,
        node_module="itasc_ros.ros.node",
    )
    rec = Recorder(len(plan.robot.joints), plan.robot.vmax)
    with local_dds(plan.domain):
        session = LoopSession(plan, rec, False)
        try:
            session.start_moving(MOVING)
            n0, t0 = len(rec.cmd_received), time.monotonic()
            code = _stop(session, kind)
            stop_s = time.monotonic() - t0
            _until_zero(rec, IN_FLIGHT)  # anything still in flight arrives
            last = np.array(rec.last_command, dtype=float)
            n_after = len(rec.cmd_received) - n0
        finally:
            session.close(saved_scheduling())
    return {
        "kind": kind,
        "last_command_zero": bool(last.size and np.all(last == 0.0)),
        "last_command_max_abs": float(np.max(np.abs(last))) if last.size else float("nan"),
        "commands_after_stop": n_after,
        "stop_s": stop_s,
        "node_exit_code": code,
    }


def _until_zero(rec: Recorder, timeout: float) -> None:
    """0.2 s, then until the last command received is all zeros (at most ``timeout`` [s]).

    A command the node sent before it exited (or fell silent) still arrives; nothing comes
    after its last one (DDS delivers a writer's samples in order), so waiting for a zero
    never hides a later non-zero one.
    """
    time.sleep(0.2)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = np.array(rec.last_command, dtype=float)
        if last.size and np.all(last == 0.0):
            return
        time.sleep(0.02)


def _stop(session: Any, kind: str) -> int | None:
    """Stop the node ``kind`` way; its exit code (None: still running, ``enable``)."""
    node = session.procs["node"]
    if kind == "enable":
        session.set_enabled(False)
        session.wait_silence(SILENCE)
        return None
    node.send_signal(signal.SIGINT if kind == "sigint" else signal.SIGTERM)
    try:
        return node.wait(timeout=15.0)
    except Exception as exc:
        raise BenchError(f"the node did not exit within 15 s of {kind}") from exc


def stops_series(runs: int, robot: str = "panda", rate: float = 250.0) -> dict[str, Any]:
    """``runs`` rounds of every stop kind; the count of runs whose last command was not zero."""
    out: dict[str, Any] = {}
    for kind in STOP_KINDS:
        results = [run_stop(kind, robot, rate) for _ in range(runs)]
        lost = [r for r in results if not r["last_command_zero"]]
        out[f"{kind}_runs"] = runs
        out[f"{kind}_zero_lost"] = len(lost)
        out[f"{kind}_stop_s_max"] = max(r["stop_s"] for r in results)
        out[f"{kind}_worst_last_command"] = max(r["last_command_max_abs"] for r in results)
    return out


def stops_command(args: Any) -> dict[str, Any]:
    """``itasc-bench stops``: print one line per stop kind; the figures for --json."""
    rate = min(args.rate, 250.0) if args.rate else 250.0
    out = stops_series(args.runs, args.robot, rate)
    print(f"\n== the last command when the node is stopped ({args.runs} runs each, {rate:g} Hz)")
    for kind in STOP_KINDS:
        print(
            f"  {kind:>7}: zero lost in {out[f'{kind}_zero_lost']} of {args.runs}, "
            f"longest stop {out[f'{kind}_stop_s_max']:.2f} s"
        )
    return out


__all__ = ["MOVING", "SILENCE", "STOP_KINDS", "run_stop", "stops_command", "stops_series"]
