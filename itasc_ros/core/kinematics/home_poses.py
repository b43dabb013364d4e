"""Home poses of the bundled robots, keyed by the URDF robot name (``KinematicTree.name``).

The one place the home joint positions are written. The simulated robot, the demo, the
benchmarks, the scenarios and the tests start from these poses: away from joint limits and
singularities, with the effector in front of the robot. Values are in the order of
``KinematicTree.joint_names`` of the bundled URDFs ([rad]). ROS-free.
"""

from __future__ import annotations

import numpy as np

from .tree import KinematicTree

#: Robot name -> home joint positions [rad], in the tree's joint order.
HOME_POSES: dict[str, tuple[float, ...]] = {
    # Franka Emika Panda: the "ready" pose of franka_ros / MoveIt.
    "panda": (0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785),
    # Universal Robots UR5: upright elbow, wrist pointing down.
    "ur5": (0.0, -1.571, 1.571, -1.571, -1.571, 0.0),
}


def home_pose(tree: KinematicTree) -> np.ndarray:
    """(n,) the home pose of ``tree`` if its robot has one (and it fits), else its neutral pose.

    Args:
        tree: the robot; its name selects the entry of :data:`HOME_POSES`.

    Returns:
        A new array [rad or m] in ``tree.joint_names`` order, within the position limits.
    """
    home = HOME_POSES.get(tree.name)
    if home is not None and len(home) == tree.n_joints:
        return tree.clamp(np.array(home, dtype=float))
    return tree.neutral()


def home_of(robot: str) -> np.ndarray:
    """(n,) a new array of the home pose of ``robot`` as written in :data:`HOME_POSES` [rad].

    Not clamped (no tree at hand): for a robot whose URDF has the joint order of the entry.

    Args:
        robot: a key of :data:`HOME_POSES` ('panda', 'ur5').

    Raises:
        KeyError: ``robot`` has no home pose.
    """
    return np.array(HOME_POSES[robot], dtype=float)


__all__ = ["HOME_POSES", "home_of", "home_pose"]
