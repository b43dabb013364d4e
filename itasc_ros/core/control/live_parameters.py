"""Live parameters: ``enable`` and the settings that change while the controller runs.

A live change is all or nothing: the new configuration is checked and a new scene and new
motion limits are fitted to it (:mod:`~itasc_ros.core.control.model_fit`) before anything is
replaced; the constraints carry their targets over, the motion goes on from the command it had
reached. ROS-free.
"""

from __future__ import annotations

from typing import Any

from ._target_kernels import cap_twist
from .config import apply_updates
from .state import ControllerState


class LiveParameters(ControllerState):
    """``set_enabled`` and ``update_parameters``."""

    def set_enabled(self, enabled: bool) -> None:
        """Enable or disable the output (disabled: zeros once, then silence)."""
        self._enabled = bool(enabled)
        if self.journal is not None:
            self.journal.enabled(self._enabled)

    def update_parameters(self, **kw: Any) -> None:
        """Change settings live; all or nothing.

        Keys: those of :data:`~itasc_ros.core.control.config.LIVE_KEYS`; per constraint either
        ``constraints={name: {field: value}}`` or the flat ROS name
        ``**{'constraints.<name>.<field>': value}`` with the live fields of its type.

        Raises:
            ConfigError: unknown or structural key (naming the live ones), invalid value;
                nothing is changed.
        """
        cfg = apply_updates(self.config, **kw)
        scene = self._build_scene(cfg)
        for old in self.scene.constraints:  # carry the targets over
            new = scene.get(old.name)
            new.carry_over(old)
        for st in self._targets.values():
            st.applied[:] = 0.0  # the new constraints start without a twist
            for tw in (st.estimate, st.twist):  # within the (new) speed limits
                cap_twist(tw, cfg.max_target_speed, cfg.max_target_angular_speed)
        limiter = self._build_limiter(cfg, scene)
        limiter.v[:], limiter.a[:] = self._limiter.v, self._limiter.a  # the motion goes on
        self._fit(cfg, scene, limiter)
        self._set_reach()


__all__ = ["LiveParameters"]
