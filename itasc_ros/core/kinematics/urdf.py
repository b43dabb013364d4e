"""URDF -> joint/link description, with clear errors for bad or hostile URDFs.

:func:`parse_urdf` reads the document with the hardened XML reader of ``urdf_xml`` (no DTD,
no entity expansion, no network; bounded size, markup and depth), then checks the raw
elements (``urdf_structure``: counts and names; ``urdf_joints``: joint types, parent, child,
axis), so that a hostile URDF is rejected in well under a second (``test/data/hostile_urdfs``).
Only the kinematic part is handed to ``urdf_parser_py`` (PyPI ``urdfdom-py``): link names and
the joints' parent, child, origin, axis, limit and mimic. Each link's ``<inertial>`` mass and
centre of mass are read from the XML (:class:`InertialSpec`; an unreadable one is listed in
``RobotSpec.bad_inertials``, for the centre-of-mass constraint to refuse, and otherwise
ignored). Visuals, collisions, materials, transmissions and
unknown tags or attributes are accepted silently (as robot_state_publisher and RViz accept
them), even where ``urdf_parser_py`` alone would reject them (e.g. old-style transmissions, a
texture without a file name, a ``<robot>`` without a name). The result, a :class:`RobotSpec`
(``robot_spec``), is checked to form one tree (``urdf_structure``).
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
from lxml import etree

from ..errors import UrdfSyntaxError
from .robot_spec import SUPPORTED_JOINT_TYPES, InertialSpec, JointSpec, MimicSpec, RobotSpec
from .urdf_joints import MAX_ORIGIN_OFFSET, check_joint_element, joint_spec
from .urdf_structure import (
    MAX_LINKS,
    MAX_NAME_LENGTH,
    check_counts,
    check_name_length,
    check_structure,
    element_names,
)
from .urdf_xml import MAX_URDF_BYTES, MAX_XML_DEPTH, MAX_XML_TAGS, XACRO_HINT, read_urdf_xml

_urdf_parser_lock = threading.Lock()

# The attributes of the kinematic elements handed to urdf_parser_py (everything else is dropped
# first, so that thousands of unknown attributes cannot slow it down).
_KINEMATIC_ATTRIBUTES = {
    "parent": ("link",),
    "child": ("link",),
    "origin": ("xyz", "rpy"),
    "axis": ("xyz",),
    "limit": ("lower", "upper", "effort", "velocity"),
    "mimic": ("joint", "multiplier", "offset"),
}

_KINEMATIC_JOINT_TAGS = ("parent", "child", "origin", "axis", "limit", "mimic")


def _inertials(links: list[etree._Element]) -> tuple[dict[str, InertialSpec], dict[str, str]]:
    """The links' ``<inertial>`` masses and centres of mass, and the unreadable ones."""
    good: dict[str, InertialSpec] = {}
    bad: dict[str, str] = {}
    for el in links:
        name = str(el.get("name") or "")
        inertial = el.find("inertial")
        if inertial is None:
            continue
        mass_el = inertial.find("mass")
        try:
            if mass_el is None:
                raise ValueError("<inertial> without <mass>")
            mass = float(mass_el.get("value") or "nan")
            if not (math.isfinite(mass) and mass >= 0.0):
                raise ValueError(f"mass {mass_el.get('value')!r} is not a finite number >= 0")
            origin = inertial.find("origin")
            xyz = (origin.get("xyz") if origin is not None else None) or "0 0 0"
            com = np.array([float(v) for v in xyz.split()])
            if com.shape != (3,) or not np.all(np.isfinite(com)):
                raise ValueError(f"origin xyz {xyz!r} is not three finite numbers")
            rpy = (origin.get("rpy") if origin is not None else None) or "0 0 0"
            if len(rpy.split()) != 3 or not all(math.isfinite(float(v)) for v in rpy.split()):
                raise ValueError(f"origin rpy {rpy!r} is not three finite numbers")
        except ValueError as exc:
            bad[name] = str(exc)
            continue
        good[name] = InertialSpec(mass, com)
    return good, bad


@contextlib.contextmanager
def _quiet_urdf_parser() -> Iterator[list[str]]:
    """Silence urdf_parser_py's per-attribute warnings on stderr; collect them instead.

    ``on_error`` is a module global of urdf_parser_py, so concurrent parses are serialized.
    """
    from urdf_parser_py.xml_reflection import core

    messages: list[str] = []
    with _urdf_parser_lock:
        saved = core.on_error
        core.on_error = messages.append
        try:
            yield messages
        finally:
            core.on_error = saved


def parse_urdf(xml: str | bytes) -> RobotSpec:
    """Parse and check a URDF.

    The size limit is this module's :data:`MAX_URDF_BYTES`.

    Args:
        xml: the URDF document (str or bytes; an XML declaration is fine).

    Returns:
        The checked description of links and joints.

    Raises:
        UrdfSyntaxError: not XML, not ``<robot>``, entities, too large or too deep.
        DuplicateNameError: two links or two joints share a name.
        UnsupportedJointError: floating, planar or unknown joint type (but a free joint that
            holds the whole robot to a world link, which is left out: see
            :func:`_free_root_joint`).
        InvalidJointError: zero/non-finite axis, non-finite origin or limits, bad mimic.
        UrdfStructureError: missing link, cycle, several roots.
    """
    root = read_urdf_xml(xml, MAX_URDF_BYTES)
    # Check names and types on the raw XML first: urdf_parser_py is lenient about them.
    raw_links = root.findall("link")
    raw_joints = root.findall("joint")
    check_counts(raw_links, raw_joints)
    check_name_length("robot", str(root.get("name") or ""))
    link_names = element_names("link", raw_links)
    element_names("joint", raw_joints)
    free = _free_root_joint(raw_joints)
    skipped: set[str] = set()
    if free is not None:  # the world link and its free joint: the base's pose is odometry's
        skipped = {str(free.get("name")), str(_parent_of(free))}
        raw_joints = [el for el in raw_joints if el is not free]
        raw_links = [el for el in raw_links if el.get("name") not in skipped]
        link_names = [n for n in link_names if n not in skipped]
    for el in raw_joints:
        check_joint_element(el)
    robot = _read_kinematic_part(root, skipped)
    joints = [joint_spec(j) for j in robot.joints]
    inertials, bad_inertials = _inertials(raw_links)
    spec = RobotSpec(
        name=str(root.get("name") or ""),
        links=list(link_names),
        joints=joints,
        inertials=inertials,
        bad_inertials=bad_inertials,
        free_root_joint="" if free is None else f"{free.get('name')} ({free.get('type')})",
    )
    check_structure(spec)
    return spec


def _free_root_joint(joints: list[etree._Element]) -> etree._Element | None:
    """A ``floating`` or ``planar`` joint that holds the whole robot to a world link, or None.

    URDFs of humanoids, quadrupeds and mobile bases often name the base's free motion so: a
    parent link that is no joint's child and has no other joint. That joint is not part of the
    tree the controller solves: the root link's pose in the world comes from odometry
    (``world_frame``). A free joint anywhere else stays unsupported.
    """
    children = {str(sub.get("link")) for el in joints for sub in el.findall("child")}
    for el in joints:
        parent = el.find("parent")
        if el.get("type") not in ("floating", "planar") or parent is None:
            continue
        link = str(parent.get("link"))
        others = [j for j in joints if j is not el and _parent_of(j) == link]
        if link not in children and not others:
            return el
    return None


def _parent_of(el: etree._Element) -> str | None:
    parent = el.find("parent")
    return None if parent is None else parent.get("link")


def _read_kinematic_part(root: etree._Element, skipped: set[str] | None = None) -> Any:
    """The ``urdf_parser_py.urdf.URDF`` of the kinematic part of ``<robot>``.

    Raises:
        UrdfSyntaxError: ``urdf_parser_py`` rejects a value (with the xacro hint for ``${``).
    """
    from urdf_parser_py import urdf as up
    from urdf_parser_py.xml_reflection.core import Path

    kin = _kinematic_part(root, skipped or set())
    with _quiet_urdf_parser():
        try:
            return up.URDF.from_xml(kin, Path(up.URDF.XML_REFL.tag, tree=etree.ElementTree(kin)))
        except Exception as exc:  # urdf_parser_py raises many kinds for bad values
            msg = " ".join(str(exc).split())
            if len(msg) > 500:
                msg = msg[:500] + "..."
            hint = XACRO_HINT if ("${" in msg or "$(" in msg) else ""
            raise UrdfSyntaxError(f"URDF could not be read: {msg}{hint}") from exc


def _kinematic_part(root: etree._Element, skipped: set[str]) -> etree._Element:
    """A copy of ``<robot>`` with bare ``<link name>`` and the joints' kinematic elements only.

    Links and joints named in ``skipped`` (a free root joint and its world link) are left out.
    """
    kin = etree.Element("robot", name=root.get("name") or "unnamed")
    for el in root:
        if el.get("name") in skipped and el.tag in ("link", "joint"):
            continue
        if el.tag == "link":
            etree.SubElement(kin, "link", name=el.get("name") or "")
        elif el.tag == "joint":
            joint = etree.SubElement(kin, "joint", name=el.get("name") or "")
            joint.set("type", el.get("type") or "")
            for sub in el:
                if sub.tag in _KINEMATIC_JOINT_TAGS:
                    attrs = {
                        k: v
                        for k in _KINEMATIC_ATTRIBUTES[sub.tag]
                        if (v := sub.get(k)) is not None
                    }
                    etree.SubElement(joint, sub.tag, attrs)
    return kin


__all__ = [
    "MAX_LINKS",
    "MAX_NAME_LENGTH",
    "MAX_ORIGIN_OFFSET",
    "MAX_URDF_BYTES",
    "MAX_XML_DEPTH",
    "MAX_XML_TAGS",
    "SUPPORTED_JOINT_TYPES",
    "InertialSpec",
    "JointSpec",
    "MimicSpec",
    "RobotSpec",
    "parse_urdf",
]
