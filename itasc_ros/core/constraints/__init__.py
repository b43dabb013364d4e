"""iTaSC constraints: each gives its rows of ``A q' = y' + B Xu'``.

Every module of this package is imported here, so that a constraint type registers itself
(:data:`REGISTRY`) by being a module of the package: adding a type is adding its module.
"""

import importlib
import pkgutil

from .base import REGISTRY, Constraint, PoseGoal
from .collision import Collision
from .com import CenterOfMass
from .copy_pose import REFERENCE_FRAMES, CopyPose
from .distance import Distance
from .joint_limit_avoidance import JointLimitAvoidance
from .joint_value import JointValue
from .schema import Field

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

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
