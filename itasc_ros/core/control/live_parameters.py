"""Live parameters: ``enable`` and the settings that change while the controller runs.

A live change is all or nothing. A scalar (a constraint's weight, gain or feed-forward, the
damping, the Cartesian limits) is checked and set on the running scene
(:mod:`~itasc_ros.core.control.in_place`); any other change checks the new configuration and
fits a new scene and new motion limits to it (:mod:`~itasc_ros.core.control.model_fit`)
before anything is replaced: the constraints carry their targets over, the motion goes on from
the command it had reached. ROS-free.
"""

from __future__ import annotations

from typing import Any

from ._target_kernels import cap_twist
from .config import apply_updates
from .in_place import apply_in_place, in_place_changes
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
        changes = in_place_changes(self.config, kw)
        if changes is not None:  # scalars: set on the running scene, nothing rebuilt
            self.config = apply_in_place(self.config, self.scene, changes)
            return
        cfg = apply_updates(self.config, **kw)
        scene = self._build_scene(cfg)
        for old in self.scene.constraints:  # carry the targets over
            new = scene.get(old.name)
            new.carry_over(old)
            new._twist_seen[:] = old._twist_seen  # the demand limit goes on from there
        for st in self._targets.values():
            st.applied[:] = 0.0  # the new constraints start without a twist
            for tw in (st.estimate, st.twist):  # within the (new) speed limits
                cap_twist(tw, cfg.max_target_speed, cfg.max_target_angular_speed)
        limiter = self._build_limiter(cfg, scene)
        limiter.v[:], limiter.a[:] = self._limiter.v, self._limiter.a  # the motion goes on
        self._fit(cfg, scene, limiter)
        self._set_reach()


__all__ = ["LiveParameters"]
