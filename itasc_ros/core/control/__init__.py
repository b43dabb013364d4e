"""The control loop: inputs -> Controller.step -> command; its configuration, health, journal."""

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
