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


def process_commands(urdf: Path, params_file: Path, joints: Sequence[str]) -> dict[str, list[str]]:
    """The command lines of the simulated robot ('sim') and the node ('node').

    Args:
        urdf: the robot's URDF file.
        params_file: the node's params file.
        joints: the commanded joints, in command order (the simulated robot's joints).
    """
    sim = ["itasc_ros.tools.sim_robot", "--ros-args", "-p", f"urdf_file:={urdf}"]
    sim += ["-p", f"rate:={SIM_RATE}", "-p", "joints:=[" + ",".join(joints) + "]"]
    node = ["itasc_ros.ros.node", "--ros-args", "--params-file", str(params_file)]
    node += ["-p", f"urdf_file:={urdf}"]
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
    "child_env",
    "log_tail",
    "process_commands",
    "start_process",
    "stop_process",
]
