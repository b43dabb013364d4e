"""The replay's own error: a bag that cannot be replayed (:class:`ReplayError`)."""

from __future__ import annotations

from itasc_ros.core.errors import ItascError


class ReplayError(ItascError):
    """A bag cannot be replayed (no parameters, no URDF, no inputs, unknown topics)."""


__all__ = ["ReplayError"]
