"""The URDF joints from a root link to a tip link, as every peer builds its chain from them.

The URDF is read by the solver's own reader (:func:`itasc_ros.core.kinematics.parse_urdf`), so
the peers and the solver see the same joints: origins, axes, types and limits. The limits of
revolute and prismatic joints are narrowed to the ``<safety_controller>`` soft limits, as ROS
TRAC-IK and MoveIt do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from lxml import etree

from itasc_ros.core.errors import UnknownLinkError, UnknownNameError, UnsupportedJointError
from itasc_ros.core.kinematics.urdf import JointSpec, RobotSpec, parse_urdf

from .contract import FloatArray

_MOVABLE_TYPES = ("revolute", "continuous", "prismatic")

#: The limit [rad | m] a position IK peer gets for an unlimited (continuous) joint: the largest
#: float32, what ROS TRAC-IK uses.
UNLIMITED = float(np.finfo(np.float32).max)


@dataclass(frozen=True)
class ChainJoint:
    """One URDF joint on the root-to-tip path.

    Attributes:
        name: Joint name.
        type: URDF type: 'revolute', 'continuous', 'prismatic' or 'fixed'.
        child: Child link name.
        xyz: Origin translation [m], parent link frame.
        rotation: Origin rotation matrix, row by row (9 values), parent link frame.
        axis: Unit joint axis in the joint frame.
        lower: Lower position limit [rad] or [m]; -inf for continuous joints.
        upper: Upper position limit [rad] or [m]; +inf for continuous joints.
    """

    name: str
    type: str
    child: str
    xyz: tuple[float, float, float]
    rotation: tuple[float, ...]
    axis: tuple[float, float, float]
    lower: float
    upper: float

    @property
    def movable(self) -> bool:
        """Whether the joint has a degree of freedom."""
        return self.type in _MOVABLE_TYPES


_XML_DECLARATION = re.compile(r"^\ufeff?<\?xml\s[^>]*\?>")


def _soft_limits(urdf_xml: str) -> dict[str, tuple[float, float]]:
    """``<safety_controller>`` soft limits by joint name (URDF default 0 for a missing one).

    The solver's URDF reader keeps only the kinematic elements, so these are read here, from a
    document :func:`~itasc_ros.core.kinematics.parse_urdf` has already accepted (bounded, no DTD).
    """
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    # lxml refuses a str with an XML encoding declaration; the str is decoded already.
    root = etree.fromstring(_XML_DECLARATION.sub("", urdf_xml, count=1), parser)
    out: dict[str, tuple[float, float]] = {}
    for joint in root.iterfind("joint"):
        safety = joint.find("safety_controller")
        if safety is not None:
            out[str(joint.get("name"))] = (
                float(safety.get("soft_lower_limit", 0.0)),
                float(safety.get("soft_upper_limit", 0.0)),
            )
    return out


def root_link(spec: RobotSpec) -> str:
    """The link without a parent joint (:func:`parse_urdf` checked that there is one)."""
    children = {j.child for j in spec.joints}
    return next(link for link in spec.links if link not in children)


def _chain_joint(joint: JointSpec, soft: tuple[float, float] | None) -> ChainJoint:
    origin = joint.origin  # (4, 4)
    if joint.type == "fixed":
        lower, upper = 0.0, 0.0
    else:
        lower, upper = joint.lower, joint.upper  # +-inf for continuous joints
        if soft is not None and joint.type != "continuous":  # as ROS TRAC-IK and MoveIt do
            lower, upper = max(lower, soft[0]), min(upper, soft[1])
    return ChainJoint(
        name=joint.name,
        type=joint.type,
        child=joint.child,
        xyz=(float(origin[0, 3]), float(origin[1, 3]), float(origin[2, 3])),
        rotation=tuple(float(v) for v in origin[:3, :3].ravel()),
        axis=(float(joint.axis[0]), float(joint.axis[1]), float(joint.axis[2])),
        lower=lower,
        upper=upper,
    )


def spec_chain(spec: RobotSpec, urdf_xml: str, root: str, tip: str) -> list[ChainJoint]:
    """:func:`urdf_chain` on a parsed URDF.

    Args:
        spec: The URDF as :func:`~itasc_ros.core.kinematics.parse_urdf` read it.
        urdf_xml: The same URDF document (only for the soft limits).
        root: Name of the base link of the chain.
        tip: Name of the tip link of the chain.

    Returns:
        The joints on the path, in order from ``root`` to ``tip``.
    """
    for name in (root, tip):
        if name not in spec.links:
            raise UnknownLinkError(name, spec.links)
    path = _joint_path(spec, root, tip)
    limited = any(j.type in ("revolute", "prismatic") for j in path)
    soft = _soft_limits(urdf_xml) if limited else {}
    return [_chain_joint(j, soft.get(j.name)) for j in path]


def _joint_path(spec: RobotSpec, root: str, tip: str) -> list[JointSpec]:
    """The joints from ``root`` down to ``tip``, root first (no mimic joint on the way)."""
    parent_joint = {j.child: j for j in spec.joints}
    path: list[JointSpec] = []
    link = tip
    while link != root:
        if link not in parent_joint:
            ancestors, up = [], tip
            while up in parent_joint:
                up = parent_joint[up].parent
                ancestors.append(up)
            raise UnknownNameError(f"ancestor link of {tip!r}", root, ancestors)
        joint = parent_joint[link]
        if joint.mimic is not None:
            raise UnsupportedJointError(
                f"joint {joint.name!r} mimics {joint.mimic.joint!r}; the peer chains do not "
                "support mimic joints"
            )
        path.append(joint)
        link = joint.parent
    path.reverse()
    return path


def urdf_chain(urdf_xml: str, root: str, tip: str) -> list[ChainJoint]:
    """The URDF joints from ``root`` to ``tip`` (all types, root first).

    The URDF is read by the solver's reader, :func:`itasc_ros.core.kinematics.parse_urdf`: origins,
    axes, types and limits are the ones :class:`~itasc_ros.core.KinematicTree` uses. The limits
    of revolute and prismatic joints are narrowed to the ``<safety_controller>`` soft limits, as
    ROS TRAC-IK and MoveIt do.

    Args:
        urdf_xml: URDF document.
        root: Name of the base link of the chain.
        tip: Name of the tip link of the chain.

    Returns:
        The joints on the path, in order from ``root`` to ``tip``.

    Raises:
        UnknownLinkError: If ``root`` or ``tip`` is not a link.
        UnknownNameError: If ``root`` is not an ancestor of ``tip`` (lists the ancestors).
        UnsupportedJointError: For a floating or planar joint in the URDF, or a mimic joint on
            the path.
        ItascError: For any other URDF that :func:`~itasc_ros.core.kinematics.parse_urdf` refuses.
    """
    return spec_chain(parse_urdf(urdf_xml), urdf_xml, root, tip)


def solver_limits(chain: Sequence[ChainJoint]) -> tuple[FloatArray, FloatArray]:
    """The joints' limits as a position IK solver takes them: finite, +-:data:`UNLIMITED`.

    Args:
        chain: The movable joints of a chain, root to tip (n of them).

    Returns:
        ``(lower, upper)`` [rad | m], shape (n,) each.
    """
    lower = np.array([max(j.lower, -UNLIMITED) for j in chain])
    upper = np.array([min(j.upper, UNLIMITED) for j in chain])
    return lower, upper


__all__ = ["UNLIMITED", "ChainJoint", "root_link", "solver_limits", "spec_chain", "urdf_chain"]
