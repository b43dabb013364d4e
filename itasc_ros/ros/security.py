"""Whether DDS Security (SROS2) protects the node: one start-up log line that says so.

Who may publish targets, jog the arm or call ``~/enable`` is decided by DDS Security: with
``ROS_SECURITY_ENABLE=true``, a keystore (``ROS_SECURITY_KEYSTORE``) and the node's enclave
(``--ros-args --enclave /itasc_node``, or ``ROS_SECURITY_ENCLAVE_OVERRIDE``), only participants
whose permissions allow it can. With the ``Permissive`` strategy (the default) a node whose
enclave has no keys starts anyway, *without* security, and nothing says so; ``Enforce`` refuses
to start instead. This module reads those settings (and whether the enclave's files exist) so
that the node logs which case it is in; the getting-started page's "Who may command the robot"
section says how to set it up.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from .ros_args import ros_flag_values

#: Files an SROS2 enclave holds (``ros2 security create_enclave``).
ENCLAVE_FILES = ("cert.pem", "key.pem", "governance.p7s", "permissions.p7s")


def enclave_of(argv: Sequence[str], env: Mapping[str, str]) -> str:
    """The node's enclave name.

    ``ROS_SECURITY_ENCLAVE_OVERRIDE``, else ``--enclave`` / ``-e`` among the ``--ros-args``,
    else ``/`` (rcl's default).
    """
    override = env.get("ROS_SECURITY_ENCLAVE_OVERRIDE", "")
    if override:
        return override
    given = ros_flag_values(argv, ("--enclave", "-e"))
    return given[0] if given else "/"


def security_summary(argv: Sequence[str], env: Mapping[str, str]) -> tuple[int, str]:
    """(logging level, one line) saying whether DDS Security protects the node.

    Args:
        argv: the node's command line (its ``--ros-args``).
        env: its environment.
    """
    if env.get("ROS_SECURITY_ENABLE", "").lower() != "true":
        return logging.INFO, (
            "DDS Security: off (ROS_SECURITY_ENABLE is not 'true'): any participant on this "
            "ROS domain can publish targets and call ~/enable"
        )
    strategy = env.get("ROS_SECURITY_STRATEGY", "") or "Permissive"
    keystore = env.get("ROS_SECURITY_KEYSTORE", "")
    enclave = enclave_of(argv, env)
    folder = Path(keystore) / "enclaves" / enclave.lstrip("/") if keystore else None
    missing = (
        ["ROS_SECURITY_KEYSTORE"]
        if folder is None
        else [f for f in ENCLAVE_FILES if not (folder / f).is_file()]
    )
    where = f"keystore {keystore or '(none)'!r}, enclave {enclave!r}"
    if strategy != "Enforce":
        if missing:
            return logging.WARNING, (
                f"DDS Security: strategy {strategy} and the enclave lacks "
                f"{', '.join(missing)} ({where}): the node runs WITHOUT security; set "
                "ROS_SECURITY_STRATEGY=Enforce to refuse to start instead"
            )
        return logging.WARNING, (
            f"DDS Security: on, strategy {strategy} ({where}): a missing or broken enclave "
            "would run unsecured; set ROS_SECURITY_STRATEGY=Enforce"
        )
    return logging.INFO, f"DDS Security: on, enforced ({where})"


def log_security(logger: object, argv: Sequence[str] | None = None) -> None:
    """Log :func:`security_summary` of this process on ``logger`` (an rclpy logger)."""
    import sys

    level, text = security_summary(sys.argv if argv is None else argv, os.environ)
    if level >= logging.WARNING:
        logger.warning(text)  # type: ignore[attr-defined]
    else:
        logger.info(text)  # type: ignore[attr-defined]


__all__ = ["ENCLAVE_FILES", "enclave_of", "log_security", "security_summary"]
