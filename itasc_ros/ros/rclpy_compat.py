"""The one place where rclpy's distributions differ for itasc_ros: Humble, Jazzy and Kilted.

Every private rclpy API the node uses (rcl's subscription and wait set, the start-up parameter
overrides), and every public one that not all three distributions have, is reached through this
module; nothing else in the package imports
``rclpy.impl``, ``rclpy._rclpy_pybind11``, ``rclpy.event_handler`` or ``rclpy.experimental``.
Each name chooses its path by what the installed rclpy offers (feature detection, never a
version number), once, when this module is imported:

=================================  ===============  ===============  ================
feature                            Humble (rclpy 3) Jazzy (rclpy 7)  Kilted (rclpy 9)
=================================  ===============  ===============  ================
rcl subscription, 4 arguments      yes              yes              yes (5th: None)
publisher ``matched`` events       no: polled       yes              yes
pre-set parameters callbacks       no: wrapped      yes              yes
``EventsExecutor``                 no: single       yes (7.1.4 on)   yes
messages numbered per publisher    no: unknown      no: unknown      yes
a reader's matched publishers      no: not watched  yes              yes
=================================  ===============  ===============  ================

Where a feature is missing the node does the same work another way: the journal's subscribers
are counted by polling (:meth:`~itasc_ros.ros.journal_publisher.JournalPublisher.
check_subscribers`, 10 Hz), the set-parameters entry points are wrapped so that the pre-set
callback still sees every request first, and the SingleThreadedExecutor spins. Where messages
carry no publisher id, the diagnostics say the count of inputs replaced before a tick took them
is unknown (:func:`~itasc_ros.ros.polled_reader.replaced_count`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter

try:  # Jazzy and newer: rclpy.event_handler, with the publisher's matched event
    from rclpy.event_handler import PublisherEventCallbacks
except ImportError:  # Humble: rclpy.qos_event, without matched events
    PublisherEventCallbacks = None  # type: ignore[assignment,misc]

try:  # Jazzy from rclpy 7.1.4, Kilted
    from rclpy.experimental import EventsExecutor as _EventsExecutor
except ImportError:  # Humble
    _EventsExecutor = None  # type: ignore[assignment]

#: rcl's exceptions (the pybind11 module's; on every distribution).
RCLError: type[Exception] = _rclpy.RCLError
RCLInvalidROSArgsError: type[Exception] = _rclpy.RCLInvalidROSArgsError
UnknownROSArgsError: type[Exception] = _rclpy.UnknownROSArgsError
RMWError: type[Exception] = _rclpy.RMWError

#: The publisher's ``matched`` event exists (Jazzy, Kilted); else subscribers are polled.
MATCHED_EVENTS: bool = PublisherEventCallbacks is not None
#: ``Node.add_pre_set_parameters_callback`` exists (Jazzy, Kilted).
PRE_SET_CALLBACKS: bool = hasattr(Node, "add_pre_set_parameters_callback")
#: ``rclpy.experimental.EventsExecutor`` exists (Jazzy from rclpy 7.1.4, Kilted).
EVENTS_EXECUTOR: bool = _EventsExecutor is not None


def features() -> dict[str, bool]:
    """What this rclpy offers, by the names of this module's flags (for logs and reports)."""
    return {
        "matched_events": MATCHED_EVENTS,
        "pre_set_parameters_callbacks": PRE_SET_CALLBACKS,
        "events_executor": EVENTS_EXECUTOR,
    }


def rcl_subscription(node: Node, msg_type: type, topic: str, qos: Any) -> Any:
    """An rcl subscription on ``node``'s handle that no executor sees (for a polled reader).

    Humble and Jazzy take four arguments, Kilted a fifth (content filter options) that defaults
    to None: the four are given on all three.

    Args:
        node: the node (its handle is held while the subscription is made).
        msg_type: the message class (its type support imported).
        topic: the topic name, resolved and remapped as the node's own.
        qos: an ``rclpy.qos.QoSProfile``.

    Returns:
        ``_rclpy.Subscription``: ``take_message(msg_type, raw)``, ``get_topic_name()``,
        ``destroy_when_not_in_use()``.
    """
    with node.handle:
        return _rclpy.Subscription(node.handle, msg_type, topic, qos.get_c_qos_profile())


def matched_publishers(subscription: Any) -> int | None:
    """The publishers DDS matched with an rcl subscription (None on Humble: not offered)."""
    count = getattr(subscription, "get_publisher_count", None)
    return None if count is None else int(count())


def guard_condition(context: Any) -> Any:
    """An rcl guard condition of ``context`` (``trigger_guard_condition()``)."""
    return _rclpy.GuardCondition(context.handle)


def wait_set(subscriptions: int, guard_conditions: int, context: Any) -> Any:
    """An rcl wait set with room for ``subscriptions`` and ``guard_conditions`` (no others)."""
    return _rclpy.WaitSet(subscriptions, guard_conditions, 0, 0, 0, 0, context.handle)


def matched_callbacks(on_matched: Callable[[Any], None]) -> Any:
    """Publisher event callbacks calling ``on_matched(info)`` (``info.current_count``).

    Returns:
        ``PublisherEventCallbacks(matched=on_matched)``, or None where rclpy has no matched
        events (Humble): the caller then polls ``get_subscription_count()``.
    """
    if PublisherEventCallbacks is None:
        return None
    return PublisherEventCallbacks(matched=on_matched)


PreSetCallback = Callable[[list[Parameter]], list[Parameter]]


def add_pre_set_parameters_callback(node: Node, callback: PreSetCallback) -> None:
    """Have ``callback`` see (and may rewrite) every set-parameters request before rclpy does.

    Jazzy and Kilted call it themselves. On Humble both set-parameters services call
    ``node.set_parameters_atomically`` and a program may call ``node.set_parameters``: these
    two entry points of ``node`` are wrapped so that the callback runs first, once per request.

    Args:
        node: the node.
        callback: takes the requested parameters and returns those to set.
    """
    if PRE_SET_CALLBACKS:
        node.add_pre_set_parameters_callback(callback)
        return
    for name in ("set_parameters", "set_parameters_atomically"):
        setattr(node, name, _before(getattr(node, name), callback))


def _before(method: Callable[..., Any], callback: PreSetCallback) -> Callable[..., Any]:
    """``method(params)`` with ``params`` passed through ``callback`` first."""

    @functools.wraps(method)
    def wrapped(parameter_list: list[Parameter], *args: Any, **kwargs: Any) -> Any:
        return method(callback(list(parameter_list)), *args, **kwargs)

    return wrapped


def parameter_overrides(node: Node) -> dict[str, Parameter]:
    """The parameter values ``node`` was started with, by name (a copy).

    ``--ros-args -p``, parameters files and the constructor's ``parameter_overrides``: what
    ``declare_parameter`` takes instead of a default. rclpy keeps them in a private attribute of
    the node (``_parameter_overrides``, on every distribution) and has no public getter.
    """
    return dict(getattr(node, "_parameter_overrides", None) or {})


def set_parameter_overrides(node: Node, overrides: dict[str, Parameter]) -> None:
    """Replace the values ``node`` was started with (see :func:`parameter_overrides`).

    The parameters declared from now on take these instead of their defaults.
    """
    node._parameter_overrides = overrides


def events_executor(context: Any) -> Any:
    """The EventsExecutor of rclpy for ``context``, or None where rclpy has none (Humble)."""
    if _EventsExecutor is None:
        return None
    return _EventsExecutor(context=context)


__all__ = [
    "EVENTS_EXECUTOR",
    "MATCHED_EVENTS",
    "PRE_SET_CALLBACKS",
    "RCLError",
    "RCLInvalidROSArgsError",
    "RMWError",
    "UnknownROSArgsError",
    "add_pre_set_parameters_callback",
    "events_executor",
    "features",
    "guard_condition",
    "matched_callbacks",
    "matched_publishers",
    "parameter_overrides",
    "rcl_subscription",
    "set_parameter_overrides",
    "wait_set",
]
