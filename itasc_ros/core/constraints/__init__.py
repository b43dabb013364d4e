"""iTaSC constraints: each gives its rows of ``A q' = y' + B Xu'``.

A constraint type registers itself (:data:`REGISTRY`) by being a module of the package: adding a
type is adding its module. Reading ``REGISTRY`` imports every module (:mod:`._types`); the other
names import their own module on first use.
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .base import REGISTRY, Constraint, PoseGoal
    from .collision import Collision
    from .com import CenterOfMass
    from .copy_pose import REFERENCE_FRAMES, CopyPose
    from .distance import Distance
    from .joint_limit_avoidance import JointLimitAvoidance
    from .joint_value import JointValue
    from .schema import Field

#: Imported on first use; ``REGISTRY`` imports every type (:mod:`._types`).
__getattr__ = lazy_exports(
    __name__,
    {
        ".base": ["Constraint", "PoseGoal"],
        ".collision": ["Collision"],
        ".com": ["CenterOfMass"],
        ".copy_pose": ["REFERENCE_FRAMES", "CopyPose"],
        ".distance": ["Distance"],
        ".joint_limit_avoidance": ["JointLimitAvoidance"],
        ".joint_value": ["JointValue"],
        ".schema": ["Field"],
        "._types": ["REGISTRY"],
    },
)  # fmt: skip

__all__ = [
    "REFERENCE_FRAMES",
    "REGISTRY",
    "CenterOfMass",
    "Collision",
    "Constraint",
    "CopyPose",
    "Distance",
    "Field",
    "JointLimitAvoidance",
    "JointValue",
    "PoseGoal",
]
