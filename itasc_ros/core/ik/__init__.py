"""Position IK: a configuration that meets a set of constraints, solved here or in a worker."""

from .options import PREFER, IkOptions
from .result import IkResult
from .solve import solve_ik
from .worker import IkOutcome, IkWorker

__all__ = ["PREFER", "IkOptions", "IkOutcome", "IkResult", "IkWorker", "solve_ik"]
