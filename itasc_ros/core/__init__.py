"""ROS-free core of itasc_ros: URDF -> kinematic tree -> constraints -> scene -> solver."""

from .errors import (
    ConfigurationError,
    ConstraintError,
    DuplicateNameError,
    InvalidJointError,
    ItascError,
    SolverError,
    UnknownJointError,
    UnknownLinkError,
    UnknownNameError,
    UnsupportedJointError,
    UrdfError,
    UrdfStructureError,
    UrdfSyntaxError,
)
from .constraints import Constraint, CopyPose, Distance, JointValue
from .scene import Scene, SolveResult
from .solver import SOLVERS
from .tree import KinematicTree

__all__ = [
    "SOLVERS",
    "Constraint",
    "CopyPose",
    "Distance",
    "JointValue",
    "Scene",
    "SolveResult",
    "ConfigurationError",
    "ConstraintError",
    "DuplicateNameError",
    "InvalidJointError",
    "ItascError",
    "KinematicTree",
    "SolverError",
    "UnknownJointError",
    "UnknownLinkError",
    "UnknownNameError",
    "UnsupportedJointError",
    "UrdfError",
    "UrdfStructureError",
    "UrdfSyntaxError",
]
