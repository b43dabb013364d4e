"""One solve: the scene stacks the constraints' rows, the solver finds q', the limits shape it."""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .joint_limits import LIMIT_FIELDS, JointLimits
    from .motion_limits import MotionLimiter
    from .scene import Scene, SolveResult
    from .solver import solve_limited, solve_prioritized
    from .solvers import SOLVERS

#: Imported on first use: a process that needs one of these modules does not import the others.
__getattr__ = lazy_exports(
    __name__,
    {
        ".joint_limits": ["LIMIT_FIELDS", "JointLimits"],
        ".motion_limits": ["MotionLimiter"],
        ".scene": ["Scene", "SolveResult"],
        ".solver": ["solve_limited", "solve_prioritized"],
        ".solvers": ["SOLVERS"],
    },
)  # fmt: skip

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
