"""What a control tick decides: its :class:`Status` and its :class:`StepOutput` (ROS-free)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np
from numpy.typing import NDArray

from ..solve.scene import SolveResult

Array = NDArray[np.float64]


class Status(str, Enum):
    """What a control tick decided (:attr:`StepOutput.status`); compares equal to its value."""

    WAITING = "waiting"  # no joint state or no target yet
    ACTIVE = "active"  # commanding
    STALE = "stale"  # joint states too old (or from the future): zero once, then silence
    DISABLED = "disabled"  # ~/enable false: zero once, then silence
    FAULT = "fault"  # the solve failed: zero once, then silence
    STOPPING = "stopping"  # disabled while moving: decelerating within the limits, then zero

    def __str__(self) -> str:
        return self.value


STATUSES = tuple(s.value for s in Status)
"""The values of :class:`Status`."""

STATUS_CODE = {s: i for i, s in enumerate(Status)}
""":class:`Status` -> its code in a journal TICK record
(:data:`~itasc_ros.core.control.journal.STATUS_CODES` reads it back)."""


@dataclass(slots=True)
class StepOutput:
    """What one :meth:`~itasc_ros.core.control.Controller.step` decided.

    Attributes:
        status: see :class:`Status`.
        publish: True when a command must be sent now (an active one, or the single zero).
        qdot: (n,) joint velocities [rad/s or m/s] in ``joint_names`` order (zeros unless
            active).
        q: (n,) the current joint positions [rad or m] (last good joint state).
        result: the scene's solve result (reused by the next step: copy it to keep it), or
            None when no solve ran.
        reason: why the status is not 'active' ('' when it is, unless robots are held).
        held: several robots: the robots stopped this tick while the others are solved (their
            joint states stale, or linked to one by a constraint); empty otherwise.
        shortfall: a task the commands have not followed for a while, how much of it they
            follow and why (:attr:`~itasc_ros.core.control.following.Following.report`); ''
            while every task is followed.
    """

    status: Status
    publish: bool
    qdot: Array
    q: Array
    result: SolveResult | None = None
    reason: str = ""
    held: tuple[str, ...] = ()
    shortfall: str = ""


__all__ = ["STATUSES", "STATUS_CODE", "Status", "StepOutput"]
