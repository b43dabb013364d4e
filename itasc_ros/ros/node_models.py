"""The node's model source: where the URDF comes from and what a new one changes.

The URDF comes from the ``robot_description`` parameter, else the topic (parsed off the loop
by :class:`~itasc_ros.ros.urdf_sources.UrdfWorker`), else ``urdf_file``; with ``robots``, from
each robot's own (:class:`~itasc_ros.ros.node_robots.RobotSet`). The decisions (keep,
replace, drop, refuse the model) are the core's
:class:`~itasc_ros.core.control.model_manager.ModelManager`'s; :class:`ModelSource` carries
them out: a zero command for the old model, a new command message, the targets carried over,
the RViz markers, the log lines.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from ..core import ConfigError, Controller, ControllerConfig, KinematicTree
from ..core.control.health import clip_reason as _clip
from ..core.control.journal import ZeroReason
from ..core.control.model_manager import (
    SAME_URDF,
    ModelChange,
    ModelManager,
    ModelOutcome,
    build_controller,
    parse_urdf,
    read_urdf_file,
    urdf_digest,
)
from ..core.errors import UnknownLinkError
from . import parameters as P
from .log_throttle import log_throttled
from .node_inputs import NodeInputs
from .node_outputs import NodeOutputs
from .node_robots import RobotSet
from .swap_times import SwapTimes
from .urdf_sources import UrdfWorker, link_error, unknown_link


class ModelSource:
    """The URDF sources and the model changes they cause (see the module).

    Built in the node's constructor; :meth:`start` loads the start-up URDF (a static URDF
    lacking a configured link is fatal until it returns).

    Args:
        node: the node (its parameters, its logger; the robot_description subscription).
        models: the installed controller and the URDF it came from.
        config: the configuration of the parameters (a new controller gets it).
        robots: several robots (``robots``): their URDFs composed, or None.
        outputs: the command publishers (the old model's zero, the new model's message).
        inputs: the inputs (the targets held for the next model, the RViz markers).
        swaps: the structural changes' build and swap times.
        lock: the lock the control tick holds: a model is swapped between two ticks.
        on_model_changed: called between two ticks when the installed model changed.
    """

    def __init__(
        self,
        node: Node,
        models: ModelManager[PoseStamped],
        config: Callable[[], ControllerConfig],
        robots: RobotSet | None,
        outputs: NodeOutputs,
        inputs: NodeInputs,
        swaps: SwapTimes,
        lock: threading.RLock,
        on_model_changed: Callable[[], None],
    ) -> None:
        self._node = node
        self._models = models
        self._config = config
        self._robots = robots
        self._outputs = outputs
        self._inputs = inputs
        self._swaps = swaps
        self._lock = lock
        self._on_model_changed = on_model_changed
        self._worker: UrdfWorker | None = None  # parses the topic's URDFs off the loop
        self._starting = True  # a static URDF lacking a configured link is fatal now only
        # The node's own URDF error (a robot's description lost, a configured link missing),
        # in force until the models' next decision (None: the models' error).
        self._error: str | None = None
        self._lost = 0  # robots' descriptions lost (URDF rejections the models do not count)

    @property
    def urdf_source(self) -> str:
        """Where the installed model's URDF came from ('' for none)."""
        return self._models.source

    @property
    def error(self) -> str:
        """Why the latest URDF is not (or not wholly) in force ('' when it is)."""
        return self._models.error if self._error is None else self._error

    @property
    def rejections(self) -> int:
        """URDFs rejected or refused so far, robots' descriptions lost included."""
        return self._models.rejections + self._lost

    def start(self, description: str, path: str) -> None:
        """Load the start-up URDF: the parameter, else the file; listen to the topic.

        The topic is always listened to, so that a node whose parameter or file was rejected
        at start-up still takes a good URDF from it (it stays idle until then). With
        ``robots``, the robots' own URDFs, composed (no other source).

        Args:
            description: ``robot_description`` ('' for none).
            path: ``urdf_file`` ('' for none).

        Raises:
            ConfigError: the file cannot be opened, or a static URDF lacks a configured link.
        """
        if self._robots is not None:  # the robots' own URDFs, composed (no other source)
            self._load_robots(self._robots)
        elif description:
            self.load_urdf(description, "parameter")
        elif path:
            # A file that cannot be opened ends the start-up (ConfigError); one that is read
            # but rejected leaves the node idle, waiting for a good URDF on the topic.
            self.load_file(path, must_open=True)
        if self._robots is None:
            self._listen_to_robot_description()
        if self._models.controller is None and self._robots is None:
            self._node.get_logger().info(
                "no model: waiting for a URDF on the robot_description topic (no command "
                "is published until then)"
            )
        self._starting = False

    def _listen_to_robot_description(self) -> None:
        """The robot_description topic (robot_state_publisher's, transient local)."""
        self._node.create_subscription(
            String,
            "robot_description",
            self._on_robot_description,
            QoSProfile(
                depth=1,
                durability=DurabilityPolicy.TRANSIENT_LOCAL,
                reliability=ReliabilityPolicy.RELIABLE,
            ),
        )

    @property
    def model_coming(self) -> bool:
        """True while a URDF is parsed and its model built, until installed.

        The start-up's URDF (the parameter, the file, the robots' files) until :meth:`start`
        has loaded it, a topic's until its model is installed.
        """
        worker = self._worker
        return self._starting or (worker is not None and worker.pending)

    def close(self) -> None:
        """Stop the thread parsing the topic's URDFs."""
        if self._worker is not None:
            self._worker.close()

    def load_urdf(
        self,
        xml: str | bytes,
        source: str,
        refuse: bool = False,
        config: ControllerConfig | None = None,
        then: Callable[[], None] | None = None,
    ) -> str:
        """Parse and install a URDF now (start-up, parameters). Returns '' or why not.

        The parse and the new controller are made here, on the executor's thread, while the
        control loop ticks on with the old model; only the swap waits for a tick to end. A
        parameter change always rebuilds the model, even with the same URDF (an explicit
        reload); the topic's republished URDF does not (see :class:`UrdfWorker`). With
        ``refuse`` (a parameter change, which can be refused) a rejected URDF changes nothing:
        the reason goes back to the caller and to the log. ``config``: the configuration of the
        new controller (default: the current one).
        """
        tree, why = parse_urdf(xml)  # on the executor: the control loop's thread ticks on
        return self._take_parsed(source, urdf_digest(xml), tree, why, refuse, config, then=then)

    def _load_robots(self, robots: RobotSet) -> str:
        """Load the robots' URDFs, composed into one tree (``robots``). '' or why not.

        A robot that waits for its description topic (and has no file) leaves the node
        without a model until it comes (:meth:`on_robots_description`).
        """
        waiting = robots.waiting()
        if waiting:
            why = f"no model yet: robots {waiting} wait for their URDF on their description_topic"
            self._node.get_logger().info(why)
            return why
        xml, why = robots.urdf()
        if xml is None:
            return self._carry_out(self._models.reject("robots", why, False))
        return self.load_urdf(xml, "robots' URDFs")

    def on_robots_description(self, robot: str) -> None:
        """``robot``'s description topic brought a URDF: the robots composed, parsed off the loop.

        The composed document goes to the same worker as the ``robot_description`` topic's
        (the loop ticks on with the old model; an unchanged document is not built again). A
        document that cannot be composed loses that robot's description (:meth:`_lose_robot`).
        """
        robots = self._robots
        if robots is None:
            return
        xml, why = robots.urdf()
        if xml is None:
            if robots.waiting():
                log_throttled(
                    self._node.get_logger(),
                    "info",
                    "urdf incomplete",
                    f"robots' URDF not complete: {why}",
                    5.0,
                )
            else:
                self._lose_robot(robot, why)
            return
        if self._worker is None:
            models = self._models
            self._worker = UrdfWorker(lambda: models.current_digest, self._config)
        self._worker.submit(xml, robots.source(robot))

    def _lose_robot(self, robot: str, why: str) -> None:
        """``robot``'s URDF rejected: it stops (and the robots linked to it); the model stays.

        See :mod:`~itasc_ros.ros.node_robots`; the error stays in ``~/status`` and
        /diagnostics until a composed URDF is installed.
        """
        robots = self._robots
        if robots is None:
            return
        robots.lose(robot, why)
        text = _clip(
            f"robot {robot!r}: description lost ({why}); its joint states are no longer "
            f"taken: it and the robots linked to it by constraints stop within input_timeout, "
            f"the others go on (robots lost: {sorted(robots.lost)})"
        )
        self._error = text
        self._lost += 1
        self._node.get_logger().error(text)

    def load_file(
        self,
        path: str,
        refuse: bool = False,
        config: ControllerConfig | None = None,
        then: Callable[[], None] | None = None,
        must_open: bool = False,
    ) -> str:
        """Load ``path`` as the URDF (the lowest-precedence source). Returns '' or why not.

        Raises:
            ConfigError: with ``must_open`` (start-up), the file could not be opened.
        """
        data, why = read_urdf_file(path, must_open)
        if data is None:
            return self._carry_out(self._models.reject("file", why, refuse))
        return self.load_urdf(data, "file", refuse, config, then)

    def _on_robot_description(self, msg: String) -> None:
        if self._models.source == "parameter":
            self._node.get_logger().info(
                "robot_description topic ignored: the robot_description parameter is set",
                once=True,
            )
            return
        if self._worker is None:
            models = self._models
            self._worker = UrdfWorker(lambda: models.current_digest, self._config)
        self._worker.submit(msg.data, "topic")  # parsed and built in its thread, then installed

    def install_parsed(self) -> None:
        """The topic's URDFs parsed (and their controllers built) by the worker: install them.

        Called by the executor's housekeeping timer (the EventsExecutor has no guard
        conditions for the worker to wake it).
        """
        worker = self._worker
        while worker is not None and worker.results:
            # off the queue once installed: the model is coming (model_coming) until then
            source, digest, tree, why, built, cfg = worker.results[0]
            try:
                if cfg is not self._config():  # the parameters changed since: build again
                    built = None
                self._take_parsed(source, digest, tree, why, built=built)
            finally:
                worker.results.popleft()

    def _take_parsed(
        self,
        source: str,
        digest: str,
        tree: KinematicTree | None,
        why: str,
        refuse: bool = False,
        config: ControllerConfig | None = None,
        built: Controller | Exception | None = None,
        then: Callable[[], None] | None = None,
    ) -> str:
        """Install the model of a parsed URDF, or report why not. Returns '' or why not.

        ``built``: the controller made for ``tree`` and ``config`` beforehand (else made here,
        before the swap). ``then()`` runs in the swap's critical section when the model was
        taken (the journal's record of the parameter change that asked for it).

        The decisions are :meth:`ModelManager.take`'s (a URDF that does not parse keeps the
        model, one that does not fit drops it, ``refuse`` changes nothing); this carries
        them out.
        """
        cfg = self._config() if config is None else config
        if built is None and tree is not None:  # made before the swap: the loop ticks on
            with self._swaps.build():
                built = build_controller(tree, cfg)
        robot = None if self._robots is None else self._robots.robot_of(source)
        if robot is not None and self._models.controller is not None:
            if tree is None and why != SAME_URDF:  # one robot's URDF: that robot stops
                self._lose_robot(robot, why)
                return why
            if isinstance(built, Exception):
                self._lose_robot(robot, f"does not fit the configuration: {built}")
                return str(built)
        with self._lock, self._swaps.swap():  # between two ticks
            own = self._error
            outcome = self._models.take(source, digest, tree, why, cfg, refuse, built)
            outcome = self._decided(outcome, source, own)
            missing = unknown_link(outcome.cause)
            if missing is not None and tree is not None:
                outcome = self._name_the_link(outcome, missing, tree, source, cfg)
            self._swap_model(outcome)
            if then is not None and not outcome.reason:
                then()
            taken = outcome.change in (ModelChange.INSTALLED, ModelChange.SAME)
            back = self._robots.found(robot) if self._robots is not None and taken else []
            if self._robots is not None and self._robots.lost:  # still an error until back
                self._error = _clip(f"robots' descriptions lost: {self._robots.lost}")
        if back:
            self._node.get_logger().info(
                f"robots {back}: description back, their joint states taken"
            )
        return self._report_model(outcome)

    def _name_the_link(
        self,
        outcome: ModelOutcome[PoseStamped],
        missing: UnknownLinkError,
        tree: KinematicTree,
        source: str,
        cfg: ControllerConfig,
    ) -> ModelOutcome[PoseStamped]:
        """A configured link the URDF lacks: the parameter, the closest link, the links.

        At start-up from the ``robot_description`` parameter or ``urdf_file`` (static) that is
        fatal (:class:`ConfigError`, one line). From the topic, whose next URDF may have the
        link, it is the error (``~/status``, /diagnostics), logged throttled.

        Raises:
            ConfigError: at start-up, the URDF from the parameter or the file.
        """
        text = link_error(missing, tree, source, cfg)
        if self._starting and source in ("parameter", "file"):
            raise ConfigError(text)
        if outcome.change == ModelChange.REFUSED:
            return dataclasses.replace(
                outcome, reason=f"refused, nothing changed: {text}", logs=()
            )
        state = "no command" if outcome.change == ModelChange.IDLE else "model dropped, no command"
        text = _clip(f"{text} ({state} until the URDF has that link or the link is changed)")
        self._error = text
        log_throttled(self._node.get_logger(), "error", "link missing", text, 5.0)
        return dataclasses.replace(outcome, reason=text, logs=())

    def _decided(
        self, outcome: ModelOutcome[PoseStamped], source: str, own: str | None
    ) -> ModelOutcome[PoseStamped]:
        """The models decided on a URDF: their error replaces the node's own (see :attr:`error`).

        Unless the URDF was ignored or refused (the models' error unchanged then). The
        installed model's URDF again clears an error, saying so, the node's own as well.

        Args:
            outcome: :meth:`ModelManager.take`'s or :meth:`ModelManager.reject`'s.
            source: where the URDF came from.
            own: the node's own error before the decision (None: none).
        """
        if outcome.change in (ModelChange.IGNORED, ModelChange.REFUSED):
            return outcome
        self._error = None
        if outcome.change == ModelChange.SAME and own and not outcome.logs:
            again = f"URDF from the {source} is the current model's again"  # as the models say
            return dataclasses.replace(outcome, logs=((logging.INFO, again),))
        return outcome

    def _carry_out(self, outcome: ModelOutcome[PoseStamped]) -> str:
        """Do what a URDF's outcome asks (see :meth:`_swap_model`, :meth:`_report_model`)."""
        with self._lock:
            outcome = self._decided(outcome, "", None)
            self._swap_model(outcome)
        return self._report_model(outcome)

    def _swap_model(self, outcome: ModelOutcome[PoseStamped]) -> None:
        """Between two ticks: the old model's zero, the command message, the held targets."""
        if outcome.zero_on is not None:  # the old model was commanding: stop it
            self._outputs.publish_zero(outcome.zero_on, wait=0.0, reason=ZeroReason.MODEL_CHANGE)
        if outcome.model_changed:
            self._on_model_changed()  # the tick's last step was the old model's
            self._outputs.fit(self._models.controller)  # its command message, robots' shares
            for name, msg in outcome.pending.items():
                self._inputs.deposit_marker_pose(name, msg)

    def _report_model(self, outcome: ModelOutcome[PoseStamped]) -> str:
        """After the swap: its log lines first (the markers take a while), the markers; why."""
        logger = self._node.get_logger()
        for level, text in outcome.logs:
            if level >= logging.ERROR:
                logger.error(text)
            elif level >= logging.WARNING:
                logger.warning(text)
            else:
                logger.info(text)
        if outcome.model_changed:  # RViz drag-able targets
            ctrl = self._models.controller
            enabled = ctrl is not None and bool(P.value(self._node, "interactive_marker"))
            self._inputs.replace_markers(ctrl, enabled)
        return outcome.reason


__all__ = ["ModelSource"]
