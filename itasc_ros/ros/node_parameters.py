"""The node's live parameter changes, applied whole or refused whole.

rclpy has refused read-only parameters and values outside the declared ranges; an integer for
a double is converted and a value of another type or an undeclared name refused with one line
(:func:`~itasc_ros.ros.parameters.coerce_request`). Everything else goes through the checks of
start-up (:func:`~itasc_ros.core.control.config.apply_updates`, then building the controller)
before anything changes: a new URDF rebuilds the model, live settings update the controller.
:class:`NodeParameters` owns the configuration of the parameters (:attr:`NodeParameters.config`)
and applies each request to the node's model source and controller.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter

from ..core import ConfigError, ControllerConfig, ItascError
from ..core.control.config import apply_updates
from ..core.control.health import clip_reason as _clip
from ..core.control.model_manager import ModelManager
from . import parameters as P
from .journal_publisher import JournalPublisher
from .node_models import ModelSource
from .swap_times import SwapTimes


def parameter_values(node: Node) -> dict[str, Any]:
    """Every parameter's current value (the ``~/parameters`` snapshot).

    Args:
        node: the node whose parameters these are.
    """
    return {name: p.value for name, p in node.get_parameters_by_prefix("").items()}


class NodeParameters:
    """Live parameter changes, and the configuration they set (see the module).

    The node registers :meth:`before_set_parameters` and :meth:`on_set_parameters` with
    rclpy.

    Args:
        node: the node whose parameters these are (its logger).
        config: the configuration of the parameters at start-up.
        source: the model source (a new URDF, where the installed one came from).
        models: the installed controller.
        journal: the journal (each change recorded, the parameters published).
        swaps: the structural changes' build and swap times.
        lock: the lock the control tick holds: a change is swapped in between two ticks.
        on_applied: called with the request and the new configuration once it is in force
            (outside the lock).
    """

    def __init__(
        self,
        node: Node,
        config: ControllerConfig,
        source: ModelSource,
        models: ModelManager[PoseStamped],
        journal: JournalPublisher,
        swaps: SwapTimes,
        lock: threading.RLock,
        on_applied: Callable[[list[Parameter], ControllerConfig], None],
    ) -> None:
        self._node = node
        self._config = config
        self._source = source
        self._models = models
        self._journal = journal
        self._swaps = swaps
        self._lock = lock
        self._on_applied = on_applied
        self._type_errors: dict[str, str] = {}  # of the request being set (see below)

    @property
    def config(self) -> ControllerConfig:
        """The configuration of the parameters, in force from the tick its change swapped in.

        Links left empty stay empty: each model resolves them anew (e.g. the effector of a new
        robot's URDF).
        """
        return self._config

    def before_set_parameters(self, params: list[Parameter]) -> list[Parameter]:
        """Rclpy's pre-set callback: integers for doubles; values of a wrong type noted.

        A value of a wrong type is swapped for the current one and refused with its one-line
        reason by :meth:`on_set_parameters` (rclpy's names neither parameter nor value).

        Args:
            params: the request's parameters.

        Returns:
            The parameters rclpy goes on with.
        """
        try:
            params, self._type_errors = P.coerce_request(self._node, params)
        except Exception as exc:  # a bug must not kill the node: rclpy judges the request
            self._type_errors = {}
            self._node.get_logger().error(f"parameter request not converted: {exc!r}")
        return params

    def on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        """Apply a set-parameters request whole, or refuse it with the reason; never raises.

        An integer for a double was converted (:meth:`before_set_parameters`); rclpy has
        refused values outside the declared ranges and read-only parameters; a value of another
        wrong type is refused here. Everything else goes through the same validation as at
        start-up (:meth:`ControllerConfig.validate`, then building the controller), before
        anything changes.

        Args:
            params: the request's parameters.

        Returns:
            Applied, or refused with the reason (nothing changed).
        """
        try:
            reason = self._apply_parameters(params)
        except Exception as exc:  # a bug must not kill the node: refuse, nothing changed
            reason = (
                f"internal error, nothing changed: {type(exc).__name__}: {exc}"
                if str(exc)
                else f"internal error, nothing changed: {type(exc).__name__}"
            )
            self._node.get_logger().error(f"parameter change refused: {reason}")
        if reason:
            return SetParametersResult(successful=False, reason=_clip(reason))
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params: list[Parameter]) -> str:
        """The work of :meth:`on_set_parameters`: '' (applied) or why not (nothing changed)."""
        if self._type_errors:  # undeclared names, values of a wrong type (this request's)
            return "; ".join(self._type_errors.values())
        names = [p.name for p in params]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:  # each value must be validated, and only one of them could be applied
            return f"parameters named more than once in one request: {', '.join(twice)}"
        updates: dict[str, Any] = {}
        description = urdf_file = ""
        for p in params:
            if p.name == "robot_description":
                description = str(p.value or "")
            elif p.name == "urdf_file":
                urdf_file = str(p.value or "")
            else:
                updates.update(P.live_update(p.name, p.value) or {})
        try:  # validate everything before changing anything
            config = apply_updates(self._config, **updates) if updates else self._config
        except ConfigError as exc:
            return str(exc)
        updated = [False]  # the controller's live settings were updated
        recorded: list[dict[str, Any]] = []  # the parameters in force, once recorded
        # the values once in force, gathered before the swap (rclpy sets one request at a
        # time): the swap's critical section only records them
        values = parameter_values(self._node)
        values.update({p.name: p.value for p in params})

        def record() -> None:  # in force from the same tick on as the change itself
            self._config = config
            self._journal.parameters_changed(updated[0])
            recorded.append(values)

        if description:  # a new model, built with the new configuration
            reason = self._source.load_urdf(
                description, "parameter", refuse=True, config=config, then=record
            )
        elif urdf_file and self._source.urdf_source in ("", "file"):
            reason = self._source.load_file(urdf_file, refuse=True, config=config, then=record)
        elif updates and self._models.controller is not None:
            updated[0] = True
            reason = self._update_controller(updates, then=record)
        else:
            with self._lock:
                record()
            reason = ""
        if recorded:  # published after the swap: the text and the DDS write hold no tick
            self._journal.publish_parameters(recorded[-1])
        if reason:
            return reason
        self._on_applied(params, config)  # e.g. the control rate, publish_markers
        return ""

    def _update_controller(self, updates: dict[str, Any], then: Callable[[], None]) -> str:
        """Change the installed controller's live settings: '' or why not (nothing changed).

        All or nothing: a new scene is built here while the control loop ticks on with the old
        one; only the swap waits for a tick to end (a scalar is set in place, in microseconds).
        ``then()`` runs in the same critical section as the swap (the journal's record of the
        change: no tick between them).
        """
        ctrl = self._models.controller
        assert ctrl is not None
        try:
            with self._swaps.build():
                prepared = ctrl.prepare_parameters(**updates)
            with self._lock, self._swaps.swap():
                now = self._models.controller
                if now is ctrl:
                    ctrl.commit_parameters(prepared)
                elif now is not None:  # a new model meanwhile: that one, now
                    now.update_parameters(**updates)
                then()
        except ItascError as exc:
            return str(exc)
        return ""


__all__ = ["NodeParameters", "parameter_values"]
