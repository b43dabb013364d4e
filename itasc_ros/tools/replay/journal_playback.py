"""Exact replay: the node's journal in a bag played back through the controller.

Every input each tick consumed, with the node's own reception times and header stamps, goes
through the same :class:`~itasc_ros.core.Controller` calls in the same order
(:mod:`itasc_ros.core.control.playback`), with the configuration of each parameter revision
(``~/parameters``). Never imports rclpy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.control.config import LIVE_KEYS
from itasc_ros.core.control.journal import JournalError, decode, urdf_tag
from itasc_ros.core.control.model_manager import urdf_digest
from itasc_ros.core.control.playback import ConfigHistory, Playback
from itasc_ros.core.errors import ConfigError, ItascError
from itasc_ros.params import config_from_parameters
from itasc_ros.tools.bagio import read_bag
from itasc_ros.tools.replay.errors import ReplayError
from itasc_ros.tools.replay.node_setup import NodeSetup
from itasc_ros.tools.replay.recorded_parameters import (
    NODE_DEFAULTS,
    is_live_parameter,
    live_changes,
    node_parameters,
)
from itasc_ros.tools.replay.result import ReplayResult

Array = NDArray[np.float64]


def journal_messages(bag: str | Path, setup: NodeSetup) -> list[Array]:
    """The data of every journal message in the bag, in bag order (empty: no journal)."""
    return [
        np.asarray(msg.data, dtype=float) for _t, _ns, msg in read_bag(bag, [setup.journal_topic])
    ]


def _tree_maker(xml: str) -> Callable[[], KinematicTree]:
    """A function that builds the URDF's tree the first time it is called, then returns it."""
    cache: list[KinematicTree] = []

    def make() -> KinematicTree:
        if not cache:
            cache.append(KinematicTree.from_urdf(xml))
        return cache[0]

    return make


def _check_live(overrides: Mapping[str, Any]) -> None:
    """Raise :class:`ReplayError` unless every override is a live parameter."""
    not_live = sorted(k for k in overrides if not is_live_parameter(k))
    if not_live:
        raise ReplayError(
            f"{', '.join(not_live)} cannot change in a replay of the journal (they change "
            "the node's structure); live parameters are: "
            + ", ".join(sorted(LIVE_KEYS))
            + ", constraints.<name>.<live field>"
        )


def _trees(
    bag: str | Path, setup: NodeSetup, revisions: Mapping[int, Mapping[str, Any]]
) -> dict[float, Any]:
    """URDF tag -> tree maker, for every URDF at hand: revisions, the bag's topic, the setup."""
    trees: dict[float, Any] = {}
    for params in revisions.values():
        xml = str(params.get("robot_description", "") or "")
        if xml.strip():
            trees[urdf_tag(urdf_digest(xml))] = _tree_maker(xml)
    for _topic, _t, msg in read_bag(bag, ["/robot_description"]):  # a URDF from the topic
        trees.setdefault(urdf_tag(urdf_digest(msg.data)), _tree_maker(msg.data))
    trees.setdefault(urdf_tag(urdf_digest(setup.urdf_xml)), _tree_maker(setup.urdf_xml))
    return trees


def config_history(
    bag: str | Path, setup: NodeSetup, overrides: Mapping[str, Any] | None = None
) -> ConfigHistory:
    """The configurations of the bag's parameter revisions and the URDFs at hand.

    Revisions come from the node's ``~/parameters`` messages; without them the setup's
    parameters are revision 0 and the only one. ``overrides`` must be live parameters.

    Raises:
        ReplayError: an override that is not live, or parameters that do not give a config.
    """
    extra = dict(overrides or {})
    _check_live(extra)
    revisions = node_parameters(bag, setup.node_name)
    setup_params = {k: v for k, v in setup.params.items() if k not in extra}
    if not revisions:
        revisions = {0: setup_params}
    first = min(revisions)
    base = {**NODE_DEFAULTS, **revisions[first]}
    changes: dict[int, dict[str, Any]] = {}
    for r in sorted(revisions)[1:]:
        if r - 1 in revisions:
            changes[r] = live_changes(revisions[r - 1], revisions[r])
    trees = _trees(bag, setup, revisions)
    try:
        config = config_from_parameters(base)
    except ConfigError as exc:
        raise ReplayError(
            f"the recorded parameters (revision {first}) are invalid: {exc}"
        ) from exc
    return ConfigHistory(first, config, changes, trees, extra)


def play_journal(
    bag: str | Path,
    setup: NodeSetup,
    overrides: Mapping[str, Any] | None = None,
    what_if: bool = False,
    any_urdf: bool = False,
) -> Playback | None:
    """Play the bag's journal back (None when the bag has none).

    Args:
        bag: the bag.
        setup: topics, parameters and URDF
            (:func:`~itasc_ros.tools.replay.node_setup.load_setup`).
        overrides: live parameters changed on top of every recorded revision.
        what_if: an ideal robot follows the recomputed commands
            (:mod:`~itasc_ros.tools.replay.what_if`).
        any_urdf: use the setup's URDF whatever URDF the journal names (``--urdf`` given).

    Raises:
        ReplayError: a malformed journal, a recorded revision or URDF that is missing.
    """
    messages = journal_messages(bag, setup)
    if not messages:
        return None
    history = config_history(bag, setup, overrides)
    if any_urdf:
        history.trees = {0.0: _tree_maker(setup.urdf_xml)}
    first = next(iter(setup.pose_topics), None)
    playback = Playback(history, what_if, first)
    try:
        for data in messages:
            msg = decode(data)
            playback.feed(msg.sequence, msg.records)
    except (JournalError, ItascError) as exc:
        raise ReplayError(f"journal of {str(bag)!r}: {exc}") from exc
    return playback


def ticks_result(playback: Playback, joint_names: list[str]) -> ReplayResult:
    """The played-back ticks as a :class:`ReplayResult` (for metrics and plots)."""
    ticks = playback.ticks
    ctrl = playback.controller
    n = len(joint_names)
    k = len(ticks)
    eps = {r: playback.history.config(r).damping_epsilon for r in {t.revision for t in ticks}}

    def col(name: str) -> Array:
        return np.array([getattr(t, name) for t in ticks], dtype=float)

    return ReplayResult(
        joint_names=joint_names,
        t=col("t"),
        recorded=np.array([t.recorded for t in ticks], dtype=float).reshape(k, n),
        recomputed=np.array([t.recomputed for t in ticks], dtype=float).reshape(k, n),
        status=[t.replayed_status for t in ticks],
        sigma_min=col("sigma_min"),
        damping=col("damping"),
        velocity_scale=col("velocity_scale"),
        followed=col("followed"),
        locked=np.array([t.locked for t in ticks], dtype=np.int64),
        position_error=col("position_error"),
        rotation_error=col("rotation_error"),
        q=np.array([t.q for t in ticks], dtype=float).reshape(k, n),
        velocity_limits=ctrl.velocity_limits if ctrl is not None else np.full(n, np.inf),
        damping_epsilon=np.array([eps[t.revision] for t in ticks], dtype=float),
        rejections=playback.log.rejected,
        rejection_reasons=list(playback.log.problems[:5]),
        parameter_changes=list(playback.log.parameter_changes),
        inputs={"journal_ticks": k, "journal_snapshots": playback.log.snapshots},
    )


def setup_joints(setup: NodeSetup, playback: Playback | None) -> list[str]:
    """The commanded joints (of the played-back controller, else of the setup's URDF)."""
    if playback is not None and playback.controller is not None:
        return list(playback.controller.joint_names)
    return list(Controller(setup.tree(), setup.config).joint_names)


__all__ = [
    "config_history",
    "journal_messages",
    "play_journal",
    "setup_joints",
    "ticks_result",
]
