"""ROS-free core of itasc_ros, one sub-package per concept; the names here are its public API.

``kinematics`` (URDF -> kinematic tree) <- ``constraints`` (their rows of ``A q' = y' + B Xu'``)
<- ``solve`` (scene, solver, motion limits) <- ``control`` (the :class:`Controller`, its
configuration and journal) and ``ik`` (position IK); ``errors`` and ``latest_worker`` serve them
all, ``scenarios`` runs closed loops over the whole core.
"""

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
from .control import ConstraintConfig, Controller, ControllerConfig, Status, StepOutput
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
from .kinematics import KinematicTree
from .solve import SOLVERS, Scene, SolveResult

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
