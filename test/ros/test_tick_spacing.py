"""The joint_states trigger's spacing rule (``itasc_ros.ros.tick_spacing``), on exact times.

The DDS test (test_node.py) checks the node's wiring on a loaded machine; the rate itself is
checked here, where no scheduler can starve it.
"""

from __future__ import annotations

import numpy as np
import pytest

from itasc_ros.ros.tick_spacing import TickSpacing

PERIOD = 0.01  # [s] control_rate 100 Hz


def _ticks(times: np.ndarray, period: float = PERIOD) -> np.ndarray:
    spacing = TickSpacing(period)
    return np.array([t for t in times if spacing.due(float(t))])


def _most_in_a_window(ticks: np.ndarray, window: float) -> int:
    """The largest number of ticks within any ``window`` [s]."""
    ends = np.searchsorted(ticks, ticks + window, side="left")
    return int(np.max(ends - np.arange(len(ticks))))


@pytest.mark.parametrize("state_rate", [145.0, 165.0, 250.0, 1000.0])
def test_faster_states_tick_at_control_rate_on_average(state_rate: float) -> None:
    rng = np.random.default_rng(int(state_rate))
    period = 1.0 / state_rate
    times = np.cumsum(rng.uniform(0.8 * period, 1.2 * period, int(10 * state_rate)))  # 10 s
    ticks = _ticks(times)
    rate = (len(ticks) - 1) / (ticks[-1] - ticks[0])
    assert rate == pytest.approx(100.0, rel=0.02), rate
    assert _most_in_a_window(ticks, 5 * PERIOD) <= 6  # on the grid: no bursts


def test_slower_states_each_tick() -> None:
    times = np.arange(200) * 0.02  # 50 Hz
    assert len(_ticks(times)) == len(times)


def test_after_a_stall_no_burst_of_catch_up_ticks() -> None:
    times = np.concatenate([np.arange(100) * 0.004, 0.4 + 0.5 + np.arange(50) * 0.004])
    ticks = _ticks(times)
    after = ticks[ticks > 0.8]
    assert _most_in_a_window(after, 2 * PERIOD) <= 3  # the grid restarts: no catch-up burst
    rate = (len(after) - 1) / (after[-1] - after[0])
    assert rate == pytest.approx(100.0, rel=0.1)
