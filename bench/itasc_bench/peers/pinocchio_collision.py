"""Pinocchio + coal on the pairs of a collision constraint: the peer of its distance queries.

:func:`pinocchio_reference` builds Pinocchio's model and collision ``GeometryModel`` from the
same URDF (Pinocchio's own mesh loading), each mesh replaced by its convex hull as the
constraint uses it, with exactly the constraint's pairs (and its static obstacles). Its
:meth:`PinocchioReference.distances` runs ``pinocchio.computeDistances`` (FK, geometry
placements, one coal distance query per pair, in C++). Used by ``itasc-bench collision`` and
by the tests (distances equal to 1e-6).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core.constraints.collision import GJK_TOLERANCE, Collision
from itasc_ros.core.kinematics.collision_geometry import package_search_path
from itasc_ros.core.kinematics.tree import KinematicTree

Array = NDArray[np.float64]


@dataclass
class PinocchioReference:
    """Pinocchio's model, data and geometry of a robot with the constraint's pairs.

    Attributes:
        model: ``pinocchio.Model``.
        data: its data.
        geom_model: ``pinocchio.GeometryModel`` with the pairs in the constraint's order.
        geom_data: its data (distance requests with the constraint's tolerance).
        q_index: (n,) index in Pinocchio's q of each of the tree's active joints.
    """

    model: Any
    data: Any
    geom_model: Any
    geom_data: Any
    q_index: NDArray[np.int64]

    def q_of(self, q: Array) -> Array:
        """Pinocchio's configuration (nq,) for the tree's joint positions ``q`` (n,)."""
        import pinocchio as pin

        out = np.asarray(pin.neutral(self.model), dtype=float).copy()
        out[self.q_index] = q
        return out

    def distances(self, q_pin: Array) -> Array:
        """(p,) the distance of every pair at Pinocchio's configuration ``q_pin`` [m]."""
        import pinocchio as pin

        pin.computeDistances(self.model, self.data, self.geom_model, self.geom_data, q_pin)
        return np.array([r.min_distance for r in self.geom_data.distanceResults])


def pinocchio_reference(urdf_path: str, tree: KinematicTree, c: Collision) -> PinocchioReference:
    """Pinocchio + coal with the pairs of a bound collision constraint (see the module doc).

    Args:
        urdf_path: the URDF file with the collision geometry (the constraint's).
        tree: the tree the constraint is bound to (its active joints map into Pinocchio's q).
        c: the bound constraint.
    """
    import coal
    import pinocchio as pin

    assert c.model is not None
    model = pin.buildModelFromUrdf(urdf_path)
    dirs = [str(d) for d in package_search_path(c.package_path) if d.is_dir()]
    with warnings.catch_warnings():  # "package dirs passed": they are the same ones
        warnings.simplefilter("ignore", UserWarning)
        geom = pin.buildGeomFromUrdf(model, urdf_path, pin.GeometryType.COLLISION, dirs)
    for go in geom.geometryObjects:  # meshes as their convex hulls, as the constraint has them
        g = go.geometry
        if isinstance(g, coal.BVHModelBase):
            g.buildConvexHull(True, "Qt")
            go.geometry = g.convex
    # The constraint's shapes in Pinocchio's order: link name and index of the <collision>.
    index: dict[tuple[str, int], int] = {}
    for i, go in enumerate(geom.geometryObjects):
        link = model.frames[go.parentFrame].name
        k = sum(1 for key in index if key[0] == link)
        index[(link, k)] = i
    ours: list[int] = []
    seen: dict[str, int] = {}
    for sh in c.model.shapes:
        if sh.link:
            k = seen.get(sh.link, 0)
            seen[sh.link] = k + 1
            ours.append(index[(sh.link, k)])
        else:  # a static obstacle: a geometry object on the universe
            placement = pin.SE3(sh.origin[:3, :3].copy(), sh.origin[:3, 3].copy())
            ob = pin.GeometryObject(f"obstacle_{len(ours)}", 0, 0, placement, sh.geometry)
            ours.append(geom.addGeometryObject(ob))
    for a, b in c.model.pairs:
        geom.addCollisionPair(pin.CollisionPair(ours[a], ours[b]))
    gdata = pin.GeometryData(geom)
    for rq in gdata.distanceRequests:
        rq.gjk_tolerance = GJK_TOLERANCE
        rq.enable_signed_distance = True
    q_index = np.array(
        [model.joints[model.getJointId(j)].idx_q for j in tree.joint_names], dtype=np.int64
    )
    return PinocchioReference(model, model.createData(), geom, gdata, q_index)


__all__ = ["PinocchioReference", "pinocchio_reference"]
