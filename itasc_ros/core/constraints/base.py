"""The constraint interface: what the scene needs from every iTaSC constraint."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConfigurationError, ConstraintError, TargetNotSet
from ..kinematics.tree import KinematicTree
from .schema import Field

REGISTRY: dict[str, type[Constraint]] = {}
"""Constraint types by ``type_name``: a subclass that sets ``type_name`` registers itself."""

WEIGHT = Field("weight", "double", 1.0, "Task weight Wy of every row.", 0.0, 1e6, live=True)
GAIN = Field("gain", "double", 20.0, "Feedback gain K [1/s].", 0.0, 1000.0, live=True)
MAX_PRIORITY = 100
"""Largest (lowest) priority level accepted."""

#: Counts every change of any constraint's layout (rows, links, enabled): a scene whose last
#: rebuild saw the current count needs no look at its constraints (one compare per solve).
LAYOUT_EPOCH = [0]
#: Counts every move of any constraint's tick arrays (its twists, its compiled tick's record) to
#: another holder: a scene that gave its constraints their arrays at the current count needs
#: no look at them (one compare per solve).
HOLDER_EPOCH = [0]
PRIORITY = Field(
    "priority",
    "integer",
    1,
    "Strict priority level: 1 is the highest; a constraint of a lower level (a larger number) "
    "acts only in the null space of the higher levels (damped); weights blend rows within a "
    "level.",
    1,
    MAX_PRIORITY,
    live=True,
)

RESOLVES_REDUNDANCY = Field(
    "resolves_redundancy",
    "bool",
    False,
    "A term that only resolves the spare motion the tasks above it leave, such as a posture "
    "under a redundant arm's hand: it starts no motion on its own (the node waits for another "
    "task's target) and is not reported when it stays short of what it asks for.",
)

Array = NDArray[np.float64]


class PoseGoal(NamedTuple):
    """A fixed pose of one link in the root frame, on selected root-frame axes.

    What :meth:`Constraint.pose_goal` gives when a constraint is no more than that.

    Attributes:
        link: the link to place.
        pose: (4, 4) its target pose in the root frame [m] (the constraint's own array: read
            it, do not change it).
        position_axes: the constrained position components, letters of 'xyz' (root frame).
        rotation_axes: the constrained rotation components, letters of 'xyz' (root frame).
    """

    link: str
    pose: Array
    position_axes: str
    rotation_axes: str


TICK_POSE = 1
"""The kind of :class:`CompiledTick` of a pose task toward a set pose (a CopyPose's)."""
TICK_JOINTS = 2
"""The kind of :class:`CompiledTick` of joint values (a JointValue's)."""
TICK_COM = 3
"""The kind of :class:`CompiledTick` of a centre of mass (a CenterOfMass's)."""


class CompiledTick(NamedTuple):
    """How a scene's compiled tick writes a constraint's rows (:meth:`Constraint.compiled_tick`).

    Attributes:
        kind: the kind of tick (:data:`TICK_POSE`, :data:`TICK_JOINTS`, :data:`TICK_COM`).
        size: the values of the constraint's tick record, the arrays its tick reads and
            writes (the scene keeps it in its buffer: :meth:`Constraint.keep_record`).
        link: the effector link's index in the tree (-1: none).
        sel: the feature rows the constraint selects (at most 6; none for joint values).
    """

    kind: int
    size: int
    link: int
    sel: tuple[int, ...]


def check_positive(name: str, value: float, allow_zero: bool = True) -> float:
    """A finite, non-negative (or positive) float, else ConstraintError."""
    v = float(value)
    if not math.isfinite(v) or v < 0.0 or (v == 0.0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConstraintError(f"{name} must be a finite number {bound}, got {value!r}")
    return v


class Constraint(ABC):
    """One iTaSC constraint: a virtual armature from an effector to a target.

    A constraint owns its feature coordinates and writes, for the current configuration,
    its rows of the stacked system ``A q' = y' + B Xu'``:
    ``A = Cq - Cf Jf^-1 Jq`` (m, n), ``B = Cf Jf^-1 Ju`` (m, 6), the output ``y`` (m,) and
    the desired output rate ``y'_d = yd' + K (yd - y)``.

    **A constraint type is the unit of extension.** A subclass that sets :attr:`type_name`
    registers itself in :data:`REGISTRY`, declares its settings in :attr:`FIELDS` (name, kind,
    default, range, live or not, description) and builds itself from them in
    :meth:`from_settings`; the controller, the node's parameters, the replay and the docs
    derive everything from that. The rest of the contract lives here, with defaults for a
    constraint that takes no target: :meth:`takes_target`, :meth:`resolve_settings`,
    :meth:`target_distance`, :attr:`has_target`, :meth:`set_target`, :attr:`effector_link`,
    :meth:`target_pose`, :meth:`carry_over`, and :meth:`example_settings` for the contract test
    every registered type joins.

    **Position IK** (:func:`~itasc_ros.core.ik.solve_ik`) solves any constraint on its rows and
    reads two more declarations, with defaults that suit a constraint measuring no orientation:
    :meth:`orientation_rows` (which rows are checked against the rotation tolerance) and
    :meth:`pose_goal` (a constraint that is just a root-frame pose of one link may be solved by
    the compiled single-pose loop instead). A type joins IK by declaring them, nothing else.

    Class attributes:
        type_name: the name the type registers under ('' = not a type of its own).
        FIELDS: the type's settings (:class:`~itasc_ros.core.constraints.schema.Field`).
        one_sided: the rows are inequalities (see :meth:`~itasc_ros.core.solve.Scene.solve`).
        hard: the inequalities are bounds of every priority level (a safety limit), not a
            weighted task.

    Attributes:
        name: unique name in a scene.
        weight: task weight Wy (>= 0) of every row.
        gain: feedback gain K [1/s].
        feedforward: whether the target's twist (Xu') is fed forward.
        enabled: a disabled constraint contributes no rows.
        priority: strict priority level (1 = highest); see :meth:`set_priority`.
        resolves_redundancy: only resolves the spare motion of the tasks above it: starts no
            motion on its own and is not reported when short (see :data:`RESOLVES_REDUNDANCY`).
    """

    type_name: ClassVar[str] = ""
    FIELDS: ClassVar[tuple[Field, ...]] = (WEIGHT, GAIN, PRIORITY)
    SHARED_FIELDS: ClassVar[tuple[Field, ...]] = (PRIORITY, RESOLVES_REDUNDANCY)
    """Settings of every type that the base class applies (:meth:`build`): a registered type
    whose ``FIELDS`` leaves one out gets it appended."""
    one_sided: ClassVar[bool] = False
    """True when every row is an inequality ``A q' >= y'_d``: the scene gives a row its weight
    ``wy`` only while the solution would otherwise violate it (an active set)."""
    pose_feedback: ClassVar[bool] = False
    """True when ``y'_d`` is the gain times a pose error (position rows [m], orientation rows
    [rad], :meth:`orientation_rows`): the scene may clamp it to the Cartesian speed limits
    (:meth:`~itasc_ros.core.solve.Scene.set_feedback_limits`)."""
    hard: ClassVar[bool] = False
    """With ``one_sided``: True when the inequalities are hard, bounds of every priority level
    that no task may break (collision: a row is on while its weight is > 0, inside the
    activation distance); False when they are a weighted task of their level, switched on by
    the active set (joint-limit avoidance: it gives way to the tasks of its level)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("type_name", "")
        if name:
            if name in REGISTRY and REGISTRY[name].__qualname__ != cls.__qualname__:
                raise ConstraintError(f"constraint type {name!r} is registered twice")
            have = {f.name for f in cls.FIELDS}
            missing = tuple(f for f in Constraint.SHARED_FIELDS if f.name not in have)
            if missing:
                cls.FIELDS = (*cls.FIELDS, *missing)
            REGISTRY[name] = cls

    def __init__(
        self, name: str, weight: float = 1.0, gain: float = 20.0, feedforward: bool = True
    ) -> None:
        if not name:
            raise ConstraintError("a constraint needs a non-empty name")
        self.name = name
        self.weight = check_positive(f"{name}: weight", weight)
        self.gain = check_positive(f"{name}: gain", gain)
        self.feedforward = bool(feedforward)
        self._enabled = True
        self.priority = 1
        self.resolves_redundancy = False
        # (6,) each; a scene holding the constraint keeps them in its workspace (views of its
        # buffer: keep_twists), so they are written in place, never rebound by others
        self._target_twist = np.zeros(6)  # root frame: v [m/s], w [rad/s]
        self._twist_seen = np.zeros(6)  # the target twist at the last solve
        self._structure_version = 0
        self._tree: KinematicTree | None = None

    @property
    def bound_tree(self) -> KinematicTree | None:
        """The tree the constraint was last bound to by a scene (None before)."""
        return self._tree

    def keep_twists(self, twist: Array, seen: Array) -> None:
        """Hold the target twist and the twist last seen in ``twist`` and ``seen`` (6,) each.

        A scene keeps them in its workspace (views of its buffer) from its layout on; their
        values are carried over. Nothing is done when they are held there already.
        """
        if self._target_twist is twist and self._twist_seen is seen:
            return
        twist[:] = self._target_twist
        seen[:] = self._twist_seen
        self._target_twist, self._twist_seen = twist, seen
        HOLDER_EPOCH[0] += 1

    def compiled_tick(self, tree: KinematicTree) -> CompiledTick | None:
        """How a scene's compiled tick writes this constraint's rows on ``tree``, or None.

        None (this default): the scene calls :meth:`update`. Otherwise the scene keeps the
        constraint's tick record in its buffer (:meth:`keep_record`) and writes its rows in its
        own compiled call, with the constraint's gain and weight of the tick.
        """
        return None

    def keep_record(self, record: Array) -> None:
        """Hold the values of the compiled tick in ``record`` (:meth:`compiled_tick`'s size).

        A scene keeps them in its buffer (a view of it) from its layout on; the values are
        carried over. Nothing is done when they are held there already.

        Raises:
            NotImplementedError: the constraint has no compiled tick.
        """
        raise NotImplementedError(f"{type(self).__name__} has no compiled tick")

    def attach(self, tree: KinematicTree) -> None:
        """Bind to ``tree`` (:meth:`bind`) and keep it as :attr:`bound_tree` (a scene's call).

        Raises:
            UnknownLinkError, UnknownJointError: as :meth:`bind`.
        """
        self.bind(tree)
        self._tree = tree

    # -- configuration -----------------------------------------------------------------
    def set_weight(self, weight: float) -> None:
        """Set the task weight Wy (>= 0)."""
        self.weight = check_positive(f"{self.name}: weight", weight)

    def set_gain(self, gain: float) -> None:
        """Set the feedback gain K [1/s] (>= 0)."""
        self.gain = check_positive(f"{self.name}: gain", gain)

    def set_priority(self, priority: int) -> None:
        """Set the strict priority level (1 = highest, up to :data:`MAX_PRIORITY`).

        Rows of a lower level (a larger number) act only in the null space of the rows of the
        higher levels; rows of one level blend by their weights.

        Raises:
            ConstraintError: not an integer in [1, MAX_PRIORITY].
        """
        if (
            isinstance(priority, bool)
            or not isinstance(priority, int | np.integer)
            or not 1 <= int(priority) <= MAX_PRIORITY
        ):
            raise ConstraintError(
                f"{self.name}: priority must be an integer in [1, {MAX_PRIORITY}], "
                f"got {priority!r}"
            )
        if int(priority) != self.priority:
            self.priority = int(priority)
            self._structure_changed()  # the scene regroups its rows by level

    def set_target_twist(self, twist: ArrayLike | None, *, check: bool = True) -> None:
        """Target twist Xu' (6,) in the root frame: linear [m/s] of the target origin, angular.

        None sets it to zero.

        Args:
            twist: (6,) [m/s, rad/s], or None.
            check: validate it (6 finite values); ``False`` for a (6,) float array the caller
                has checked (the controller's own twists, filtered and capped: set every tick
                a target is aimed ahead, where the checks' numpy reduction costs more than
                the copy), as :meth:`TargetFrame.set_pose`'s ``check``.

        Raises:
            ConfigurationError: with ``check``, not 6 finite values.
        """
        if twist is None:
            self._target_twist[:] = 0.0
            return
        if not check:
            self._target_twist[:] = twist
            return
        t = np.asarray(twist, dtype=float).reshape(-1)
        if t.shape != (6,) or not np.all(np.isfinite(t)):
            raise ConfigurationError(f"{self.name}: target twist must be 6 finite values, got {t}")
        self._target_twist[:] = t

    def mark_twist_seen(self) -> None:
        """Note the target twist as the one of this solve.

        A scene that limits how fast a pose task's demand changes
        (:meth:`~itasc_ros.core.solve.Scene.set_demand_limits`) lets the change of the target's
        twist through whole (fed forward, or followed by the feedback); this is the twist it
        compares with at the next solve.
        """
        self._twist_seen[:] = self._target_twist

    @property
    def target_twist(self) -> Array:
        """(6,) the target twist in the root frame (a copy)."""
        return self._target_twist.copy()

    @property
    def twist_store(self) -> Array:
        """(6,) the array the target twist is kept in (root frame), for a compiled call.

        Read it at each use: a scene moves it into its workspace (:meth:`keep_twists`).
        """
        return self._target_twist

    @property
    def structure_version(self) -> int:
        """Changes whenever the number of rows or the bound links change."""
        return self._structure_version

    def _structure_changed(self) -> None:
        self._structure_version += 1
        LAYOUT_EPOCH[0] += 1

    @property
    def enabled(self) -> bool:
        """False: the constraint contributes no rows (see :class:`Constraint`)."""
        return self._enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        if bool(value) != self._enabled:
            self._enabled = bool(value)
            LAYOUT_EPOCH[0] += 1

    # -- the type's contract ------------------------------------------------------------
    @classmethod
    @abstractmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> Constraint:
        """Build from checked settings (every field of :attr:`FIELDS`, see ``check_settings``).

        Raises:
            ConstraintError: values the fields cannot check alone (e.g. axes letters).
        """

    @classmethod
    def build(cls, name: str, settings: Mapping[str, Any]) -> Constraint:
        """:meth:`from_settings`, then the settings every type shares (:attr:`SHARED_FIELDS`).

        Raises:
            ConstraintError: as :meth:`from_settings`, or a bad shared setting.
        """
        c = cls.from_settings(name, settings)
        c.set_priority(int(settings.get("priority", PRIORITY.default)))
        c.resolves_redundancy = bool(
            settings.get("resolves_redundancy", RESOLVES_REDUNDANCY.default)
        )
        return c

    @classmethod
    def example_settings(cls, tree: KinematicTree) -> list[dict[str, Any]]:
        """Settings that exercise this type on ``tree`` (the contract test builds each one).

        The default is the fields' defaults; a type whose defaults are not usable on their
        own (e.g. one that names joints) overrides it.
        """
        return [{}]

    @classmethod
    def takes_target(cls, settings: Mapping[str, Any]) -> bool:
        """True when a constraint with these settings takes its target pose from outside."""
        return False

    @classmethod
    def resolve_settings(cls, settings: Mapping[str, Any], tree: KinematicTree) -> dict[str, Any]:
        """The settings with defaults that need the robot filled in (e.g. the tip link)."""
        return dict(settings)

    @classmethod
    def target_distance(cls, settings: Mapping[str, Any]) -> float:
        """How far [m] from the effector a meaningful target can be (0 for a pose target)."""
        return 0.0

    @property
    def has_target(self) -> bool:
        """True once the constraint has what it needs to act (always, without a target)."""
        return True

    def set_target(
        self, pose: ArrayLike, twist: ArrayLike | None = None, *, check: bool = True
    ) -> None:
        """Set the target pose (4, 4) and optional twist (6,).

        Raises:
            TargetNotSet: this type takes no target pose.
        """
        raise TargetNotSet(f"{self.name}: a {self.type_name} constraint takes no target pose")

    @property
    def effector_link(self) -> str | None:
        """The link this constraint moves toward a target (markers), or None."""
        return None

    def target_pose(self, tree: KinematicTree, q: Array) -> Array:
        """(4, 4) the target pose in the root frame at ``q`` (a copy).

        Raises:
            TargetNotSet: no target pose yet, or a type without one.
        """
        raise TargetNotSet(f"{self.name}: a {self.type_name} constraint has no target pose")

    def take_run_state(self, old: Constraint) -> None:
        """Take over what ``old`` had at run time: :meth:`carry_over`'s, and its last twist.

        ``old`` is the instance of the same name before a live change rebuilt the constraint:
        the target twist its last solve saw goes on here (a pose task's demand limit goes on
        from there).
        """
        self.carry_over(old)
        self._twist_seen[:] = old._twist_seen

    def carry_over(self, old: Constraint) -> None:
        """Take over the state set at run time (e.g. a streamed target) from ``old``.

        Called when a live change rebuilds the constraint from new settings; ``old`` is the
        instance of the same name before the change. Nothing to take by default.
        """
        return None

    # -- scene interface ---------------------------------------------------------------
    @property
    @abstractmethod
    def n_rows(self) -> int:
        """Number of output rows m."""

    @abstractmethod
    def bind(self, tree: KinematicTree) -> None:
        """Resolve names against the tree and allocate work arrays.

        Raises:
            UnknownLinkError, UnknownJointError: naming the valid choices.
        """

    @abstractmethod
    def update(
        self, tree: KinematicTree, q: Array, a: Array, b: Array, y: Array, ydot: Array, wy: Array
    ) -> None:
        """Write this constraint's rows after ``tree.compute(q)``; no allocation.

        Args:
            tree: the bound tree, with poses computed for the current q.
            q: (n,) the current joint positions.
            a: (m, n) rows of A.
            b: (m, 6) rows of B.
            y: (m,) outputs.
            ydot: (m,) desired output rates ``yd' + K (yd - y)``.
            wy: (m,) row weights (0 switches a row off, e.g. inside a distance band).
        """

    @abstractmethod
    def error(self, y: Array) -> float:
        """A scalar error of this constraint from its rows of ``y`` (norm of yd - y)."""

    # -- position IK -------------------------------------------------------------------
    def orientation_rows(self) -> tuple[bool, ...]:
        """(n_rows,) which rows measure an orientation [rad], in the order of the rows.

        Position IK checks these rows against its rotation tolerance and the others against
        its tolerance, and reports their norms as the rotation and position errors. The
        default is none (positions [m], distances [m], joint values [rad or m]).
        """
        return (False,) * self.n_rows

    def pose_goal(self) -> PoseGoal | None:
        """This constraint as a fixed pose of one link on root-frame axes, or None.

        A constraint whose rows are exactly those of :class:`PoseGoal` (a target pose set,
        not a link; the selected axes those of the root frame, or all six) gives it, so that
        position IK may solve it alone in its compiled single-pose loop. The default is None:
        IK iterates the constraint's rows.
        """
        return None


__all__ = [
    "GAIN",
    "MAX_PRIORITY",
    "PRIORITY",
    "REGISTRY",
    "WEIGHT",
    "Constraint",
    "PoseGoal",
    "check_positive",
]
