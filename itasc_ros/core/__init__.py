"""ROS-free core of itasc_ros, one sub-package per concept; the names here are its public API.

``kinematics`` (URDF -> kinematic tree) <- ``constraints`` (their rows of ``A q' = y' + B Xu'``)
<- ``solve`` (scene, solver, motion limits) <- ``control`` (the :class:`Controller`, its
configuration and journal) and ``ik`` (position IK); ``errors`` and ``latest_worker`` serve them
all, ``scenarios`` runs closed loops over the whole core.
"""

import importlib
from typing import TYPE_CHECKING, Any

from .compiled_cache import use_versioned_cache

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
_LAZY = {
    **dict.fromkeys(
        ("REGISTRY", "CenterOfMass", "Constraint", "CopyPose", "Distance", "Field",
         "JointLimitAvoidance", "JointValue"),
        ".constraints",
    ),
    **dict.fromkeys(
        ("ConstraintConfig", "Controller", "ControllerConfig", "Status", "StepOutput"), ".control"
    ),
    **dict.fromkeys(("IkOptions", "IkResult", "solve_ik"), ".ik"),
    "KinematicTree": ".kinematics",
    **dict.fromkeys(("SOLVERS", "Scene", "SolveResult"), ".solve"),
}  # fmt: skip


def __getattr__(name: str) -> Any:
    """A name of the API imported from its sub-package on first use (PEP 562)."""
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


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
