"""What one loop run starts and measures against: the robot, the command lines, the logs.

Read before any process starts: the bundled robot's URDF and ``config/<robot>.yaml`` (the node's
parameters), the effector and the home-pose target frame, the velocity limits, and the command
lines of the node and of the simulated robot (with the real-time parameters where asked).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from itasc_ros.core import ControllerConfig, KinematicTree
from itasc_ros.core.kinematics.home_poses import home_pose
from itasc_ros.core.kinematics.spatial import matrix_to_quat
from itasc_ros.params import config_from_parameters, read_params_file
from itasc_ros.tools.dds_env import local_dds_env, private_domain_id
from itasc_ros.tools.resources import robot_urdf, share_file

from .errors import BenchError
from .scheduling import NODE_PRIORITY, SIM_PRIORITY, split_cpus


@dataclass(frozen=True)
class LoopRobot:
    """The robot of a run, as the node is configured for it.

    Attributes:
        name: Bundled robot name ('panda', 'ur5').
        urdf: ``urdf/<name>.urdf``.
        config_path: ``config/<name>.yaml``, the node's parameters file.
        command_topic: The node's ``command_out_topic``.
        tree: The robot's kinematic tree.
        joints: The controlled joints (the commands' order).
        effector: The link of the first constraint that takes a target pose.
        center: (3,) the effector's position at the home pose, root frame [m].
        quat: (4,) the effector's orientation at the home pose (x, y, z, w).
        vmax: (n,) the joints' URDF velocity limits [rad/s | m/s].
    """

    name: str
    urdf: Path
    config_path: Path
    command_topic: str
    tree: KinematicTree
    joints: list[str]
    effector: str
    center: np.ndarray
    quat: np.ndarray
    vmax: np.ndarray


def _effector(config: ControllerConfig, tree: KinematicTree) -> str:
    """The effector link of the first constraint that takes a target pose."""
    for c in config.constraints:
        if c.takes_target:
            return str(c.kind.resolve_settings(c.settings, tree)["link"])
    raise BenchError("the node configuration has no pose constraint to give a target to")


def load_robot(name: str) -> LoopRobot:
    """The bundled robot ``name`` and its node configuration.

    Raises:
        FileNotFoundError: No bundled URDF or config for ``name``.
        BenchError: The configuration has no constraint that takes a target pose.
    """
    urdf = robot_urdf(name)
    config_path = share_file("config", f"{name}.yaml")
    params = read_params_file(config_path)
    config = config_from_parameters(params)
    command_topic = str(params.get("command_out_topic", "/forward_velocity_controller/commands"))
    tree = KinematicTree.from_urdf_file(urdf)
    joints = list(config.joints or tree.joint_names)
    effector = _effector(config, tree)
    q_home = home_pose(tree)  # (n_tree,) the sim robot's initial pose
    tip = tree.forward_kinematics(q_home, effector)  # (4, 4)
    center = tip[:3, 3].copy()  # (3,)
    quat = matrix_to_quat(tip[:3, :3])  # (x, y, z, w)
    vmax = tree.velocity_limits[[tree.joint_index(j) for j in joints]]  # (n,)
    return LoopRobot(
        name, urdf, config_path, command_topic, tree, joints, effector, center, quat, vmax
    )


@dataclass(frozen=True)
class LoopPlan:
    """One run: its robot, rates, processes and where they write.

    Attributes:
        robot: The robot.
        rate: The node's ``control_rate`` [Hz].
        sim_rate: The sim robot's rate [Hz].
        trigger: The node's ``control_trigger``.
        realtime: Whether the run uses SCHED_FIFO priorities and a CPU for the node.
        node_module: The node's module, run with ``python -m``.
        domain: The ROS domain id of the run.
        env: The child processes' environment (local DDS, ``domain``).
        logs: Where the node's and the sim robot's output go.
        node_cmd: The node's command line.
        sim_cmd: The sim robot's command line.
        other_cpus: ``realtime``: the CPUs of the sim robot and this process.
    """

    robot: LoopRobot
    rate: float
    sim_rate: float
    trigger: str
    realtime: bool
    node_module: str
    domain: int
    env: dict[str, str]
    logs: Path
    node_cmd: list[str]
    sim_cmd: list[str]
    other_cpus: list[int]


def make_plan(
    robot: str,
    rate: float,
    *,
    sim_rate: float | None,
    trigger: str,
    realtime: bool,
    domain: int | None,
    log_dir: str | Path | None,
    node_module: str,
    node_params: Mapping[str, str] | None = None,
) -> LoopPlan:
    """The plan of a run (see :func:`~itasc_bench.loop.run.run_loop_bench` for the args).

    Returns:
        The plan; its log directory exists.
    """
    r = load_robot(robot)
    sim_rate = rate if sim_rate is None else sim_rate
    domain = private_domain_id(os.getpid() + 53) if domain is None else domain
    env = local_dds_env(domain)
    logs = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="itasc_loop_"))
    logs.mkdir(parents=True, exist_ok=True)
    node_cmd = [
        sys.executable, "-m", node_module, "--ros-args",
        "--params-file", str(r.config_path),
        "-p", f"urdf_file:={r.urdf}",
        "-p", f"control_rate:={float(rate)}",
        "-p", f"control_trigger:={trigger}",
    ]  # fmt: skip
    for k, v in (node_params or {}).items():
        node_cmd += ["-p", f"{k}:={v}"]
    sim_cmd = [
        sys.executable, "-m", "itasc_ros.tools.sim_robot", "--ros-args",
        "-p", f"urdf_file:={r.urdf}",
        "-p", f"rate:={float(sim_rate)}",
        "-p", f"command_topic:={r.command_topic}",
    ]  # fmt: skip
    node_cpus, other_cpus = split_cpus()
    if realtime:
        node_cmd += ["-p", f"thread_priority:={NODE_PRIORITY}"]
        sim_cmd += ["-p", f"thread_priority:={SIM_PRIORITY}"]
        if node_cpus:
            node_cmd += ["-p", f"cpu_affinity:={json.dumps(node_cpus)}"]
            sim_cmd += ["-p", f"cpu_affinity:={json.dumps(other_cpus)}"]
    return LoopPlan(
        r, rate, sim_rate, trigger, realtime, node_module, domain, env, logs, node_cmd, sim_cmd,
        other_cpus,
    )  # fmt: skip


__all__ = ["LoopPlan", "LoopRobot", "load_robot", "make_plan"]
