"""ROS-free core of itasc_ros: URDF -> kinematic tree -> constraints -> scene -> solver."""

from .constraints import Constraint, CopyPose, Distance, JointValue
from .controller import ConstraintConfig, Controller, ControllerConfig, StepOutput
from .errors import (
    ConfigError,
    ConfigurationError,
    ConstraintError,
    DuplicateNameError,
    InputError,
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
from .scene import Scene, SolveResult
from .solver import SOLVERS
from .tree import KinematicTree

__all__ = [
    "SOLVERS",
    "ConfigError",
    "ConfigurationError",
    "Constraint",
    "ConstraintConfig",
    "ConstraintError",
    "Controller",
    "ControllerConfig",
    "CopyPose",
    "Distance",
    "DuplicateNameError",
    "InputError",
    "InvalidJointError",
    "ItascError",
    "JointValue",
    "KinematicTree",
    "Scene",
    "SolveResult",
    "SolverError",
    "StepOutput",
    "UnknownJointError",
    "UnknownLinkError",
    "UnknownNameError",
    "UnsupportedJointError",
    "UrdfError",
    "UrdfStructureError",
    "UrdfSyntaxError",
]
