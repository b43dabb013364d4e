"""ROS-free core of itasc_ros: URDF -> kinematic tree -> constraints -> scene -> solver."""

from .config import ConstraintConfig, ControllerConfig
from .constraints import (
    REGISTRY,
    CenterOfMass,
    Constraint,
    CopyPose,
    Distance,
    Field,
    JointLimitAvoidance,
    JointValue,
)
from .controller import Controller, Status, StepOutput
from .errors import (
    ConfigError,
    ConfigurationError,
    ConstraintError,
    DuplicateNameError,
    InputError,
    InvalidJointError,
    ItascError,
    SolverError,
    TargetNotSet,
    UnknownJointError,
    UnknownLinkError,
    UnknownNameError,
    UnreachableTargetError,
    UnsupportedJointError,
    UrdfError,
    UrdfStructureError,
    UrdfSyntaxError,
)
from .ik import IkOptions, IkResult, solve_ik
from .scene import Scene, SolveResult
from .solver import SOLVERS
from .tree import KinematicTree

__all__ = [
    "REGISTRY",
    "SOLVERS",
    "CenterOfMass",
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
    "Field",
    "IkOptions",
    "IkResult",
    "InputError",
    "InvalidJointError",
    "ItascError",
    "JointLimitAvoidance",
    "JointValue",
    "KinematicTree",
    "Scene",
    "SolveResult",
    "SolverError",
    "Status",
    "StepOutput",
    "TargetNotSet",
    "UnknownJointError",
    "UnknownLinkError",
    "UnknownNameError",
    "UnreachableTargetError",
    "UnsupportedJointError",
    "UrdfError",
    "UrdfStructureError",
    "UrdfSyntaxError",
    "solve_ik",
]
