"""Position IK: a configuration that meets a set of constraints, solved here or in a worker."""

from .solve import IkOptions, IkResult, solve_ik
from .worker import IkOutcome, IkWorker

__all__ = ["IkOptions", "IkOutcome", "IkResult", "IkWorker", "solve_ik"]
