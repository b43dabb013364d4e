"""One solve: the scene stacks the constraints' rows, the solver finds q', the limits shape it."""

from .joint_limits import LIMIT_FIELDS, JointLimits
from .motion_limits import MotionLimiter
from .scene import Scene, SolveResult
from .solver import SOLVERS, solve_limited, solve_prioritized

__all__ = [
    "LIMIT_FIELDS",
    "SOLVERS",
    "JointLimits",
    "MotionLimiter",
    "Scene",
    "SolveResult",
    "solve_limited",
    "solve_prioritized",
]
