"""Import path kept for callers of ``itasc-replay --online``.

Its home is :mod:`itasc_ros.tools.replay.online` (re-exported by :mod:`itasc_ros.tools.replay`).
"""

from __future__ import annotations

from itasc_ros.tools.replay.online import fetch_node_parameters, replay_online

__all__ = ["fetch_node_parameters", "replay_online"]
