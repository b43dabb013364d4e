"""rclpy as ROS 2 Humble presents it: what Humble's rclpy (3.3) lacks is taken away.

PyPI has no Humble wheels, so the Humble paths of :mod:`itasc_ros.ros.rclpy_compat` are tested
on the installed rclpy with Humble's API surface: :func:`apply`, before anything imports
``itasc_ros.ros``, removes what ros2/rclpy's ``humble`` branch does not have:

- ``rclpy.event_handler`` (Humble has ``rclpy.qos_event``, without the publisher's ``matched``
  event) and ``rclpy.experimental`` (no EventsExecutor) cannot be imported;
- ``Node`` has no pre-set and post-set parameters callbacks (only
  ``add_on_set_parameters_callback``);
- an rcl subscription takes exactly four arguments (Kilted's fifth, the content filter's
  options, does not exist).

Run as a script, it starts ``itasc_node`` with that surface: ``python humble_surface.py
--ros-args ...``.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

#: Modules Humble's rclpy does not have.
ABSENT_MODULES = (
    "rclpy.event_handler",
    "rclpy.experimental",
    "rclpy.experimental.events_executor",
)
#: Methods of ``rclpy.node.Node`` Humble's does not have.
ABSENT_NODE_METHODS = (
    "add_pre_set_parameters_callback",
    "remove_pre_set_parameters_callback",
    "add_post_set_parameters_callback",
    "remove_post_set_parameters_callback",
)


def apply(patch: pytest.MonkeyPatch | None = None) -> None:
    """Present Humble's rclpy API surface in this process (see the module).

    Args:
        patch: makes the changes (a test's ``monkeypatch`` undoes them after the test); None:
            for the rest of the process.
    """
    import rclpy
    import rclpy.node
    from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

    mp = patch or pytest.MonkeyPatch()
    for name in ABSENT_MODULES:
        mp.setitem(sys.modules, name, None)  # import raises ImportError
    mp.delattr(rclpy, "experimental", raising=False)
    for name in ABSENT_NODE_METHODS:
        mp.delattr(rclpy.node.Node, name, raising=False)
    real = _rclpy.Subscription

    class Subscription(real):  # type: ignore[misc,valid-type]
        """Humble's constructor for everyone but rclpy itself: (node, msg_type, topic, qos)."""

        def __init__(self, *args: Any) -> None:
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if len(args) != 4 and not caller.startswith("rclpy."):
                raise TypeError(
                    f"Humble's Subscription takes 4 arguments, {caller} gave {len(args)}"
                )
            super().__init__(*args)

        @property
        def get_publisher_count(self) -> Any:
            """Not in Humble's rcl subscription."""
            raise AttributeError("get_publisher_count")

    mp.setattr(_rclpy, "Subscription", Subscription)


if __name__ == "__main__":
    apply()
    from itasc_ros.ros.node import main

    raise SystemExit(main(["itasc_node", *sys.argv[1:]]))
