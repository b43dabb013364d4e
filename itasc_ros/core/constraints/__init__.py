"""iTaSC constraints: each gives its rows of ``A q' = y' + B Xu'``."""

from .base import Constraint
from .copy_pose import REFERENCE_FRAMES, CopyPose
from .distance import Distance
from .joint_value import JointValue

__all__ = ["REFERENCE_FRAMES", "Constraint", "CopyPose", "Distance", "JointValue"]
