"""Position IK: a configuration that meets a set of constraints, solved here or in a worker."""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .options import PREFER, IkOptions
    from .result import IkResult
    from .solve import solve_ik
    from .worker import IkOutcome, IkWorker

#: Imported on first use: a process that needs one of these modules does not import the others.
__getattr__ = lazy_exports(
    __name__,
    {
        ".options": ["PREFER", "IkOptions"],
        ".result": ["IkResult"],
        ".solve": ["solve_ik"],
        ".worker": ["IkOutcome", "IkWorker"],
    },
)  # fmt: skip

__all__ = ["PREFER", "IkOptions", "IkOutcome", "IkResult", "IkWorker", "solve_ik"]
