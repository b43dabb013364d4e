"""Live parameters: ``enable`` and the settings that change while the controller runs.

A live change is all or nothing. A scalar (a constraint's weight, gain or feed-forward, the
damping, the Cartesian limits) is checked and set on the running scene
(:mod:`~itasc_ros.core.control.in_place`); any other change checks the new configuration and
fits a new scene and new motion limits to it (:mod:`~itasc_ros.core.control.model_fit`)
before anything is replaced: the constraints carry their targets over, the motion goes on from
the command it had reached. ROS-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..solve.motion_limits import MotionLimiter
from ..solve.scene import Scene
from ._target_kernels import cap_twist
from .config import ControllerConfig, apply_updates
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
        """Change settings live; all or nothing (:meth:`prepare_parameters`, then commit).

        Keys: those of :data:`~itasc_ros.core.control.config.LIVE_KEYS`; per constraint either
        ``constraints={name: {field: value}}`` or the flat ROS name
        ``**{'constraints.<name>.<field>': value}`` with the live fields of its type.

        Raises:
            ConfigError: unknown or structural key (naming the live ones), invalid value;
                nothing is changed.
        """
        self.commit_parameters(self.prepare_parameters(**kw))

    def prepare_parameters(self, **kw: Any) -> PreparedChange:
        """Check a live change and build what it needs; this controller is not touched.

        Safe on another thread while :meth:`step` runs: a new scene is built on a view of the
        tree of its own (its work arrays are not the running scene's). Keys as in
        :meth:`update_parameters`.

        Raises:
            ConfigError: as :meth:`update_parameters`; nothing is changed.
        """
        changes = in_place_changes(self.config, kw)
        if changes is not None:  # scalars: set on the running scene when committed
            return PreparedChange(self.config, changes)
        cfg = apply_updates(self.config, **kw)
        scene = self._build_scene(cfg, self.tree.select_joints(self.joint_names))
        return PreparedChange(cfg, None, scene, self._build_limiter(cfg, scene))

    def commit_parameters(self, change: PreparedChange) -> None:
        """Put a change of :meth:`prepare_parameters` in force (between two ticks).

        Scalars are set on the running scene; a new scene takes the targets over and the
        motion goes on from the command it had reached.
        """
        if change.in_place is not None:
            self.config = apply_in_place(self.config, self.scene, change.in_place)
            return
        cfg, scene, limiter = change.config, change.scene, change.limiter
        assert scene is not None and limiter is not None  # a structural change has both
        for old in self.scene.constraints:  # carry the targets over
            new = scene.get(old.name)
            new.carry_over(old)
            new._twist_seen[:] = old._twist_seen  # the demand limit goes on from there
        for st in self._targets.values():
            st.applied[:] = 0.0  # the new constraints start without a twist
            for tw in (st.estimate, st.twist):  # within the (new) speed limits
                cap_twist(tw, cfg.max_target_speed, cfg.max_target_angular_speed)
        limiter.v[:], limiter.a[:] = self._limiter.v, self._limiter.a  # the motion goes on
        self.tree = scene.tree  # the view the new scene computes
        self._fit(cfg, scene, limiter)
        self._set_reach()


@dataclass
class PreparedChange:
    """A live change checked and built, not yet in force.

    Made by :meth:`LiveParameters.prepare_parameters`, put in force by
    :meth:`LiveParameters.commit_parameters`.

    Attributes:
        config: the configuration it puts in force.
        in_place: the scalar changes set on the running scene, or None for a new scene.
        scene: the new scene (a structural change).
        limiter: the new motion limits (a structural change).
    """

    config: ControllerConfig
    in_place: Any | None
    scene: Scene | None = None
    limiter: MotionLimiter | None = None


__all__ = ["LiveParameters", "PreparedChange"]
