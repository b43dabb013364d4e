"""Several robots in one tree: each URDF's links and joints under its name, mounted in a world.

iTaSC's A and B matrices grow with every armature and are built the same way: a constraint
between links of two robots (one hand copying the other's pose, a loop closure through a held
object, a collision pair) is a constraint between two links of one tree. :func:`compose_urdf`
writes that tree as one URDF document: a world link and, under it, each robot's URDF with every
link and joint named ``<robot>_<name>`` (as multi-arm descriptions name them: ``left_``,
``right_``), its root mounted on the world at the robot's base pose by a fixed joint
``<robot>_mount``. Links keep their geometry (collision meshes, inertials), so everything a
URDF gives one robot it gives the composition. The robots' joints are the tree's, in the order
the robots are given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from lxml import etree
from numpy.typing import ArrayLike

from ..errors import ConfigError
from . import spatial
from .tree import KinematicTree
from .urdf_xml import read_urdf_xml

#: Between a robot's name and its URDF's names in the composed tree.
SEPARATOR = "_"
#: The elements of a robot's URDF the composition keeps (the others are its drivers').
KEPT = ("link", "joint", "material")


@dataclass(frozen=True)
class Mounted:
    """One robot of a composition.

    Attributes:
        name: the robot's name (its links and joints become ``<name>_<link>``).
        urdf: its URDF document.
        base: (4, 4) its root's pose in the world (None: the world's origin).
    """

    name: str
    urdf: str | bytes
    base: ArrayLike | None = None


def compose_urdf(robots: Sequence[Mounted], world: str = "world") -> str:
    """One URDF document of ``robots`` mounted in ``world`` (see the module).

    Raises:
        ConfigError: no robot, a name repeated or not a plain identifier, a base pose that is
            not a finite rigid transform. UrdfError: a robot's URDF cannot be read.
    """
    names = [r.name for r in robots]
    if not robots or len(set(names)) != len(names) or not all(n.isidentifier() for n in names):
        raise ConfigError(f"robots must have distinct names of letters, digits and _; got {names}")
    out = etree.Element("robot", name="_".join(names))
    etree.SubElement(out, "link", name=world)
    for r in robots:
        doc = read_urdf_xml(r.urdf)
        p = r.name + SEPARATOR
        root = _root_link(doc)
        mount = etree.SubElement(out, "joint", name=p + "mount", type="fixed")
        etree.SubElement(mount, "parent", link=world)
        etree.SubElement(mount, "child", link=p + root)
        base = _pose(r)
        rpy = spatial.matrix_to_rpy(base[:3, :3])
        etree.SubElement(mount, "origin", xyz=_text(base[:3, 3]), rpy=_text(rpy))
        for el in doc:
            if el.tag in KEPT:
                out.append(_prefixed(el, p))
    return etree.tostring(out, encoding="unicode")


def base_pose(name: str, values: Sequence[float]) -> np.ndarray:
    """A robot's base pose (4, 4) of its ``base_pose`` [x, y, z, qx, qy, qz, qw].

    Raises:
        ConfigError: not 7 finite values with a non-zero quaternion.
    """
    v = np.asarray(list(values), dtype=float)
    norm = float(np.linalg.norm(v[3:])) if v.shape == (7,) else 0.0
    if v.shape != (7,) or not np.all(np.isfinite(v)) or not norm > 1e-9:
        raise ConfigError(
            f"robots.{name}.base_pose must be [x, y, z, qx, qy, qz, qw] with a non-zero "
            f"quaternion, got {list(values)}"
        )
    return spatial.pose_from_xyz_quat(v[:3], v[3:] / norm)


def compose_robots(robots: Sequence[Mounted], world: str = "world") -> KinematicTree:
    """The kinematic tree of :func:`compose_urdf`'s document."""
    return KinematicTree.from_urdf(compose_urdf(robots, world))


def _prefixed(el: etree._Element, p: str) -> etree._Element:
    """A copy of a ``<link>``, ``<joint>`` or ``<material>`` with its names prefixed."""
    el = etree.fromstring(etree.tostring(el))
    if el.tag != "material" and el.get("name") is not None:
        el.set("name", p + str(el.get("name")))
    for sub in el:
        if sub.tag in ("parent", "child") and sub.get("link") is not None:
            sub.set("link", p + str(sub.get("link")))
        elif sub.tag == "mimic" and sub.get("joint") is not None:
            sub.set("joint", p + str(sub.get("joint")))
    return el


def _root_link(doc: etree._Element) -> str:
    """The link that is no joint's child (the first one when the URDF is not one tree)."""
    children = {sub.get("link") for j in doc.iter("joint") for sub in j.findall("child")}
    for link in doc.iter("link"):
        if link.get("name") not in children:
            return str(link.get("name"))
    raise ConfigError("a robot's URDF has no root link (every link is some joint's child)")


def _pose(r: Mounted) -> np.ndarray:
    base = np.eye(4) if r.base is None else np.asarray(r.base, dtype=float)
    ok = base.shape == (4, 4) and bool(np.all(np.isfinite(base)))
    if ok:
        rot = base[:3, :3]
        ok = bool(np.abs(rot.T @ rot - np.eye(3)).max() < 1e-9 and np.linalg.det(rot) > 0.0)
    if not ok:
        raise ConfigError(f"robot {r.name!r}: its base pose must be a finite rigid transform")
    return base


def _text(v: np.ndarray) -> str:
    return " ".join(repr(float(x)) for x in v)


__all__ = ["KEPT", "SEPARATOR", "Mounted", "base_pose", "compose_robots", "compose_urdf"]
