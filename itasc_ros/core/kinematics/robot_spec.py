"""The checked description of a URDF: its links, joints, mimic relations and inertials.

Plain frozen records, built by :func:`itasc_ros.core.kinematics.urdf.parse_urdf` and read by
the kinematic tree; nothing here parses or checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

SUPPORTED_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed")
"""Joint types the kinematic tree represents; mimic joints of the movable ones too."""


@dataclass(frozen=True)
class MimicSpec:
    """A mimic relation: value = multiplier * value(joint) + offset."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class JointSpec:
    """One URDF joint, checked.

    Attributes:
        name: joint name.
        type: one of :data:`SUPPORTED_JOINT_TYPES`.
        parent: parent link name.
        child: child link name.
        origin: (4, 4) pose of the joint frame in the parent link frame.
        axis: (3,) unit axis in the joint frame.
        lower: position lower limit [rad or m] (-inf when unlimited).
        upper: position upper limit [rad or m] (+inf when unlimited).
        velocity: velocity limit [rad/s or m/s] (+inf when the URDF gives none).
        mimic: mimic relation, or None.
    """

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray = field(repr=False)
    axis: np.ndarray = field(repr=False)
    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf
    mimic: MimicSpec | None = None


@dataclass(frozen=True)
class InertialSpec:
    """A link's ``<inertial>``: its mass and the centre of mass in the link frame.

    Attributes:
        mass: [kg] (>= 0).
        com: (3,) the centre of mass in the link frame [m] (the inertial origin's xyz).
    """

    mass: float
    com: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class RobotSpec:
    """A checked URDF: its name, links, joints (in document order) and inertials.

    Attributes:
        inertials: link name -> its mass and centre of mass (links with an ``<inertial>``).
        bad_inertials: links whose ``<inertial>`` cannot be read (mass missing, negative,
            non-finite; origin not three finite numbers), with the reason.
        free_root_joint: the ``floating`` / ``planar`` joint (name and type) that held the
            robot to a world link in the URDF, left out: the root's pose comes from odometry
            ('' when there was none).
    """

    name: str
    links: list[str]
    joints: list[JointSpec]
    inertials: dict[str, InertialSpec] = field(default_factory=dict)
    bad_inertials: dict[str, str] = field(default_factory=dict)
    free_root_joint: str = ""


__all__ = ["SUPPORTED_JOINT_TYPES", "InertialSpec", "JointSpec", "MimicSpec", "RobotSpec"]
