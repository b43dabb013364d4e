"""The robot model: URDF -> kinematic tree (FK, Jacobians, COM), SE(3), collisions, home poses."""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .collision_geometry import (
        CollisionGeometryError,
        CollisionModel,
        CollisionShape,
        collision_model,
        package_search_path,
        parse_obstacles,
        read_srdf_disabled,
        resolve_file,
    )
    from .home_poses import HOME_POSES, home_of, home_pose
    from .tree import KinematicTree
    from .urdf import MAX_URDF_BYTES, InertialSpec, JointSpec, MimicSpec, RobotSpec, parse_urdf

#: Imported on first use: a process that needs one of these modules does not import the others.
__getattr__ = lazy_exports(
    __name__,
    {
        ".collision_geometry": [
            "CollisionGeometryError", "CollisionModel", "CollisionShape", "collision_model",
            "package_search_path", "parse_obstacles", "read_srdf_disabled", "resolve_file",
        ],
        ".home_poses": ["HOME_POSES", "home_of", "home_pose"],
        ".tree": ["KinematicTree"],
        ".urdf": [
            "MAX_URDF_BYTES", "InertialSpec", "JointSpec", "MimicSpec", "RobotSpec", "parse_urdf",
        ],
    },
)  # fmt: skip

__all__ = [
    "HOME_POSES",
    "MAX_URDF_BYTES",
    "CollisionGeometryError",
    "CollisionModel",
    "CollisionShape",
    "InertialSpec",
    "JointSpec",
    "KinematicTree",
    "MimicSpec",
    "RobotSpec",
    "collision_model",
    "home_of",
    "home_pose",
    "package_search_path",
    "parse_obstacles",
    "parse_urdf",
    "read_srdf_disabled",
    "resolve_file",
]
