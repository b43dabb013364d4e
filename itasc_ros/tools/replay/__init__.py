"""``itasc-replay``: replay a recorded bag through the controller, offline or online.

Offline (the default) is deterministic and needs no ROS graph (this path never imports rclpy). A
bag that holds the node's journal (``~/journal``, recorded by ``itasc-record`` and ``itasc-demo``
by default) is played back exactly: every input each tick consumed, with the node's own reception
times and header stamps, goes through the same :class:`~itasc_ros.core.Controller` calls in the
same order (:mod:`itasc_ros.core.control.playback`), with the configuration of each revision
(``~/parameters``). A bag without a journal is replayed in bag order (the recorder's order, not the
node's): figures, no exact comparison.

It prints metrics (tracking error, joint speeds, smallest singular value, limit hits) and
writes plots with ``--out``.

Parameters come from, in this order of precedence: ``--set KEY=VALUE`` (ROS names such as
``constraints.ee.gain=40``), ``--params-file`` (a ROS 2 params file such as config/panda.yaml),
the node's ``~/parameters`` in the bag, the snapshot on
:data:`~itasc_ros.tools.replay.recorded_parameters.PARAMS_TOPIC`. The URDF:
``--urdf`` (a file or a bundled robot name), else the parameters' ``robot_description`` or
``urdf_file`` (a bundled URDF is found by its file name when the path does not exist here).

``--compare`` matches every recorded command with a journal tick and recomputes it
(:mod:`~itasc_ros.tools.replay.compare`, default tolerance 1e-12 rad/s); it also reports the
tracking error (effector to target, RMS and max [mm]) of the recorded run and of the replayed
one (online: the fresh node's) over the ticks active in both, and fails when the RMS differ by
more than ``--tracking-tolerance`` [mm] (:mod:`~itasc_ros.tools.replay.tracking`).
``--set NAME=VALUE`` without ``--compare`` is a what-if (:mod:`~itasc_ros.tools.replay.what_if`).
``--online`` republishes the bag into a running node and records it anew
(:mod:`~itasc_ros.tools.replay.online`, the only module that uses rclpy).

Modules, from the bottom up:

* :mod:`~itasc_ros.tools.replay.errors`: :class:`ReplayError`.
* :mod:`~itasc_ros.tools.replay.recorded_parameters`: the node's parameters in a bag.
* :mod:`~itasc_ros.tools.replay.node_setup`: :class:`NodeSetup`, the recorded node's
  parameters, URDF and topics (:func:`load_setup`).
* :mod:`~itasc_ros.tools.replay.bag_events`: a bag's messages as replay events.
* :mod:`~itasc_ros.tools.replay.result`: :class:`ReplayResult`, a replay step by step.
* :mod:`~itasc_ros.tools.replay.journal_playback`: exact replay of the node's journal.
* :mod:`~itasc_ros.tools.replay.bag_order`: replay of a bag without a journal.
* :mod:`~itasc_ros.tools.replay.offline`: the offline replay (one or the other).
* :mod:`~itasc_ros.tools.replay.compare`: recorded commands against recomputed ones.
* :mod:`~itasc_ros.tools.replay.tracking`: tracking error of the recorded and replayed runs.
* :mod:`~itasc_ros.tools.replay.metrics`: figures of a replay.
* :mod:`~itasc_ros.tools.replay.report`: what is printed.
* :mod:`~itasc_ros.tools.replay.plots`: PNG plots.
* :mod:`~itasc_ros.tools.replay.what_if`: the recorded run against a what-if run.
* :mod:`~itasc_ros.tools.replay.online`: ``--online``.
* :mod:`~itasc_ros.tools.replay.arguments`: the command line and its checks.
* :mod:`~itasc_ros.tools.replay.cli`: the command's flow (:func:`main`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from itasc_ros.core.lazy import lazy_exports

if TYPE_CHECKING:
    from itasc_ros.tools.replay.arguments import (
        check_bag,
        load_with_overrides,
        parameter_names,
        parse_override,
    )
    from itasc_ros.tools.replay.bag_events import (
        bag_commands,
        bag_seconds,
        header_seconds,
        load_events,
    )
    from itasc_ros.tools.replay.bag_order import Replayer
    from itasc_ros.tools.replay.cli import main
    from itasc_ros.tools.replay.compare import (
        DEFAULT_TOLERANCE,
        CompareReport,
        Mismatch,
        align,
        compare_commands,
    )
    from itasc_ros.tools.replay.errors import ReplayError
    from itasc_ros.tools.replay.journal_playback import (
        config_history,
        journal_messages,
        play_journal,
        setup_joints,
        ticks_result,
    )
    from itasc_ros.tools.replay.metrics import replay_metrics
    from itasc_ros.tools.replay.node_setup import NodeSetup, load_setup
    from itasc_ros.tools.replay.online import (
        call_with_resends,
        fetch_node_parameters,
        replay_online,
    )
    from itasc_ros.tools.replay.plots import write_replay_plots, write_what_if_plots
    from itasc_ros.tools.replay.recorded_parameters import (
        NODE_DEFAULTS,
        PARAMETER_EVENTS_TOPIC,
        PARAMS_TOPIC,
        bag_parameters,
        is_live_parameter,
        live_changes,
        node_parameters,
        parameter_value,
        parameters_snapshot_msg,
        write_parameters_snapshot,
    )
    from itasc_ros.tools.replay.report import side_by_side
    from itasc_ros.tools.replay.result import ReplayResult
    from itasc_ros.tools.replay.tracking import (
        DEFAULT_TRACKING_TOLERANCE_MM,
        TrackingComparison,
        TrackingPair,
        stamp_offset,
        tracking_pair,
    )

#: Imported on first use: ``itasc-replay --help`` and a usage mistake import no replay.
__getattr__ = lazy_exports(
    __name__,
    {
        ".arguments": ["check_bag", "load_with_overrides", "parameter_names", "parse_override"],
        ".bag_events": ["bag_commands", "bag_seconds", "header_seconds", "load_events"],
        ".bag_order": ["Replayer"],
        ".cli": ["main"],
        ".compare": [
            "DEFAULT_TOLERANCE", "CompareReport", "Mismatch", "align", "compare_commands",
        ],
        ".errors": ["ReplayError"],
        ".journal_playback": [
            "config_history", "journal_messages", "play_journal", "setup_joints",
            "ticks_result",
        ],
        ".metrics": ["replay_metrics"],
        ".node_setup": ["NodeSetup", "load_setup"],
        ".online": ["call_with_resends", "fetch_node_parameters", "replay_online"],
        ".plots": ["write_replay_plots", "write_what_if_plots"],
        ".recorded_parameters": [
            "NODE_DEFAULTS", "PARAMETER_EVENTS_TOPIC", "PARAMS_TOPIC", "bag_parameters",
            "is_live_parameter", "live_changes", "node_parameters", "parameter_value",
            "parameters_snapshot_msg", "write_parameters_snapshot",
        ],
        ".report": ["side_by_side"],
        ".result": ["ReplayResult"],
        ".tracking": [
            "DEFAULT_TRACKING_TOLERANCE_MM", "TrackingComparison", "TrackingPair",
            "stamp_offset", "tracking_pair",
        ],
    },
)  # fmt: skip

__all__ = [
    "DEFAULT_TOLERANCE",
    "DEFAULT_TRACKING_TOLERANCE_MM",
    "NODE_DEFAULTS",
    "PARAMETER_EVENTS_TOPIC",
    "PARAMS_TOPIC",
    "CompareReport",
    "Mismatch",
    "NodeSetup",
    "ReplayError",
    "ReplayResult",
    "Replayer",
    "TrackingComparison",
    "TrackingPair",
    "align",
    "bag_commands",
    "bag_parameters",
    "bag_seconds",
    "call_with_resends",
    "check_bag",
    "compare_commands",
    "config_history",
    "fetch_node_parameters",
    "header_seconds",
    "is_live_parameter",
    "journal_messages",
    "live_changes",
    "load_events",
    "load_setup",
    "load_with_overrides",
    "main",
    "node_parameters",
    "parameter_names",
    "parameter_value",
    "parameters_snapshot_msg",
    "parse_override",
    "play_journal",
    "replay_metrics",
    "replay_online",
    "setup_joints",
    "side_by_side",
    "stamp_offset",
    "ticks_result",
    "tracking_pair",
    "write_parameters_snapshot",
    "write_replay_plots",
    "write_what_if_plots",
]
