"""Several robots in one tree: each URDF's links and joints under its name, mounted in a world.

iTaSC's A and B matrices grow with every armature and are built the same way: a constraint
between links of two robots (one hand copying the other's pose, a loop closure through a held
object) is a constraint between two links of one tree. :func:`compose_robots` builds that tree:
a world link, and under it each robot's URDF with every link and joint named
``<robot>/<name>``, its root mounted on the world at the robot's base pose by a fixed joint
``<robot>/mount``. The robots' joints are the tree's joints, in the order the robots are given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ConfigError
from .robot_spec import InertialSpec, JointSpec, MimicSpec, RobotSpec
from .tree import KinematicTree, _Model

#: The separator of a robot's name and its URDF's names in the composed tree.
SEPARATOR = "/"


@dataclass(frozen=True)
class Mounted:
    """One robot of a composition.

    Attributes:
        name: the robot's name (its links and joints become ``<name>/<link>``).
        tree: its URDF's tree.
        base: (4, 4) its root's pose in the world (None: the world's origin).
    """

    name: str
    tree: KinematicTree
    base: ArrayLike | None = None


def compose_robots(robots: Sequence[Mounted], world: str = "world") -> KinematicTree:
    """One tree of ``robots`` mounted in ``world`` (see the module).

    Raises:
        ConfigError: no robot, a name repeated, empty or holding the separator, or a base
            pose that is not a finite rigid transform.
    """
    names = [r.name for r in robots]
    bad = [n for n in names if not n or SEPARATOR in n]
    if not robots or bad or len(set(names)) != len(names):
        raise ConfigError(
            f"robots must have distinct, non-empty names without {SEPARATOR!r}; got {names}"
        )
    links, joints, inertials, bad_inertials = [world], [], {}, {}
    for r in robots:
        spec: RobotSpec = r.tree._m.spec
        p = f"{r.name}{SEPARATOR}"
        links += [p + n for n in spec.links]
        joints.append(
            JointSpec(f"{p}mount", "fixed", world, p + r.tree.root_link, _pose(r), np.zeros(3))
        )
        joints += [_prefixed(j, p) for j in spec.joints]
        inertials.update({p + k: InertialSpec(v.mass, v.com) for k, v in spec.inertials.items()})
        bad_inertials.update({p + k: v for k, v in spec.bad_inertials.items()})
    model = _Model(RobotSpec("+".join(names), links, joints, inertials, bad_inertials))
    return KinematicTree(model)


def robot_of(name: str) -> tuple[str, str]:
    """``(robot, name in its URDF)`` of a composed tree's link or joint name."""
    robot, _, own = name.partition(SEPARATOR)
    return robot, own


def _prefixed(j: JointSpec, p: str) -> JointSpec:
    mimic = None if j.mimic is None else MimicSpec(p + j.mimic.joint, j.mimic.multiplier,
                                                   j.mimic.offset)  # fmt: skip
    return replace(j, name=p + j.name, parent=p + j.parent, child=p + j.child, mimic=mimic)


def _pose(r: Mounted) -> np.ndarray:
    base = np.eye(4) if r.base is None else np.asarray(r.base, dtype=float)
    ok = base.shape == (4, 4) and bool(np.all(np.isfinite(base)))
    if ok:
        rot = base[:3, :3]
        ok = bool(np.abs(rot.T @ rot - np.eye(3)).max() < 1e-6 and np.linalg.det(rot) > 0.0)
    if not ok:
        raise ConfigError(f"robot {r.name!r}: its base pose must be a finite rigid transform")
    return base


__all__ = ["SEPARATOR", "Mounted", "compose_robots", "robot_of"]
