"""The processes the demo starts: the simulated robot and the iTaSC node.

Each runs as ``python -m ...`` on this machine's shared-memory DDS in the demo's domain, with
its output in a log file of the output folder; stopped with SIGINT (then SIGKILL).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import itasc_ros
from itasc_ros.tools.dds_env import local_dds_env

NODE = "/itasc_node"  # the node's fully qualified name
SIM_RATE = 500.0  # [Hz] the simulated robot's joint-state rate
LOG_NAMES = {"sim": "sim_robot.log", "node": "itasc_node.log"}  # process -> its log file


def child_env(domain: int) -> dict[str, str]:
    """The processes' environment: local DDS in ``domain``, this checkout on PYTHONPATH."""
    env = local_dds_env(domain)
    root = str(Path(itasc_ros.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


@dataclass(frozen=True)
class Physics:
    """The simulated robot's physics and what the node is told of it.

    Attributes:
        kind: ``ideal`` or ``mujoco`` (``itasc_sim_robot``'s ``physics``).
        lag: mujoco: the servos' time constant [s].
        node_lag: the node's ``actuator_lag`` [s] (0: not compensated).
        urdf: mujoco: the URDF the simulator builds its model from (None: the node's).
    """

    kind: str = "ideal"
    lag: float = 0.0
    node_lag: float = 0.0
    urdf: Path | None = None


def process_commands(
    urdf: Path, params_file: Path, joints: Sequence[str], physics: Physics | None = None
) -> dict[str, list[str]]:
    """The command lines of the simulated robot ('sim') and the node ('node').

    Args:
        urdf: the robot's URDF file.
        params_file: the node's params file.
        joints: the commanded joints, in command order (the simulated robot's joints).
        physics: the simulated robot's physics (default: ideal).
    """
    ph = physics or Physics()
    sim_urdf = ph.urdf or urdf
    sim = ["itasc_ros.tools.sim_robot", "--ros-args", "-p", f"urdf_file:={sim_urdf}"]
    sim += ["-p", f"rate:={SIM_RATE}", "-p", "joints:=[" + ",".join(joints) + "]"]
    if ph.kind != "ideal":
        sim += ["-p", f"physics:={ph.kind}", "-p", f"actuator_lag:={ph.lag!r}"]
    node = ["itasc_ros.ros.itasc_node", "--ros-args", "--params-file", str(params_file)]
    node += ["-p", f"urdf_file:={urdf}"]
    if ph.node_lag > 0.0:
        node += ["-p", f"actuator_lag:={ph.node_lag!r}"]
    return {"sim": [sys.executable, "-m", *sim], "node": [sys.executable, "-m", *node]}


def start_process(args: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``args`` with ``env``, its stdout and stderr into ``log_path``, no stdin."""
    log = log_path.open("wb")
    try:
        return subprocess.Popen(
            args, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    finally:
        log.close()


def stop_process(p: subprocess.Popen[bytes], timeout: float = 5.0) -> int | None:
    """SIGINT, wait up to ``timeout`` [s], then SIGKILL. Returns the exit code."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            try:
                p.wait(5.0)
            except subprocess.TimeoutExpired:
                pass
    return p.returncode


def log_tail(path: Path, lines: int = 15) -> str:
    """The last ``lines`` lines of a log file ('' when it cannot be read)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


__all__ = [
    "LOG_NAMES",
    "NODE",
    "SIM_RATE",
    "Physics",
    "child_env",
    "log_tail",
    "process_commands",
    "start_process",
    "stop_process",
]
