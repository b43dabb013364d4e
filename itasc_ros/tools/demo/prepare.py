"""What a DDS demo run needs, resolved and checked from the command line before it starts.

The robot's URDF and params file, its configuration and kinematic tree, the home pose and the
targets, the phases, the output folder and the DDS domain: every user mistake among them is
found here, before a process starts.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.cli import UsageError, writable_dir
from itasc_ros.core import ItascError, KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_pose
from itasc_ros.params import config_from_parameters, read_params_file
from itasc_ros.tools.dds_env import apply_local_dds_env
from itasc_ros.tools.demo.phases import (
    DEFAULT_DURATION,
    STEP_HOLD_MIN,
    TRACKING_MIN,
    Phase,
    min_duration,
    plan_phases,
)
from itasc_ros.tools.demo.processes import Physics
from itasc_ros.tools.demo.target_path import TargetPath
from itasc_ros.tools.replay import NodeSetup, load_setup
from itasc_ros.tools.resources import example_robot_data_file, robot_urdf, share_file

Array = NDArray[np.float64]

MAX_DOMAIN_ID = 232  # the largest ROS_DOMAIN_ID Fast DDS accepts (its port arithmetic)


@dataclass
class DemoSetup:
    """Everything a DDS demo run needs, resolved from the command line before it starts.

    Attributes:
        args: the command line. out: the output folder. urdf, params_file: the robot's files.
        config: the node's configuration. tree: the robot. tip: the pose constraint's link.
        gain: its gain [1/s]. home_q: (n,) the home pose [rad]. path: the targets.
        phases: the warm-up and the measured phases. setup: the node's topics.
        domain: the ROS domain id. domain_source: where it came from (for the first line).
    """

    args: argparse.Namespace
    out: Path
    urdf: Path
    params_file: Path
    config: Any
    tree: KinematicTree
    tip: str
    gain: float
    home_q: Array
    path: TargetPath
    phases: list[Phase]
    setup: NodeSetup
    domain: int
    domain_source: str
    physics: Physics = field(default_factory=Physics)

    @property
    def bag(self) -> Path:
        """The bag the run records."""
        return self.out / "bag"

    @property
    def cmd_joints(self) -> list[str]:
        """The commanded joints, in command order."""
        return list(self.config.joints or self.tree.joint_names)

    @property
    def measured(self) -> list[Phase]:
        """The measured phases (all but the warm-up)."""
        return [p for p in self.phases if p.measured]


def dds_domain(environ: Mapping[str, str]) -> tuple[int | None, str]:
    """The user's ``ROS_DOMAIN_ID`` (validated) or None for a private one, and where from.

    Raises:
        UsageError: a ROS_DOMAIN_ID that is no domain id.
    """
    raw = environ.get("ROS_DOMAIN_ID", "").strip()
    if not raw:
        return None, "private, picked by itasc-demo; set ROS_DOMAIN_ID to choose"
    try:
        domain = int(raw)
    except ValueError:
        raise UsageError(f"ROS_DOMAIN_ID={raw!r} is not an integer; valid: 0 to 232") from None
    if not 0 <= domain <= MAX_DOMAIN_ID:
        raise UsageError(f"ROS_DOMAIN_ID={domain} is out of range; valid: 0 to {MAX_DOMAIN_ID}")
    return domain, "ROS_DOMAIN_ID"


def timestamped_out(args: argparse.Namespace) -> Path:
    """``--out``, or ``demo_output/<YYYYmmdd-HHMMSS>`` when it is not given."""
    return Path(args.out or Path("demo_output") / datetime.now().strftime("%Y%m%d-%H%M%S"))


def _check_duration(duration: float) -> None:
    shortest = min_duration()
    if duration < shortest:
        raise UsageError(
            f"--duration {duration:g} is too short: the six phases need at least "
            f"{shortest:g} s to settle ({STEP_HOLD_MIN:g} s a step, {TRACKING_MIN:g} s the "
            f"shortest tracking phase); default {DEFAULT_DURATION:g}"
        )


def prepare(args: argparse.Namespace) -> DemoSetup:
    """Check the arguments and resolve the robot, the phases and the DDS domain.

    Sets this process's DDS environment (shared memory, the run's domain).

    Raises:
        UsageError: a duration too short, an output folder that cannot be written or already
            holds a bag, a ROS_DOMAIN_ID that is no domain id.
    """
    _check_duration(args.duration)
    wanted, source = dds_domain(os.environ)
    out = writable_dir(timestamped_out(args), "--out")
    if (out / "bag").exists():
        raise UsageError(f"{out / 'bag'} exists; choose another --out")
    urdf = robot_urdf(args.robot)
    params_file = share_file("config", f"{args.robot}.yaml")
    config = config_from_parameters(read_params_file(params_file))
    tree = KinematicTree.from_urdf(urdf.read_text(encoding="utf-8"))
    pose_cfg = next(c for c in config.constraints if c.takes_target)
    home_q = home_pose(tree)
    home = tree.forward_kinematics(home_q, pose_cfg.link)
    path = TargetPath(home[:3, 3], spatial.matrix_to_quat(home[:3, :3]), args.radius)
    domain = apply_local_dds_env(wanted)
    return DemoSetup(
        args=args,
        out=out,
        urdf=urdf,
        params_file=params_file,
        config=config,
        tree=tree,
        tip=pose_cfg.link,
        gain=pose_cfg.gain,
        home_q=home_q,
        path=path,
        phases=plan_phases(args.duration),
        setup=load_setup(None, params_file, str(urdf)),
        domain=domain,
        domain_source=source,
        physics=demo_physics(args),
    )


#: Robots whose physics model comes from example-robot-data (its inertias and meshes; the same
#: kinematics as the bundled URDF): robot -> the URDF in that package.
PHYSICS_URDFS = {"panda": "panda_description/urdf/panda.urdf"}


def demo_physics(args: argparse.Namespace) -> Physics:
    """The simulated robot's physics of the command line (``--physics``, the lags)."""
    kind = str(getattr(args, "physics", "ideal"))
    if kind == "ideal":
        lag = getattr(args, "node_lag", None)
        return Physics("ideal", 0.0, float(lag or 0.0))
    lag = float(args.actuator_lag)
    node_lag = lag if args.node_lag is None else float(args.node_lag)
    rel = PHYSICS_URDFS.get(str(args.robot))
    try:
        urdf = example_robot_data_file(rel) if rel else None
    except ItascError:  # example-robot-data missing: the bundled URDF, small inertias
        urdf = None
    return Physics(kind, lag, node_lag, urdf)


__all__ = ["MAX_DOMAIN_ID", "DemoSetup", "dds_domain", "prepare", "timestamped_out"]
