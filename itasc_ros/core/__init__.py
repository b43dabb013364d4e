"""ROS-free core of itasc_ros, one sub-package per concept; the names here are its public API.

``kinematics`` (URDF -> kinematic tree) <- ``constraints`` (their rows of ``A q' = y' + B Xu'``)
<- ``solve`` (scene, solver, motion limits) <- ``control`` (the :class:`Controller`, its
configuration and journal) and ``ik`` (position IK); ``errors`` and ``latest_worker`` serve them
all, ``scenarios`` runs closed loops over the whole core.
"""

from typing import TYPE_CHECKING

from .compiled_cache import use_versioned_cache
from .lazy import lazy_exports

use_versioned_cache()  # before any kernel is compiled or loaded

from .errors import (  # noqa: E402
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

if TYPE_CHECKING:  # imported when first used (below): ``import itasc_ros.core.errors`` stays cheap
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
    from .ik import IkOptions, IkResult, solve_ik
    from .kinematics import KinematicTree
    from .solve import SOLVERS, Scene, SolveResult

#: Where each name of the API that is not an error lives (imported on first use: a console
#: script that only names an error, e.g. to print a mistake, does not compile the kinematics).
__getattr__ = lazy_exports(
    __name__,
    {
        ".constraints": [
            "REGISTRY", "CenterOfMass", "Constraint", "CopyPose", "Distance", "Field",
            "JointLimitAvoidance", "JointValue",
        ],
        ".control": ["ConstraintConfig", "Controller", "ControllerConfig", "Status", "StepOutput"],
        ".ik": ["IkOptions", "IkResult", "solve_ik"],
        ".kinematics": ["KinematicTree"],
        ".solve": ["SOLVERS", "Scene", "SolveResult"],
    },
)  # fmt: skip


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
