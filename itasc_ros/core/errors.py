"""Exceptions of the core: one root, :class:`ItascError`, with specific subclasses.

Every message names what is wrong and, where there is a finite set, the valid choices.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def _choices(names: Iterable[str], limit: int = 40) -> str:
    items = list(names)
    shown = ", ".join(repr(n) for n in items[:limit])
    if len(items) > limit:
        shown += f", ... ({len(items) - limit} more)"
    return shown or "(none)"


ECHO_LIMIT = 64
"""Longest part of an input echoed in a message [characters]; the rest is counted, not shown."""


def echo(value: object, limit: int = ECHO_LIMIT) -> str:
    """``repr(value)`` for a message, cut at ``limit`` characters with the length it had.

    A name sent by a client (a frame_id, a constraint name) may be megabytes long; a message
    that repeats it whole floods the log.
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    size = len(value) if isinstance(value, str | bytes) else len(text)
    return f"{text[:limit]}... ({size} characters)"


class ItascError(Exception):
    """Root of every error raised by itasc_ros."""


class UrdfError(ItascError):
    """The URDF cannot be turned into a kinematic tree."""


class UrdfSyntaxError(UrdfError):
    """The URDF is not well-formed XML, is not a ``<robot>``, or is hostile (entities, size)."""


class UrdfStructureError(UrdfError):
    """The URDF's links and joints do not form one tree (cycle, two roots, missing link...)."""


class UnsupportedJointError(UrdfError):
    """A joint type the tree cannot represent (floating, planar, unknown)."""


class InvalidJointError(UrdfError):
    """A joint is malformed: zero or non-finite axis, non-finite origin, bad mimic."""


class DuplicateNameError(UrdfError):
    """Two links or two joints share a name."""


class UnknownNameError(ItascError, KeyError):
    """A link, joint or frame name that the model does not have."""

    def __init__(self, kind: str, name: str, valid: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.valid = list(valid)
        short = len(str(name)) <= 4 * ECHO_LIMIT  # a megabyte name is compared with nothing
        near = (
            difflib.get_close_matches(str(name), [str(v) for v in self.valid], n=1)
            if short
            else []
        )
        hint = f" did you mean {near[0]!r}?" if near else ""
        super().__init__(f"unknown {kind} {echo(name)};{hint} {kind}s are: {_choices(self.valid)}")

    def __str__(self) -> str:  # KeyError would quote the message otherwise
        return str(self.args[0])


class UnknownLinkError(UnknownNameError):
    """A link (frame) that the tree does not have."""

    def __init__(self, name: str, valid: Iterable[str]) -> None:
        super().__init__("link", name, valid)


class UnknownJointError(UnknownNameError):
    """A joint that the tree does not have (or that is not active)."""

    def __init__(self, name: str, valid: Iterable[str]) -> None:
        super().__init__("joint", name, valid)


class ConfigurationError(ItascError, ValueError):
    """A joint vector or another numeric input of the wrong shape or with NaN/Inf."""


class ConstraintError(ItascError, ValueError):
    """A constraint is configured with invalid values (unknown axis, negative gain...)."""


class TargetNotSet(ConstraintError):
    """A constraint's target pose is not there: none received yet, or a type without one."""


class SolverError(ItascError, ValueError):
    """An unknown solver option or invalid solver parameter."""


class UnreachableTargetError(ItascError, ValueError):
    """A position IK target farther from the root than the link can ever be (its reach)."""


class ConfigError(ItascError, ValueError):
    """A controller configuration is invalid: unknown key, wrong type or value out of range."""


class InputError(ItascError, ValueError):
    """A runtime input (joint state, target, twist) is rejected; the last good one is kept."""


__all__ = [
    "ECHO_LIMIT",
    "ConfigError",
    "ConfigurationError",
    "ConstraintError",
    "DuplicateNameError",
    "InputError",
    "InvalidJointError",
    "ItascError",
    "SolverError",
    "TargetNotSet",
    "UnknownJointError",
    "UnknownLinkError",
    "UnknownNameError",
    "UnreachableTargetError",
    "UnsupportedJointError",
    "UrdfError",
    "UrdfStructureError",
    "UrdfSyntaxError",
    "echo",
]
