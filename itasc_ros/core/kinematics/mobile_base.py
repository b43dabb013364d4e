"""A controlled mobile base as joints of the tree: virtual joints between the world and the root.

A mobile base is driven by a velocity (a ``geometry_msgs/Twist`` on ``cmd_vel``), not by joint
positions: its pose is measured (odometry), not commanded. The controller therefore puts the
base's pose in ``Xu`` (the root frame is the base's pose at each tick, from odometry) and its
velocities in ``q'``: the tree gets virtual joints in front of the URDF's root, each at position
zero at every tick, whose velocities are the base's twist in its own axes:

========================  =======================================================
``holonomic``             ``base_x`` (prismatic along x), ``base_y`` (prismatic
                          along y), ``base_yaw`` (continuous about z)
``diff_drive``            ``base_x``, ``base_yaw`` (no sideways motion)
========================  =======================================================

At zero positions these joints are the identity: every link's pose in the root frame is the
URDF's, and the Jacobian's base columns are the base's own motions (translations along its x
and y axes, a rotation about its z axis through its origin) -- exactly ``cmd_vel``'s
``linear.x``, ``linear.y`` and ``angular.z``. A differential drive cannot move sideways: its
tree has no ``base_y``, so no command ever asks it to.

A free-floating base (:func:`with_floating_base`, for whole-body position IK of a legged robot)
is the same idea with six joints and finite ranges: three translations, then yaw, pitch and
roll; its pose is what the IK finds, the feet held by constraints.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError
from .robot_spec import JointSpec, RobotSpec
from .tree import KinematicTree, _Model

#: The valid base kinds and their virtual joints, in command order.
BASE_JOINTS: dict[str, tuple[str, ...]] = {
    "none": (),
    "holonomic": ("base_x", "base_y", "base_yaw"),
    "diff_drive": ("base_x", "base_yaw"),
}
#: The virtual links between the world and the root: the base's frame at the tick, then one
#: link per joint but the last (whose child is the URDF's root).
BASE_LINK = "itasc_base"

#: The joints of a free-floating base (:func:`with_floating_base`), from the world to the root.
FLOATING_JOINTS = ("base_x", "base_y", "base_z", "base_yaw", "base_pitch", "base_roll")

_AXES = {
    "base_x": (1.0, 0.0, 0.0),
    "base_y": (0.0, 1.0, 0.0),
    "base_z": (0.0, 0.0, 1.0),
    "base_yaw": (0.0, 0.0, 1.0),
    "base_pitch": (0.0, 1.0, 0.0),
    "base_roll": (1.0, 0.0, 0.0),
}


def with_mobile_base(
    tree: KinematicTree, kind: str, max_speed: float, max_angular_speed: float
) -> KinematicTree:
    """``tree`` behind the virtual joints of a ``kind`` base (see the module).

    Args:
        tree: the robot's tree (its root is the base's link).
        kind: a key of :data:`BASE_JOINTS` other than ``none``.
        max_speed: the base's linear velocity limit [m/s] (the prismatic joints').
        max_angular_speed: its angular velocity limit [rad/s] (``base_yaw``'s).

    Raises:
        ConfigError: an unknown kind, or the URDF already has a link or joint of those names.
    """
    joints = BASE_JOINTS.get(kind)
    if not joints:
        raise ConfigError(
            f"base_kind {kind!r} has no base joints; valid kinds with a base: "
            + ", ".join(k for k, v in BASE_JOINTS.items() if v)
        )
    specs = [
        (j, "continuous" if j == "base_yaw" else "prismatic", _AXES[j], -math.inf, math.inf,
         max_angular_speed if j == "base_yaw" else max_speed)
        for j in joints
    ]  # fmt: skip
    return _behind_virtual_joints(tree, specs)


def with_floating_base(
    tree: KinematicTree, reach: float = 1.0, max_speed: float = 1.0, max_angular_speed: float = 2.0
) -> KinematicTree:
    """``tree`` behind the six virtual joints of a free-floating base (see the module).

    For whole-body position IK of a legged robot (its feet held by constraints, not by the
    URDF): ``base_x``, ``base_y``, ``base_z`` (prismatic along the world's axes, within
    +-``reach``), then ``base_yaw`` (about z, within +-pi), ``base_pitch`` (about
    the turned y) and ``base_roll`` (about the turned x), within +-pi/2: roll-pitch-yaw angles,
    singular only at a pitch of +-90 degrees. At zero positions the root is at the world's
    origin, as the URDF draws it.

    Args:
        tree: the robot's tree (its root is the floating link, e.g. a humanoid's pelvis).
        reach: the base's translation range each way from the origin [m].
        max_speed: the base's linear velocity limit [m/s].
        max_angular_speed: its angular velocity limit [rad/s].

    Raises:
        ConfigError: the URDF already has a link or joint of those names, or ``reach`` is not
            a finite positive distance.
    """
    if not (math.isfinite(reach) and reach > 0.0):
        raise ConfigError(
            f"the floating base's reach must be a finite distance > 0 m, got {reach}"
        )
    half = 0.5 * math.pi
    ranges = {"base_yaw": math.pi, "base_pitch": half, "base_roll": half}
    specs = [
        (j, "prismatic" if j not in ranges else "revolute", _AXES[j], -ranges.get(j, reach),
         ranges.get(j, reach), max_speed if j not in ranges else max_angular_speed)
        for j in FLOATING_JOINTS
    ]  # fmt: skip
    return _behind_virtual_joints(tree, specs)


def _behind_virtual_joints(
    tree: KinematicTree,
    joints: list[tuple[str, str, tuple[float, float, float], float, float, float]],
) -> KinematicTree:
    """``tree`` behind a chain of virtual joints (name, type, axis, lower, upper, velocity).

    Raises:
        ConfigError: the URDF already has a link or joint of those names.
    """
    names = [j[0] for j in joints]
    spec: RobotSpec = tree.spec
    links = [BASE_LINK] + [f"{BASE_LINK}_{j}" for j in names[:-1]]
    clash = [n for n in (*links, *names) if n in spec.links or n in tree.all_joint_names]
    if clash:
        raise ConfigError(f"the URDF already has {clash}: they name the base's virtual joints")
    parents, children = links, [*links[1:], tree.root_link]
    specs = [
        JointSpec(
            name=name,
            type=kind,
            parent=parent,
            child=child,
            origin=np.eye(4),
            axis=np.array(axis),
            lower=lower,
            upper=upper,
            velocity=velocity,
        )
        for (name, kind, axis, lower, upper, velocity), parent, child in zip(
            joints, parents, children, strict=True
        )
    ]
    model = _Model(
        RobotSpec(
            spec.name,
            [*links, *spec.links],
            [*specs, *spec.joints],
            spec.inertials,
            spec.bad_inertials,
            spec.free_root_joint,
        )
    )
    model.xml = tree.urdf_xml
    return KinematicTree(model)


__all__ = ["BASE_JOINTS", "BASE_LINK", "FLOATING_JOINTS", "with_floating_base", "with_mobile_base"]
