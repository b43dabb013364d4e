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
from .tree import KinematicTree

__all__ = [
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
