"""The ``control_trigger: joint_states`` rule: tick on a joint state, at most control_rate.

Ticks are spaced on a grid of one control period: a joint state ticks unless it comes more
than half a period before the next tick is due. States faster than ``control_rate`` give
``control_rate`` on average (not a tick per state, and not the slower rate a "one period since
the last tick" rule gives when the states' period does not divide it); slower states each tick.
After a stall the grid restarts from the next state (no burst of catch-up ticks). ROS-free.
"""

from __future__ import annotations

import math


class TickSpacing:
    """When a joint state is due to tick.

    Attributes:
        period: the control period [s] (``1 / control_rate``).
        next_tick: when the next tick is due [s, on the caller's monotonic clock].
    """

    def __init__(self, period: float = 0.0) -> None:
        self.period = period
        self.next_tick = -math.inf

    def due(self, t: float) -> bool:
        """True when a joint state received at ``t`` [s] ticks (and the grid moves on)."""
        half = 0.5 * self.period
        if t < self.next_tick - half:
            return False
        self.next_tick = max(self.next_tick + self.period, t + half)
        return True


__all__ = ["TickSpacing"]
