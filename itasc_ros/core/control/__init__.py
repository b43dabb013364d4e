"""The control loop: inputs -> Controller.step -> command; its configuration, health, journal."""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .cartesian_reference import CartesianReference
    from .config import (
        CONTROLLER_RANGES,
        LIVE_KEYS,
        NODE_ONLY_KEYS,
        ConstraintConfig,
        ControllerConfig,
        apply_updates,
    )
    from .controller import Controller
    from .health import Health, Level, diagnose, step_colour
    from .journal import Journal, JournalError, Record, decode, records
    from .model_manager import ModelChange, ModelManager, ModelOutcome, urdf_digest
    from .playback import ConfigHistory, Playback, PlaybackError, Tick
    from .status import Status, StepOutput
    from .streams import StampOrder, TargetStream

#: Imported on first use: a process that needs one of these modules does not import the others.
__getattr__ = lazy_exports(
    __name__,
    {
        ".cartesian_reference": ["CartesianReference"],
        ".config": [
            "CONTROLLER_RANGES", "LIVE_KEYS", "NODE_ONLY_KEYS", "ConstraintConfig",
            "ControllerConfig", "apply_updates",
        ],
        ".controller": ["Controller"],
        ".health": ["Health", "Level", "diagnose", "step_colour"],
        ".journal": ["Journal", "JournalError", "Record", "decode", "records"],
        ".model_manager": ["ModelChange", "ModelManager", "ModelOutcome", "urdf_digest"],
        ".playback": ["ConfigHistory", "Playback", "PlaybackError", "Tick"],
        ".status": ["Status", "StepOutput"],
        ".streams": ["StampOrder", "TargetStream"],
    },
)  # fmt: skip

__all__ = [
    "CONTROLLER_RANGES",
    "LIVE_KEYS",
    "NODE_ONLY_KEYS",
    "CartesianReference",
    "ConfigHistory",
    "ConstraintConfig",
    "Controller",
    "ControllerConfig",
    "Health",
    "Journal",
    "JournalError",
    "Level",
    "ModelChange",
    "ModelManager",
    "ModelOutcome",
    "Playback",
    "PlaybackError",
    "Record",
    "StampOrder",
    "Status",
    "StepOutput",
    "TargetStream",
    "Tick",
    "apply_updates",
    "decode",
    "diagnose",
    "records",
    "step_colour",
    "urdf_digest",
]
