"""The robot model's lifecycle, ROS-free: which URDF's controller is installed, and why.

itasc_node gets URDFs from its ``robot_description`` parameter, the topic of that name, or
``urdf_file``; a URDF is untrusted input. :class:`ModelManager` owns the installed
:class:`~itasc_ros.core.control.Controller` and decides what each parsed URDF does:

* it parses and fits the configuration: **installed** (a zero command on the old controller
  if it was commanding; the last joint state replayed with its own reception time; targets
  carried over to a model with the same root link; targets that came while there was no model
  applied);
* it does not parse: the current model is **kept** (a transient bad publish);
* it parses but does not fit (``joints`` or a constraint's link not in it): the robot changed,
  the current model is **dropped** (a zero command if it was commanding, then none until a
  fitting URDF arrives);
* a parameter change (``refuse``) is **refused** instead: nothing changes.

Each call returns a :class:`ModelOutcome`: what the node must do (send a zero on the old
controller, feed pending targets, replace its markers) and log. The node keeps the parse
thread, the publishers and the logging.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import ConfigError, InputError, ItascError
from ..kinematics import spatial
from ..kinematics.tree import KinematicTree
from ..kinematics.urdf import MAX_URDF_BYTES
from .controller import Controller
from .health import clip_reason

if TYPE_CHECKING:
    from .config import ControllerConfig

T = TypeVar("T")  # a pending target as the node received it (e.g. a PoseStamped)

SAME_URDF = "the URDF of the installed model"  # a parse result: nothing to parse or install


class ModelChange(str, Enum):
    """What a URDF did to the installed model (:attr:`ModelOutcome.change`)."""

    INSTALLED = "installed"  # a new controller is installed
    SAME = "same"  # the installed model's URDF again: nothing rebuilt (clears the URDF error)
    IGNORED = "ignored"  # nothing to do (a topic URDF while the parameter is set, a stale one)
    KEPT = "kept"  # rejected (does not parse): the current model keeps commanding
    DROPPED = "dropped"  # rejected (does not fit): the current model is dropped, no command
    IDLE = "idle"  # rejected while there is no model: still none
    REFUSED = "refused"  # rejected by a refusable request (a parameter change): nothing changed

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ModelOutcome(Generic[T]):
    """What the node must do after a URDF was handled.

    Attributes:
        change: see :class:`ModelChange`.
        reason: '' unless the URDF was rejected: why (also :attr:`ModelManager.error`, except
            for ``REFUSED``, which goes back to the caller).
        zero_on: the old controller, which was commanding and whose motion the new one could
            not take over (other joints, no motion limits): send it one zero command now
            (``INSTALLED``, ``DROPPED``); else None.
        pending: targets received while there was no model, to apply to the new controller
            now (``INSTALLED``).
        logs: ``(logging level, text)`` lines to log, in order.
        cause: the error of a URDF that does not fit the configuration (e.g. a
            :class:`~itasc_ros.core.errors.ConfigError` caused by an ``UnknownLinkError``), for
            a caller that names the setting at fault; else None.
    """

    change: ModelChange
    reason: str = ""
    zero_on: Controller | None = None
    pending: dict[str, T] = field(default_factory=dict)
    logs: tuple[tuple[int, str], ...] = ()
    cause: Exception | None = None

    @property
    def model_changed(self) -> bool:
        """The installed controller is another one (``INSTALLED``) or none (``DROPPED``)."""
        return self.change in (ModelChange.INSTALLED, ModelChange.DROPPED)


def urdf_digest(xml: str | bytes) -> str:
    """A fingerprint of a URDF document (to skip reloading the same one)."""
    data = xml.encode("utf-8", errors="surrogatepass") if isinstance(xml, str) else xml
    return hashlib.sha256(data).hexdigest()


def build_controller(tree: KinematicTree, config: ControllerConfig) -> Controller | Exception:
    """A controller of ``config`` on ``tree``, or the exception that refused it; never raises.

    It shares nothing with a running controller: it can be built on any thread while another
    one ticks, then installed between two ticks (:meth:`ModelManager.take`'s ``built``).
    """
    try:
        return Controller(tree, config)
    except Exception as exc:  # ItascError: does not fit; anything else: reported, never raised
        return exc


def parse_urdf(xml: str | bytes) -> tuple[KinematicTree | None, str]:
    """``(tree, '')`` or ``(None, why)``: never raises (a URDF is untrusted input)."""
    try:
        return KinematicTree.from_urdf(xml), ""
    except ItascError as exc:
        return None, str(exc)
    except Exception as exc:  # e.g. MemoryError: a hostile URDF must not kill the node
        return None, f"internal error while parsing: {type(exc).__name__}: {exc}"


def read_urdf_file(path: str, must_open: bool = False) -> tuple[bytes | None, str]:
    """``(content, '')`` or ``(None, why)`` for ``urdf_file``.

    Bytes: the XML declaration names the encoding. Files larger than
    :data:`~itasc_ros.core.kinematics.urdf.MAX_URDF_BYTES` are refused unread beyond that.

    Args:
        path: the file.
        must_open: raise when the file cannot be opened (it does not exist, is a directory,
            may not be read), as at a node's start-up; else say why in the result.

    Raises:
        ConfigError: with ``must_open``, the file could not be opened.
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_URDF_BYTES + 1)
    except OSError as exc:
        why = f"cannot read urdf_file {path!r}: {exc}"
        if must_open:
            raise ConfigError(f"{why} (urdf_file names the robot's URDF file)") from exc
        return None, why
    if len(data) > MAX_URDF_BYTES:
        return None, f"urdf_file {path!r} is larger than the {MAX_URDF_BYTES} bytes accepted"
    return data, ""


class ModelManager(Generic[T]):
    """The installed controller and the URDF it came from; decides each URDF's fate.

    Attributes:
        controller: the installed controller (None: no model, no command).
        digest: :func:`urdf_digest` of the installed model's URDF ('' for none).
        source: where it came from: ``parameter``, ``topic``, ``file`` ('' for none).
        error: why the latest URDF was not installed ('' when it was, or the installed
            model's URDF came again).
        rejections: URDFs rejected or refused so far.
        enabled: ``~/enable``; every installed controller gets it.
        last_joint_state: ``(names, positions, header stamp or None, reception time [s])`` of
            the last accepted joint state (see :meth:`remember_joint_state`).
        last_odometry: ``(frame, child, values (13,), header stamp or None, reception time)``
            of the last odometry message (see :meth:`remember_odometry`).
        pending_targets: the latest target per constraint received while there was no model.
    """

    def __init__(self) -> None:
        self.controller: Controller | None = None
        self.digest = ""
        self.source = ""
        self.error = ""
        self.rejections = 0
        self.enabled = True
        self.last_joint_state: tuple[Sequence[str], Any, float | None, float] | None = None
        self.pending_targets: dict[str, T] = {}
        self.last_odometry: tuple[str, str, Any, float | None, float] | None = None

    @property
    def current_digest(self) -> str:
        """The digest of the installed model's URDF, '' when there is none."""
        return self.digest if self.controller is not None else ""

    def set_enabled(self, enabled: bool) -> None:
        """``~/enable``: applied to the installed controller and to every later one."""
        self.enabled = enabled
        if self.controller is not None:
            self.controller.set_enabled(enabled)

    def remember_joint_state(
        self, names: Sequence[str], positions: Any, stamp: float | None, received: float
    ) -> None:
        """Keep a joint state (accepted, or received with no model) for the next model."""
        self.last_joint_state = (names, positions, stamp, received)

    def remember_odometry(
        self, frame: str, child: str, values: Any, stamp: float | None, received: float
    ) -> None:
        """Keep the last odometry message for the next model (its world targets need it)."""
        self.last_odometry = (frame, child, values, stamp, received)

    def hold_target(self, name: str, target: T) -> None:
        """Keep the target of constraint ``name`` until a model is installed (none now)."""
        self.pending_targets[name] = target

    def take(
        self,
        source: str,
        digest: str,
        tree: KinematicTree | None,
        why: str,
        config: ControllerConfig,
        refuse: bool = False,
        built: Controller | Exception | None = None,
    ) -> ModelOutcome[T]:
        """Install the model of a parsed URDF, or reject it.

        Args:
            source: ``parameter``, ``topic`` or ``file``.
            digest: :func:`urdf_digest` of the URDF.
            tree: the parsed tree, or None: then ``why`` says why (:data:`SAME_URDF`: the
                installed model's URDF, not parsed again).
            why: '' or why the URDF did not parse.
            config: the configuration of the new controller.
            refuse: a refusable request (a parameter change): a rejected URDF changes
                nothing (``REFUSED``).
            built: :func:`build_controller`'s result for ``tree`` and ``config``, made
                beforehand (off the control loop's thread); None: built here.
        """
        if source == "topic" and self.source == "parameter":
            return ModelOutcome(ModelChange.IGNORED)  # the parameter was set meanwhile: it wins
        if why == SAME_URDF:
            if digest != self.digest:  # the model changed since: that result is outdated
                return ModelOutcome(ModelChange.IGNORED)
            logs: tuple[tuple[int, str], ...] = ()
            if self.error:
                logs = ((logging.INFO, f"URDF from the {source} is the current model's again"),)
            self.error = ""
            return ModelOutcome(ModelChange.SAME, logs=logs)
        if tree is None:
            return self.reject(source, why, refuse)
        ctrl = build_controller(tree, config) if built is None else built
        if isinstance(ctrl, ItascError):
            why = f"robot {tree.name!r} does not fit the configuration: {ctrl}"
            return self.reject(source, why, refuse, drop=True, cause=ctrl)
        if isinstance(ctrl, Exception):  # defensive: no URDF may kill the node
            why = f"robot {tree.name!r}: internal error: {type(ctrl).__name__}: {ctrl}"
            return self.reject(source, why, refuse, drop=True)
        self.digest = digest
        self.error = ""
        return self._install(ctrl, source)

    def reject(
        self,
        source: str,
        why: str,
        refuse: bool = False,
        drop: bool = False,
        cause: Exception | None = None,
    ) -> ModelOutcome[T]:
        """Reject a URDF from ``source``; with ``drop`` (the robot changed) also go idle.

        With ``refuse`` (a refusable request) nothing changes but the count: ``REFUSED``.
        ``cause``: the error behind ``why`` (see :attr:`ModelOutcome.cause`).
        """
        self.rejections += 1
        old = self.controller
        if refuse:
            reason = clip_reason(f"URDF from the {source} refused, nothing changed: {why}")
            logs = ((logging.ERROR, reason),)
            return ModelOutcome(ModelChange.REFUSED, reason, logs=logs, cause=cause)
        zero_on = None
        if old is not None and drop:
            zero_on = old if old.commanding else None
            self.controller = None
            self.digest = ""
            self.source = ""
            change = ModelChange.DROPPED
            state = f"model {old.tree.name!r} dropped, no command until a fitting URDF arrives"
        elif old is not None:
            change = ModelChange.KEPT
            state = f"keeping model {old.tree.name!r}"
        else:
            change = ModelChange.IDLE
            state = "no model, no command until a good URDF arrives"
        reason = clip_reason(f"URDF from the {source} rejected ({state}): {why}")
        self.error = reason
        logs = ((logging.ERROR, reason),)
        return ModelOutcome(change, reason, zero_on=zero_on, logs=logs, cause=cause)

    def _install(self, ctrl: Controller, source: str) -> ModelOutcome[T]:
        old = self.controller
        logs: list[tuple[int, str]] = []
        ctrl.set_enabled(self.enabled)
        if self.last_joint_state is not None:
            # With its own reception time: a state from before a long parse is stale, and the
            # next fresh state re-anchors the stamp order (replayed as received now, it was
            # the anchor, and the fresh states "leapt ahead" of it for input_timeout).
            names, pos, stamp, received = self.last_joint_state
            try:
                ctrl.set_joint_state(names, pos, received, stamp)
            except InputError:  # e.g. another robot's joints: the next state will do
                pass
        if self.last_odometry is not None and ctrl.config.world_frame:
            frame, child, values, stamp, received = self.last_odometry
            try:
                ctrl.set_odometry(frame, child, values, received, stamp)
            except InputError:  # e.g. another root link: the next message will do
                pass
        if old is not None and old.tree.root_link == ctrl.tree.root_link:
            # Targets are poses in the root frame (or the world's): carried over to a model of
            # the same robot (not to another robot, for which they mean nothing), with the
            # base's odometry.
            ctrl.take_odometry(old)
            for name in old.pose_constraints:
                given = old.given_target(name)
                if given is None:  # e.g. jogging from the effector: its pose in the root
                    _, target = old.poses(name)
                    given = None if target is None else ("", target)
                if given is None or name not in ctrl.pose_constraints:
                    continue
                frame, target = given
                try:
                    ctrl.set_target(
                        name,
                        frame,
                        target[:3, 3],
                        spatial.matrix_to_quat(target),
                        old.target_stamp(name),
                    )
                except InputError as exc:  # e.g. beyond the new model's reach: not carried
                    logs.append((logging.WARNING, f"target of {name!r} not carried over: {exc}"))
        if ctrl.ignored_joint_limits:
            logs.append(
                (
                    logging.WARNING,
                    f"joint_limits for joints that robot {ctrl.tree.name!r} does not have are "
                    f"ignored: {ctrl.ignored_joint_limits}",
                )
            )
        # The same joints: the new controller goes on from the old one's command (within the
        # motion limits); else the old one is sent a zero (another robot's command).
        taken = old is not None and ctrl.take_motion(old)  # at rest: its acceleration only
        stop_old = old is not None and old.commanding and not taken
        self.controller = ctrl
        self.source = source
        pending, self.pending_targets = self.pending_targets, {}
        logs.append(
            (
                logging.INFO,
                f"model '{ctrl.tree.name}' from the {source}: joints {ctrl.joint_names}, "
                f"constraints {[c.name for c in ctrl.config.constraints]}",
            )
        )
        free = ctrl.full_tree.free_root_joint
        if free:
            world = ctrl.config.world_frame
            logs.append(
                (
                    logging.INFO if world else logging.WARNING,
                    f"the URDF's free joint {free} at the root is left out: the pose of "
                    f"{ctrl.base_root!r} comes from odometry in "
                    + (f"{world!r}" if world else "world_frame, which is not set: a fixed base"),
                )
            )
        return ModelOutcome(
            ModelChange.INSTALLED,
            zero_on=old if stop_old else None,
            pending=pending,
            logs=tuple(logs),
        )
